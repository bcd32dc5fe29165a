"""The results store: one JSON per (run, task, split), written atomically; reports read only these files.

Layout: ``<results-dir>/<run_id>/<task>/<split>.json`` with run_id ``<method>__<model-slug>__<cfg8>__s<seed>``,
and beside it ``<split>.items.npz``, the per-item outcomes (usebench/eval/items.py) where the task stores them:
the record names the file with its sha256 (so the record's digest covers it). The items file is written first and
the record last, each atomically: a crash between the two leaves either no record or an older record whose items
hash no longer matches, which :func:`usebench.validity.items_reason` reports (the result is scored again).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from usebench import __version__
from usebench.errors import BenchError, NonFiniteScoreError

SCHEMA_VERSION = 1


def config_hash(config: dict[str, Any]) -> str:
    """Stable hash of a JSON-able config (key order does not matter)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def run_id(method: str, model_slug: str, config: dict[str, Any], seed: int) -> str:
    return f"{method}__{model_slug}__{config_hash(config)[:8]}__s{seed}"


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask (Linux: read from /proc, which does not change it; elsewhere set and restored)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def mkstemp_shared(dir: str | Path, prefix: str = "", suffix: str = ".tmp") -> tuple[int, str]:
    """``tempfile.mkstemp`` whose file gets the mode an ordinary ``open()`` would give (0666 minus the umask).

    mkstemp creates files 0600 whatever the umask; renamed into a shared results directory, data root or
    embedding cache such a file would be unreadable by the group that the umask means to let in.
    """
    fd, tmp = tempfile.mkstemp(dir=dir, prefix=prefix, suffix=suffix)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
    except BaseException:
        os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise
    return fd, tmp


def honour_umask(root: str | Path) -> None:
    """Give every file under ``root`` the mode an ordinary ``open()`` would (0666 minus the umask), folders
    0777 minus it: libraries that write through private temp files (safetensors weights are written 0600)
    would otherwise keep a shared checkpoint unreadable by the group."""
    mask = current_umask()
    root = Path(root)
    for p in [root, *root.rglob("*")]:
        if p.is_symlink():
            continue
        p.chmod((0o777 if p.is_dir() else 0o666) & ~mask)


def check_writable(directory: str | Path, what: str, option: str) -> Path:
    """Fail now, before any expensive work, if files cannot be written in ``directory``. Nothing is left
    behind: a folder that does not exist yet is not created, its nearest existing parent is tried instead.

    The error names the folder, the reason and the option that chooses another one.
    """
    directory = Path(directory)
    probe = directory
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        reason = f"{probe} is not a folder"
    else:
        try:  # a real write: permission bits, read-only mounts, quotas and root's exceptions all show here
            fd, tmp = tempfile.mkstemp(dir=probe, prefix=".usebench-write-test-")
            os.close(fd)
            os.unlink(tmp)
            return directory
        except OSError as e:
            reason = f"cannot write in {probe}: {e.strerror or e}"
    raise BenchError(f"{what} {directory} is not writable ({reason}); choose another with {option}")


def write_json_atomic(path: str | Path, payload: Any) -> Path:
    """Write JSON to a temp file in the same folder, fsync, then rename: readers never see half a file.
    The file gets the umask's mode (see :func:`mkstemp_shared`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = mkstemp_shared(path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2, sort_keys=True, default=_json_default)  # as stored_form reads it
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def stored_form(payload: Any) -> Any:
    """``payload`` as :func:`write_json_atomic` stores it and reading the file back would give it (keys sorted,
    numpy values and paths as JSON), without the write and the read: for a caller that keeps what it stored."""
    return json.loads(json.dumps(payload, sort_keys=True, default=_json_default))


def read_json(path: str | Path, default: Any = None) -> Any:
    """The JSON in ``path``, or ``default`` when there is none to read: the file is missing or unreadable, empty,
    not UTF-8, or half-written (a writer that is not :func:`write_json_atomic`, or one killed mid-write).

    For the files a reader may do without (usage, manifests, markers, caches, card indexes): the caller decides
    what a missing record means; a file whose absence is an error is read where its error can name it."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return default


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def result_path(results_dir: str | Path, run: str, task: str, split: str) -> Path:
    return Path(results_dir) / run / task / f"{split}.json"


ITEMS_SUFFIX = ".items.npz"  # <split>.items.npz beside <split>.json (not *.json: the store's globs never read it)


def items_path(record_path: str | Path) -> Path:
    """The per-item outcomes file beside the record at ``record_path``."""
    record_path = Path(record_path)
    return record_path.with_name(record_path.name.removesuffix(".json") + ITEMS_SUFFIX)


