"""What follows a stored result: the model card of the checkpoint it scored lists it, and the unit's trackers get it.

Called right after :func:`usebench.store.save_result` by `bench run`'s units and by `bench eval`. The checkpoint is
the scorer's ``path`` when that folder is an export of ours (it has ``method.json``): a unit's final stage, or a
checkpoint given to `bench eval --model`. Neither follow-up ever fails the evaluation: a problem is said and skipped.
"""
from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from usebench.run.manifest import unit_grid
from usebench.store import result_path
from usebench.train.model_card import add_result
from usebench.train.trackers import log_final, say


def result_saved(results_dir: str | Path, run_id: str, task: str, split: str,
                 record: dict[str, Any] | None = None) -> None:
    """Refresh the scored checkpoint's model card and log the scores to the unit's trackers; ``record``: the
    result as stored (:func:`usebench.store.stored_form`), when the caller kept it; else it is read back."""
    path = result_path(results_dir, run_id, task, split)
    if record is None:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
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
    """The `bench` command of the newest grid that lists ``run_id`` (its driver's command line, from the folder it was
    given in), or None."""
    grid = unit_grid(results_dir, run_id)
    argv = grid.get("argv") or []
    if len(argv) < 2:
        return None
    command = "bench " + " ".join(shlex.quote(str(a)) for a in argv[1:])
    return f"cd {shlex.quote(grid['cwd'])} && {command}" if grid.get("cwd") else command  # relative paths in argv
