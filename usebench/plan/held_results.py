"""Which of a unit's results still hold, read from the store and the data root before anything runs.

One generator, :func:`result_targets`, answers it for every path that asks: the launchers' "already done"
(:func:`finished_unit`), the dry run's rescore lines (:func:`unit_gaps`) and a running unit's evaluation
(usebench/run/unit.py), so they never disagree. Per task the unit evaluates it settles the split (a task without it
is skipped, an error with ``--strict``), the data's sha256 in the data root (missing data are skipped with the
command that fetches them; with ``--strict`` the unit runs and fails loudly), the result's path and whether the
result stored there holds (:func:`usebench.store.validity.path_stale_reason`).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.errors import MissingDataError
from usebench.plan.specs import UnitSpec, task_split
from usebench.registry import TASKS
from usebench.store.locks import LOCK_FILE
from usebench.store.records import result_path
from usebench.store.unit_files import FAILED_FILE, UNIT_LOG
from usebench.store.unit_state import UnitResult
from usebench.store.validity import Expected, expected_result, gap_line, path_stale_reason

# The data sha256 of (task, split) in the data root, or the error saying they are missing: computed once per command.
DataHashes = dict[tuple[str, str], "str | MissingDataError"]
MISSING_STRICT = "its data are missing (--strict)"


@dataclass(frozen=True)
class ResultTarget:
    """One result a unit evaluates: its task, split, data sha256 now (None: missing, under ``--strict``), the path
    it is stored at, and why the result stored there does not hold (None: it holds)."""

    task: str
    split: str
    sha: str | None
    path: Path
    reason: str | None
    missing: MissingDataError | None = None  # the data error behind MISSING_STRICT


def result_targets(spec: UnitSpec, data_root: str | Path, results_dir: str | Path, result: UnitResult,
                   hashes: DataHashes | None = None) -> Iterator[ResultTarget]:
    """Each result of ``spec`` whose task has the split and whose data are here (or ``--strict``), with whether the
    stored one holds; a task without the split or the data is recorded as skipped in ``result``. ``hashes``: the data
    sha256 already computed by this command (filled as it goes; None: hash afresh)."""
    hashes = {} if hashes is None else hashes
    for name in spec.evals:
        task = TASKS.get(name)
        split = evaluable_split(spec, name, task, result)
        if split is None:
            continue
        if (name, split) not in hashes:
            try:
                hashes[name, split] = task.data_sha256(Path(data_root), split)
            except MissingDataError as e:
                hashes[name, split] = e
        sha = hashes[name, split]
        path = result_path(results_dir, spec.run_id, name, split)
        if isinstance(sha, MissingDataError):
            if spec.strict:  # the unit runs, and its evaluation fails loudly
                yield ResultTarget(name, split, None, path, MISSING_STRICT, sha)
            else:
                result.skipped.append((name, str(sha)))
            continue
        yield ResultTarget(name, split, sha, path, path_stale_reason(path, expected(spec, name, split, sha)))


def expected(spec: UnitSpec, task: str, split: str, sha: str | None) -> Expected:
    """What a result of the unit must match (:mod:`usebench.store.validity`): the task now, the unit's config."""
    return expected_result(task, split, sha, config=spec.config)


def evaluable_split(spec: UnitSpec, name: str, task: Any, result: UnitResult) -> str | None:
    """:func:`task_split`, or None after recording the skip when the task has no such split (``--strict``: the split
    is returned, and evaluating it fails loudly)."""
    split = task_split(spec, task)
    if split not in task.splits and not spec.strict:
        result.skipped.append((name, f"task {name!r} has no {split!r} split (it has: {', '.join(task.splits)})"))
        return None
    return split


def finished_unit(spec: UnitSpec, data_root: str | Path, results_dir: str | Path,
                  data_hashes: DataHashes | None = None) -> UnitResult | None:
    """The unit's stored outcome when there is nothing left to do, else None (:func:`unit_gaps` says why).
    Launchers hand out only units for which this is None, so re-running a command runs only what is missing."""
    done, _gaps = unit_gaps(spec, data_root, results_dir, data_hashes)
    return done


def unit_gaps(spec: UnitSpec, data_root: str | Path, results_dir: str | Path,
              data_hashes: DataHashes | None = None) -> tuple[UnitResult | None, list[str]]:
    """(the unit's stored outcome, []) when it is trained, not failed, not held by a process, and every result
    it evaluates still holds (:mod:`usebench.store.validity`); else (None, one line per task to score again from the
    finished checkpoint; empty when the unit must run anyway: forced, not trained, failed or held). A task whose data
    are not in the data root counts as done until they appear (its skip is in the outcome, with the command that
    fetches them)."""
    result, stale = stale_results(spec, data_root, results_dir, data_hashes)
    gaps = [gap_line(name, split, reason) for name, split, reason in stale]
    return (None, gaps) if gaps or result is None else (result, [])


def stale_results(spec: UnitSpec, data_root: str | Path, results_dir: str | Path,
                  data_hashes: DataHashes | None = None) -> tuple[UnitResult | None, list[tuple[str, str, str]]]:
    """(the unit's stored outcome so far, (task, split, why) of each result to score again); (None, []) when the
    unit must run anyway (forced, not trained, failed or held). :func:`unit_gaps` in words."""
    run_dir = Path(results_dir) / spec.run_id
    if run_gap(spec, run_dir):
        return None, []
    result = UnitResult(spec.run_id, run_dir, spec.row, training=["done earlier"], log=run_dir / UNIT_LOG)
    hashes = {} if data_hashes is None else data_hashes
    stale = []
    for target in result_targets(spec, data_root, results_dir, result, hashes):
        if target.reason is not None:
            stale.append((target.task, target.split, target.reason))
        else:
            result.results.append((target.task, target.path))
    return result, stale


def run_gap(spec: UnitSpec, run_dir: Path) -> str | None:
    """Why the unit must run whatever its results say (forced, not trained, failed, held), or None."""
    if spec.force:
        return "--force"
    if not (run_dir / "method.json").is_file():
        return "not trained yet"
    if (run_dir / FAILED_FILE).exists():
        return "its last attempt failed"
    if (run_dir / LOCK_FILE).exists():
        return "a process holds it"
    return None
