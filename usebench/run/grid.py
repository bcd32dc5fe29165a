"""The engine behind `bench run`: plan every unit, evaluate the untrained baselines, run the units, and
collect what `bench run` tabulates.

A run unit is (chain of methods, target task, seed); see :mod:`usebench.plan.planner` for how units are built
and validated up front and :mod:`usebench.run.unit` for what one unit does and writes. Units are handed to an
``execute`` function: in this process one after the other by default (the `local` launcher); the launchers in
:mod:`usebench.launch` hand the same :class:`~usebench.plan.planner.UnitSpec` objects to Ray or SLURM. With
``--corpus`` every task shares that corpus, so each method/seed trains once and is evaluated on all tasks.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from usebench.store import StoredResult, read_record, result_path
from usebench.run.baseline_job import baseline_job
from usebench.plan.specs import BaselineSpec, Plan, RunOptions, UnitSpec
from usebench.plan.planner import method_overrides, plan_run
from usebench.run.reevaluate import check_reevaluate, reevaluate_reset
from usebench.run.progress import GridProgress
from usebench.plan.held_results import DataHashes, unit_gaps
from usebench.plan.stage_usage import stage_usage, usage_totals
from usebench.run.stages import force_reset
from usebench.run.unit import run_unit, say
from usebench.store.unit_state import UnitResult

__all__ = ["Execution", "RunOptions", "RunOutcome", "method_overrides", "plan_run", "run_benchmark", "run_plan",
           "run_sequentially"]

Execute = Callable[[Sequence[UnitSpec], Path, Path], list[UnitResult]]


@dataclass
class RunOutcome:
    """Results of this invocation: (row label, task) -> stored results over seeds; skips with reasons."""

    cells: dict[tuple[str, str], list[StoredResult]] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    run_dirs: list[Path] = field(default_factory=list)
    units: list[UnitResult] = field(default_factory=list)

    def add(self, row: str, task: str, path: Path) -> None:
        """Record a stored result once (with --corpus, several train tasks share one unit)."""
        cell = self.cells.setdefault((row, task), [])
        if all(r.path != path for r in cell):
            cell.append(StoredResult(path, read_record(path)))


def run_sequentially(units: Sequence[UnitSpec], data_root: Path, results_dir: Path) -> list[UnitResult]:
    """The `local` launcher: each unit in this process, in plan order; the first failure stops the run."""
    out, progress = [], GridProgress(units, Path(results_dir))
    for i, unit in enumerate(units, 1):
        say(f"unit {i}/{len(units)} {unit.run_id} ({unit.label}, seed {unit.seed})")
        out.append(run_unit(unit, data_root, results_dir))
        say(f"unit {i}/{len(units)} {unit.run_id}: {progress.finished(unit, out[-1])}")
    return out


@dataclass(frozen=True)
class Execution:
    """How a planned grid runs, beyond its plan: the baselines' device, batch size and strictness, whether finished
    units start over (``force``) and which tasks finished units score again (``reevaluate``)."""

    device: str | None = None
    batch_size: int = 64
    strict: bool = False
    force: bool = False
    reevaluate: tuple[str, ...] = ()

    @classmethod
    def of(cls, opts: RunOptions) -> Execution:
        return cls(opts.device, opts.batch_size, opts.strict, opts.force, opts.reevaluate)


def run_benchmark(opts: RunOptions, data_root: Path, results_dir: Path, execute: Execute | None = None,
                  plan: Plan | None = None) -> RunOutcome:
    """Plan (unless given) and run it (:func:`run_plan`)."""
    return run_plan(plan or plan_run(opts, Path(data_root), Path(results_dir)), Execution.of(opts), data_root, results_dir, execute)


def run_plan(plan: Plan, opts: Execution, data_root: Path, results_dir: Path,
             execute: Execute | None = None) -> RunOutcome:
    """Evaluate the baselines, run every unit of ``plan`` that is not finished yet through ``execute`` (finished
    ones are collected from the store); returns the table."""
    if opts.reevaluate:
        check_reevaluate(opts.reevaluate, plan.units, opts.force)
    outcome = RunOutcome(skipped=list(plan.skipped))
    for note in plan.notes:
        say(note)
    remote = bool(getattr(execute, "remote", False))  # Ray / SLURM: the baselines encode on the cluster too
    for baseline in [] if remote else plan.baselines:
        _run_baseline(baseline, opts, plan.split, Path(data_root), Path(results_dir), outcome)
    todo: list = [baseline_job(b, opts, plan.split) for b in plan.baselines] if remote else []
    if opts.force and int(os.environ.get("RANK", "0")) == 0:
        # once, here, for every unit and stage home: a retried or requeued attempt must resume, not start over
        force_reset(plan.units, Path(results_dir), say)
    say_stages(plan.units, Path(results_dir))
    if opts.reevaluate:
        reevaluate_reset(plan.units, opts.reevaluate, Path(results_dir), say)
    hashes: DataHashes = {}
    rescore = 0
    for unit in plan.units:
        if unit.force:  # applied above (force_reset); the unit's attempts, retries and requeues only resume
            unit = replace(unit, force=False)
        done, stale = unit_gaps(unit, data_root, results_dir, hashes)
        if done is None:
            todo.append(unit)
            rescore += bool(stale)
            for line in stale:  # trained: only these are scored again, from its finished checkpoint
                say(f"{unit.run_id}: trained; scoring again: {line}")
        else:
            collect(outcome, done)
    baseline_ids = {u.run_id for u in todo if not isinstance(u, UnitSpec)}
    n_todo = len(todo) - len(baseline_ids)
    if n_todo < len(plan.units) or rescore:
        again = f" ({rescore} of them trained, only to score again)" if rescore else ""
        say(f"{len(plan.units) - n_todo} of {len(plan.units)} unit(s) already done (results kept); "
            f"{n_todo} to run{again}")
    if todo:
        for result in (execute or run_sequentially)(todo, Path(data_root), Path(results_dir)):
            if result.run_id in baseline_ids and result.state == "done":
                outcome.skipped.extend(result.skipped)  # a baseline row, not a unit
                for task, path in result.results:
                    outcome.add(result.row, task, path)
            else:
                collect(outcome, result)
    return outcome


def say_stages(units: Sequence[UnitSpec], results_dir: Path) -> None:
    """The log's account of the plan: per unit, which stages it trains and which it reuses from where."""
    usage = stage_usage(units, results_dir)
    for unit, uses in zip(units, usage):
        say(f"plan {unit.run_id}: " + " > ".join(u.text() for u in uses))
    if units:
        say("plan: " + usage_totals(usage))


def collect(outcome: RunOutcome, result: UnitResult) -> None:
    """Add one unit's results and skips to the outcome."""
    outcome.units.append(result)
    outcome.skipped.extend(result.skipped)
    if result.state == "done":
        outcome.run_dirs.append(result.run_dir)
    for task, path in result.results:
        outcome.add(result.row, task, path)


def _run_baseline(spec: BaselineSpec, opts: Execution, split: str, data_root: Path, results_dir: Path,
                  outcome: RunOutcome) -> None:
    from usebench.plan.eval_options import EvalOptions
    from usebench.run.evaluation import evaluate_model

    ev_opts = EvalOptions(model=spec.model, pooling=spec.pooling, batch_size=opts.batch_size, device=opts.device)
    res = evaluate_model(ev_opts, ",".join(spec.evals), split, data_root, results_dir, strict=opts.strict,
                         force=opts.force)
    outcome.skipped.extend(res.skipped)
    row = f"{spec.name} ({spec.model})"
    for task in spec.evals:
        path = result_path(results_dir, res.run_id, task, split)
        if path.is_file():
            outcome.add(row, task, path)
