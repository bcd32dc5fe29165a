"""What `bench run --force` and `--reevaluate TASKS` remove from the store, said before they remove it.

``--force`` retrains the named units: new weights change every score, so every result stored in a reset run
directory goes (none can be kept), and the run says which, marking those this command does not evaluate again.
``--reevaluate`` keeps a finished unit's checkpoint and removes only the named tasks' results, so the ordinary
rule (a missing result is scored from the finished checkpoint, never retrained) scores them again into the same
run directory.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from usebench.errors import ConfigError
from usebench.store.locks import UnitLock, UnitLockedError
from usebench.store import MODEL_DIRS, items_path, result_path

Say = Callable[[str], None]


def stored_results(run_dir: Path) -> list[str]:
    """``task/split`` of every result stored in ``run_dir`` (model folders and hidden ones hold none)."""
    if not run_dir.is_dir():
        return []
    return sorted(f"{p.parent.name}/{p.stem}" for p in run_dir.glob("*/*.json")
                  if p.parent.name not in MODEL_DIRS and not p.parent.name.startswith("."))


def say_force_drops(run_dir: Path, evaluated: Iterable[str], say: Say) -> None:
    """One line naming the results ``--force`` deletes with ``run_dir``; those of tasks this command does not
    evaluate are gone for good (until a run names them again)."""
    stored = stored_results(run_dir)
    if not stored:
        return
    evaluated = set(evaluated)
    lost = [r for r in stored if r.split("/", 1)[0] not in evaluated]
    tail = f"; not evaluated by this command, so gone: {', '.join(lost)}" if lost else ""
    say(f"--force: {run_dir.name}: retraining drops its {len(stored)} stored result(s) {', '.join(stored)} (new "
        f"weights change every score: none is kept){tail}")


def check_reevaluate(tasks: Sequence[str], units: Sequence[Any], force: bool) -> None:
    """``--reevaluate`` names tasks the plan's units evaluate, and is not combined with ``--force``."""
    if force:
        raise ConfigError("--reevaluate re-scores finished units from their checkpoints; --force retrains them and "
                          "scores every task again: give one of the two")
    evaluated = {t for u in units for t in u.evals}
    unknown = [t for t in tasks if t not in evaluated]
    if unknown and units:
        raise ConfigError(f"--reevaluate {','.join(unknown)}: no unit of this run evaluates "
                          f"{'it' if len(unknown) == 1 else 'them'} (they evaluate: {', '.join(sorted(evaluated))})")


def reevaluate_reset(units: Sequence[Any], tasks: Sequence[str], results_dir: Path, say: Say) -> None:
    """Remove the stored results of ``tasks`` from every finished unit (each said), under the unit's lock; a
    unit another process holds is left as it is (said). Units not trained yet have nothing to re-score."""
    waiting = 0
    for unit in units:
        run_dir = Path(results_dir) / unit.run_id
        if not (run_dir / "method.json").is_file():
            waiting += 1
            continue
        try:
            with UnitLock(run_dir):
                for task in (t for t in tasks if t in unit.evals):
                    _drop(run_dir, unit, task, results_dir, say)
        except UnitLockedError as e:
            say(f"--reevaluate: {unit.run_id} left as it is: {e}")
    if waiting:
        say(f"--reevaluate: {waiting} unit(s) not trained yet: they score every task once they are")


def _drop(run_dir: Path, unit: Any, task: str, results_dir: Path, say: Say) -> None:
    for split in sorted({unit.split, "test"}):
        path = result_path(results_dir, unit.run_id, task, split)
        if path.is_file():
            path.unlink()  # the record first: a crash after it leaves only items that no record names
            items_path(path).unlink(missing_ok=True)
            say(f"--reevaluate: {run_dir.name}: {task}/{split} removed; it is scored again from the checkpoint")
