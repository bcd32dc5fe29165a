"""A plan as the store's grid manifest records it (:mod:`usebench.store.manifest`): per unit its run id, chain,
seed, target task, evaluations, the results it writes and its stages, so `bench status` shows the whole grid,
units not started yet included, from the store alone."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from usebench.plan.specs import Plan, UnitSpec, task_split
from usebench.registry import TASKS
from usebench.store.manifest import write_grid


def write_manifest(plan: Plan, results_dir: str | Path, launcher: str, argv: list[str] | None = None,
                   recipe: str | None = None, unit_tables: dict[str, list[str]] | None = None) -> Path:
    """Record the planned units of this invocation (atomically); returns the manifest's path. `bench reproduce`
    adds its recipe and the tables each unit serves (the trackers group and tag units by them)."""
    tables = unit_tables or {}
    return write_grid(results_dir, [unit_entry(u, tables.get(u.run_id)) for u in plan.units], launcher, argv, recipe)


def unit_entry(unit: UnitSpec, tables: list[str] | None = None) -> dict[str, Any]:
    """One unit of a grid manifest."""
    return {"run_id": unit.run_id, "label": unit.label, "seed": unit.seed, "task": unit.task,
            "evals": list(unit.evals), "results": unit_results(unit),
            "stages": [{"method": s.method, "home": s.home} for s in unit.stages],
            **({"tables": list(tables)} if tables else {})}


def unit_results(unit: UnitSpec) -> list[str]:
    """``task/split`` of every result ``unit`` writes: `bench status` asks each whether it still holds."""
    return [f"{t}/{task_split(unit, TASKS.get(t))}" for t in unit.evals]
