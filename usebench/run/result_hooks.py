"""What follows a stored result: the model card of the checkpoint it scored lists it, and the unit's trackers get it.

Called right after :func:`usebench.store.save_result` by `bench run`'s units and by `bench eval`. The checkpoint is
the scorer's ``path`` when that folder is an export of ours (it has ``method.json``): a unit's final stage, or a
checkpoint given to `bench eval --model`. Neither follow-up ever fails the evaluation: a problem is said and skipped.
"""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from usebench.store.manifest import unit_grid
from usebench.errors import BenchError
from usebench.store import read_record, result_path
from usebench.train.model_card import add_result
from usebench.train.trackers import log_final, say


def result_saved(results_dir: str | Path, run_id: str, task: str, split: str,
                 record: dict[str, Any] | None = None) -> None:
    """Refresh the scored checkpoint's model card and log the scores to the unit's trackers; ``record``: the
    result as stored (:func:`usebench.store.stored_form`), when the caller kept it; else it is read back."""
    path = result_path(results_dir, run_id, task, split)
    if record is None:
        try:
            record = read_record(path)
        except (OSError, BenchError) as e:
            say(f"  {path}: cannot read the stored result back ({e}); its model card and trackers are not updated")
            return
    checkpoint = scored_checkpoint(record, Path(results_dir))
    if checkpoint is not None:
        try:
            add_result(checkpoint, path, grid_command(Path(results_dir), run_id))
        except Exception as e:  # noqa: BLE001  (a card never fails an evaluation)
            say(f"  {checkpoint}: could not refresh its model card ({type(e).__name__}: {e})")
    if checkpoint is not None and checkpoint.name == "checkpoint":
        log_final(checkpoint.parent, final_metrics(record))


def scored_checkpoint(record: dict[str, Any], results_dir: Path) -> Path | None:
    """The export of ours a result was computed from (None for a Hub model, BM25, word vectors, an API callable).
    A unit's records name its checkpoint by its place in the store (``.stages/<home>/checkpoint``), relative to
    ``results_dir``."""
    scorer = record.get("scorer") or {}
    where = scorer.get("path") or scorer.get("model")
    if not where or not isinstance(where, str):
        return None
    folder = Path(where) if Path(where).is_absolute() else Path(results_dir) / where
    if not folder.is_dir():
        folder = Path(where)  # `bench eval --model` given a relative path: the record keeps it as given
    return folder if (folder / "method.json").is_file() else None


def final_metrics(record: dict[str, Any]) -> dict[str, float]:
    """``<split>/<task>/<metric>`` for every score, and ``<split>/<task>/main`` for the main score."""
    task, split = record["task"]["name"], record["task"]["split"]
    out = {f"{split}/{task}/{k}": float(v) for k, v in record.get("scores", {}).items()
           if isinstance(v, (int, float)) and not isinstance(v, bool)}
    out[f"{split}/{task}/main"] = float(record["main_score"])
    return out


def grid_command(results_dir: Path, run_id: str) -> str | None:
    """The `bench` command of the newest grid that lists ``run_id`` (its driver's command line), shareable
    (:func:`shareable_command`), or None."""
    grid = unit_grid(results_dir, run_id)
    argv = grid.get("argv") or []
    if len(argv) < 2:
        return None
    return shareable_command([str(a) for a in argv[1:]], Path(grid["cwd"]) if grid.get("cwd") else None)


def shareable_command(args: list[str], cwd: Path | None) -> str:
    """``bench ARGS`` as another machine can run it: a path under the data root becomes ``$BENCH_DATA/...`` (and
    ``--data-root`` itself goes: ``$BENCH_DATA`` is its default), one under the folder the command ran in becomes
    relative to it (the repository's root, where `bench` is run), and any other absolute path relative to that folder
    too; no ``cd`` to this machine's folders."""
    import os

    root = _data_root(args)
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "--data-root" and i + 1 < len(args):
            skip = True
            continue
        key, sep, value = arg.partition("=")
        if sep and not key.startswith("/") and value.startswith("/"):  # --set model=/x, --input NAME=/x, --opt=/x
            shown = _portable(value, root, cwd, os.path.relpath)
            out.append(f"{key}={shown}" if not shown.startswith("$") else f"{key}=${{BENCH_DATA}}{shown[11:]}")
        else:
            out.append(_portable(arg, root, cwd, os.path.relpath) if arg.startswith("/") else arg)
    return "bench " + " ".join(f'"{a}"' if a.startswith("$BENCH_DATA") else shlex.quote(a) for a in out)


def _data_root(args: list[str]) -> Path | None:
    """The data root the command read: its ``--data-root``, else ``$BENCH_DATA``."""
    import os

    for i, arg in enumerate(args):
        if arg == "--data-root" and i + 1 < len(args):
            return Path(args[i + 1]).resolve()
        if arg.startswith("--data-root="):
            return Path(arg.split("=", 1)[1]).resolve()
    return Path(os.environ["BENCH_DATA"]).expanduser().resolve() if os.environ.get("BENCH_DATA") else None


def _portable(value: str, root: Path | None, cwd: Path | None, relpath: Any) -> str:
    path = Path(value).resolve()
    if root is not None and path.is_relative_to(root):
        rel = path.relative_to(root)
        return "$BENCH_DATA" + ("" if str(rel) == "." else f"/{rel}")
    return relpath(path, cwd) if cwd is not None else path.name
