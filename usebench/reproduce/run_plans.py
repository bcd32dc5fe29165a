"""`bench reproduce` without --dry-run: every split's plan of a built recipe
(:func:`usebench.reproduce.build.build_plan`) through `bench run`'s engine, each split's manifest written first."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from usebench.plan.manifest import write_manifest
from usebench.reproduce.build import ReproducePlan
from usebench.reproduce.recipe_cost import record_prediction
from usebench.run.grid import Execution, run_plan
from usebench.store.unit_state import UnitResult


def run_plans(rp: ReproducePlan, execution: Execution, data_root: Path, results_dir: Path,
              execute: Callable[..., list[UnitResult]] | None, launcher: str) -> list[UnitResult]:
    """Every split's plan through `bench run`'s engine, after writing each split's manifest (so `bench status`
    lists every unit before the first starts); returns the units that failed or were held by another process. A
    CPU-scale recipe first stores its prediction of the whole plan's time (its page sets the cost against it)."""
    if rp.recipe.cost is not None and any(plan.units for plan in rp.plans.values()):
        baselines = [b for plan in rp.plans.values() for b in plan.baselines]
        record_prediction(rp.recipe.cost, rp.units, baselines, results_dir, rp.recipe.paper)
    for plan in rp.plans.values():
        if plan.units:
            write_manifest(plan, results_dir, launcher, recipe=rp.recipe.paper, unit_tables=rp.unit_tables)
    failed = []
    for plan in rp.plans.values():
        outcome = run_plan(plan, execution, data_root, results_dir, execute)
        failed += [u for u in outcome.units if u.state in ("failed", "locked")]
    return failed