def write_bytes_atomic(path: str | Path, payload: bytes) -> Path:
    """Write bytes to a temp file in the same folder, fsync, then rename (see :func:`write_json_atomic`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = mkstemp_shared(path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def check_finite_main_score(record: dict[str, Any]) -> None:
    """A result whose main score is NaN, infinite or not a number is an error, never a stored number."""
    value = record.get("main_score")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        task = record.get("task", {})
        raise NonFiniteScoreError(
            f"{task.get('name')} ({task.get('split')}): main score {record.get('main_metric')} = {value!r} is not a "
            f"finite number; nothing was stored for run {record.get('run_id')} (a degenerate encoder output or "
            "an invalid option produces this: check --batch-size, --max-length and the model)")


def save_result(results_dir: str | Path, record: dict[str, Any], items: bytes | None = None) -> Path:
    """Write one result record (see :func:`make_record`) to its place in the store, its per-item outcomes file
    (``items``, the bytes the record's ``items.sha256`` names) first; a non-finite main score raises
    :class:`~usebench.errors.NonFiniteScoreError` and writes nothing."""
    check_finite_main_score(record)
    path = result_path(results_dir, record["run_id"], record["task"]["name"], record["task"]["split"])
    named = record.get("items")
    if (named is None) != (items is None):
        raise BenchError(f"{path}: a record names a per-item file exactly when its bytes are given "
                         f"(record: {'none' if named is None else named.get('file')}; bytes: "
                         f"{'none' if items is None else len(items)})")
    if items is not None:
        if hashlib.sha256(items).hexdigest() != named["sha256"] or named["file"] != items_path(path).name:
            raise BenchError(f"{path}: the per-item bytes are not the file the record names ({named['file']})")
        write_bytes_atomic(items_path(path), items)
    else:
        items_path(path).unlink(missing_ok=True)  # an older result's items: no part of this record
    return write_json_atomic(path, record)


def make_record(
    *, run: str, task: dict[str, Any], method: dict[str, Any], seed: int, scores: dict[str, float],
    main_metric: str, subsets: dict[str, dict[str, float]], scorer: dict[str, Any], timings: dict[str, float],
    config: dict[str, Any], items: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A result in the schema of DESIGN.md (scores unrounded, 0-1). ``items``: the per-item outcomes file beside
    it (``{"file", "sha256", "n", "bytes"}``), part of the digest; None: the task stores none."""
    if main_metric not in scores:
        raise BenchError(f"main metric {main_metric!r} missing from scores {sorted(scores)}")
    record = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run,
        "task": task,
        "method": method,
        "seed": seed,
        "scores": scores,
        "main_metric": main_metric,
        "main_score": scores[main_metric],
        "subsets": subsets,
        "scorer": scorer,
        "timings": timings,
        "config": config,
        "config_hash": config_hash(config),
        "suite_version": __version__,
        "git_sha": git_sha(),
        "created_at": now_iso(),
    }
    if items is not None:
        record["items"] = dict(items)
    check_finite_main_score(record)
    record[DIGEST_KEY] = record_digest(record)  # a record edited afterwards no longer holds (usebench.validity)
    return record


DIGEST_KEY = "digest"  # a record's sha256 without this key: one edited after it was written no longer holds


def record_digest(record: dict[str, Any]) -> str:
    """sha256 of a record as the store writes it (keys sorted, numpy scalars as numbers), its digest left out."""
    body = {k: v for k, v in record.items() if k != DIGEST_KEY}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=_digest_default).encode()).hexdigest()


def _digest_default(obj: Any) -> Any:
    return obj.item() if hasattr(obj, "item") else str(obj)


@dataclass(frozen=True)
class StoredResult:
    path: Path
    record: dict[str, Any]

    @property
    def task(self) -> str:
        return self.record["task"]["name"]

    @property
    def split(self) -> str:
        return self.record["task"]["split"]


# Folders of a run directory that hold model files, not results (usebench/train/loop.py writes them).
MODEL_DIRS = frozenset({"checkpoint", "train_state", "dev_best"})


MTEB_PREFIX, MTEB_META = "USEB-", "model_meta.json"  # mteb.evaluate's files in a cache's results/<model>/<revision>/


