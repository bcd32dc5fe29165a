"""Result records: one JSON per (run, task, split), written atomically; reports read only these files.

Layout: ``<results-dir>/<run_id>/<task>/<split>.json`` with run_id ``<method>__<model-slug>__<cfg8>__s<seed>``,
and beside it ``<split>.items.npz``, the per-item outcomes (usebench/eval/items.py) where the task stores them:
the record names the file with its sha256 (so the record's digest covers it). The items file is written first and
the record last, each atomically: a crash between the two leaves either no record or an older record whose items
hash no longer matches, which :func:`usebench.store.validity.items_reason` reports (the result is scored again).
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from usebench._version import __version__
from usebench.errors import BenchError, NonFiniteScoreError
from usebench.store.files import git_sha, now_iso, write_bytes_atomic, write_json_atomic
from usebench.store.marker import STORE_FORMAT, STORE_MARKER, nested_stores

SCHEMA_VERSION = 1


def config_hash(config: dict[str, Any]) -> str:
    """Stable hash of a JSON-able config (key order does not matter)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def run_id(method: str, model_slug: str, config: dict[str, Any], seed: int) -> str:
    return f"{method}__{model_slug}__{config_hash(config)[:8]}__s{seed}"


def model_slug(name: str) -> str:
    """Filesystem-safe short name for run ids: ``minilm``, ``bert-base-uncased``, ``my-ckpt``."""
    base = Path(name).name if Path(name).exists() else name.replace("/", "-")
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in base)[:48] or "model"


def result_path(results_dir: str | Path, run: str, task: str, split: str) -> Path:
    return Path(results_dir) / run / task / f"{split}.json"


ITEMS_SUFFIX = ".items.npz"  # <split>.items.npz beside <split>.json (not *.json: the store's globs never read it)


def items_path(record_path: str | Path) -> Path:
    """The per-item outcomes file beside the record at ``record_path``."""
    record_path = Path(record_path)
    return record_path.with_name(record_path.name.removesuffix(".json") + ITEMS_SUFFIX)


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
    record[DIGEST_KEY] = record_digest(record)  # a record edited afterwards no longer holds (usebench.store.validity)
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
            continue  # an MTEB model folder (usebench/store/mteb_results.py reads its files of the USEB tasks)
        record = read_record(path, hint=_nested_hint(root, parts))
        try:
            check_finite_main_score(record)
        except NonFiniteScoreError:
            raise BenchError(f"{path}: stored main score {record.get('main_score')!r} is not a finite number "
                             "(written before usebench refused such results); delete it and re-run") from None
        yield StoredResult(path, record)


def read_record(path: Path, hint: str = "") -> dict[str, Any]:
    """The result record stored at ``path``; a corrupt file or one that is no usebench result is a
    :class:`BenchError` naming the file (and ``hint``: where such a file should be instead)."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BenchError(f"{path}:{e.lineno}: corrupt result file ({e.msg}); delete it and re-run") from None
    if not isinstance(record, dict) or record.get("schema_version") != SCHEMA_VERSION:
        raise BenchError(f"{path}: not a usebench result (schema_version {SCHEMA_VERSION} expected)" + hint)
    return record


RUN_FILES = frozenset({"config.json", "env.json", "method.json", "usage.json", "stages.json", "failed.json"})


def _nested_hint(root: Path, parts: tuple[str, ...]) -> str:
    """Where a run directory's own file sits where a result should: the folder above it is a store nested in
    ``root`` without its marker (written before stores had one)."""
    if parts[-1] not in RUN_FILES:
        return ""
    return (f"; {root / parts[0]} looks like a results store of its own (its folders are run directories): add its marker, "
            f"{STORE_MARKER} holding {{\"usebench_store\": {STORE_FORMAT}, \"committed\": false}}, or move it out of "
            f"{root}")
