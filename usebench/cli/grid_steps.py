"""What `bench run` does once its options are parsed, shared with the Python API (``usebench.train``): plan and
check every unit (the paper preset's note with its cost here), run the plan on the launcher the prelude chose, and
say what was not done. So a notebook gets bench run's planner, reuse, resume and errors, not a copy of them."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from pathlib import Path

    from usebench.errors import NothingDoneError
    from usebench.plan.specs import Plan, RunOptions
    from usebench.run.grid import RunOutcome
    from usebench.store.unit_state import UnitResult


def plan_grid(opts: RunOptions, launch: Any, step_times: Path | None) -> Plan:
    """Every unit built and checked before anything trains (``--reevaluate``'s tasks against the plan too); where
    no preset was named, the note that the default is the papers' full budget, with its cost here (on stderr).
    ``launch``: what usebench/cli/run.py's prelude settled (its ``Launch``)."""
    from usebench.plan.planner import plan_run

    plan = plan_run(opts, launch.data_root, launch.results_dir)
    if opts.reevaluate:
        from usebench.run.reevaluate import check_reevaluate

        check_reevaluate(opts.reevaluate, plan.units, opts.force)
    if opts.preset is None:
        from usebench.plan.cost import paper_preset_note
        from usebench.plan.step_times import step_times_from

        note = paper_preset_note(plan, opts.device, launch.options.launcher, step_times_from(step_times))
        if note:
            click.secho(note, fg="yellow", err=True)
    return plan


def run_planned(plan: Plan, opts: RunOptions, launch: Any) -> RunOutcome:
    """The manifest first (`bench status` shows the units not started yet), then every unit not finished yet
    through the launcher; finished ones are collected from the store."""
    from usebench.run.grid import run_benchmark
    from usebench.plan.manifest import write_manifest

    main_rank = int(os.environ.get("RANK", "0")) == 0
    if main_rank and (plan.units or plan.baselines):
        launch.claim_store("bench run")  # a committed store is written into only when named (--results-dir)
    if main_rank and plan.units:
        write_manifest(plan, launch.results_dir, launch.options.launcher)
    return run_benchmark(opts, launch.data_root, launch.results_dir, execute=launch.execute, plan=plan)


def unfinished(outcome: RunOutcome) -> list[UnitResult]:
    """The units that failed or that another process holds: a grid with one of them is not done."""
    return [u for u in outcome.units if u.state in ("failed", "locked")]


def nothing_done(outcome: RunOutcome) -> NothingDoneError | None:
    """The error of a run that trained and evaluated nothing (every task skipped, no unit), None otherwise."""
    from usebench.errors import NothingDoneError

    if outcome.cells:
        return None
    reasons = "; ".join(f"{w}: {r}" for w, r in outcome.skipped) or "no unit or baseline produced a result"
    return NothingDoneError(f"nothing was trained or evaluated ({reasons})")