def iter_results(results_dir: str | Path) -> Iterator[StoredResult]:
    """Every result file in the store; a corrupt file is an error naming it (never silently skipped). Hidden
    folders (``.launch/``: the launchers' state) hold no results, nor does a store nested in this one (a folder
    with its own :data:`STORE_MARKER`: ``results/laptop`` inside the default store ``results/``)."""
    root = Path(results_dir)
    nested = nested_stores(root)
    for path in sorted(root.glob("*/*/*.json")):
        # hidden folders hold no results: .launch/ (launchers' state), a run's .dev_probe/ (an export mid-run)
        parts = path.relative_to(root).parts
        if path.parent.name in MODEL_DIRS or any(p.startswith(".") for p in parts[:2]) or parts[0] in nested:
            continue
        if path.name.startswith(MTEB_PREFIX) or (path.parent / MTEB_META).is_file():
            continue  # an MTEB model folder (usebench/mteb/results.py reads its files of the USEB tasks)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise BenchError(f"{path}:{e.lineno}: corrupt result file ({e.msg}); delete it and re-run") from None
        if not isinstance(record, dict) or record.get("schema_version") != SCHEMA_VERSION:
            raise BenchError(f"{path}: not a usebench result (schema_version {SCHEMA_VERSION} expected)"
                             + _nested_hint(root, parts))
        try:
            check_finite_main_score(record)
        except NonFiniteScoreError:
            raise BenchError(f"{path}: stored main score {record.get('main_score')!r} is not a finite number "
                             "(written before usebench refused such results); delete it and re-run") from None
        yield StoredResult(path, record)


RUN_FILES = frozenset({"config.json", "env.json", "method.json", "usage.json", "stages.json", "failed.json"})


def _nested_hint(root: Path, parts: tuple[str, ...]) -> str:
    """Where a run directory's own file sits where a result should: the folder above it is a store nested in
    ``root`` without its marker (written before stores had one)."""
    if parts[-1] not in RUN_FILES:
        return ""
    return (f"; {root / parts[0]} looks like a results store of its own (its folders are run directories): add its marker, "
            f"{STORE_MARKER} holding {{\"usebench_store\": {STORE_FORMAT}, \"committed\": false}}, or move it out of "
            f"{root}")


# --- what a store is: the marker at its root -----------------------------------------------------------------------

STORE_MARKER = ".usebench-store.json"  # at a store's root: {"usebench_store": 1, "committed": bool, "about": ...}
STORE_FORMAT = 1


def store_marker(root: str | Path) -> dict[str, Any] | None:
    """The marker at ``root`` (None: ``root`` holds none, or one that is not a usebench store's)."""
    marker = read_json(Path(root) / STORE_MARKER)
    return marker if isinstance(marker, dict) and marker.get("usebench_store") == STORE_FORMAT else None


def nested_stores(root: str | Path) -> frozenset[str]:
    """The folders directly under ``root`` that are stores of their own (they hold a marker): never a run
    directory of ``root``, never read as its results."""
    root = Path(root)
    if not root.is_dir():
        return frozenset()
    return frozenset(p.name for p in root.iterdir() if p.is_dir() and (p / STORE_MARKER).is_file())


def committed_store(path: str | Path) -> Path | None:
    """The committed store that ``path`` is, or lies in (its marker says ``committed``), else None."""
    here = Path(path).resolve()
    for folder in (here, *here.parents):
        marker = store_marker(folder)
        if marker is not None and marker.get("committed") is True:
            return folder
    return None


def check_store_target(results_dir: str | Path, named: bool, command: str) -> Path:
    """Before ``command`` writes into ``results_dir``: a committed store (or a folder inside one) is refused unless the
    user named it (``--results-dir``). Nothing is written. Returns ``results_dir``."""
    results_dir = Path(results_dir)
    committed = committed_store(results_dir)
    if committed is not None and not named:
        about = (store_marker(committed) or {}).get("about", "")
        raise BenchError(
            f"{results_dir} is in the committed store {committed}" + (f" ({about})" if about else "") + f": {command} "
            "does not write into it by default; write your results elsewhere (--results-dir DIR), or name the store "
            "itself with --results-dir to write into it on purpose")
    return results_dir


def mark_store(results_dir: str | Path) -> None:
    """Give a store without a marker an uncommitted one, so a store nested in another is told apart from a run
    directory by content (a folder inside a committed store is that store's: it gets none)."""
    results_dir = Path(results_dir)
    if store_marker(results_dir) is None and committed_store(results_dir) is None:
        write_json_atomic(results_dir / STORE_MARKER, {"usebench_store": STORE_FORMAT, "committed": False,
                                                       "about": "a results store written by usebench"})


def claim_store(results_dir: str | Path, named: bool, command: str) -> Path:
    """:func:`check_store_target`, then the folder checked writable (an error naming ``--results-dir``) and marked
    (:func:`mark_store`): for a command whose options are all checked and which writes next. Returns it."""
    check_store_target(results_dir, named, command)
    check_writable(results_dir, "results directory", "--results-dir")
    mark_store(results_dir)
    return Path(results_dir)
