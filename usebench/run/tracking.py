"""A unit's experiment trackers (``--log-to``): how its folders are described to them, set up around the unit.

:func:`unit_tracking` wraps :func:`usebench.run.unit.run_unit`: when ``$BENCH_LOG_TO`` names trackers, every stage the
unit trains logs to them (:mod:`usebench.train.trackers`), and every result it stores is logged as a final metric
(:mod:`usebench.run.result_hooks`). Grouping: one experiment per grid, ``usebench/<recipe>`` for `bench reproduce`
(its manifest names the recipe) and ``usebench/<grid id>`` for `bench run`; the tags name the unit's run id, recipe,
tables, method (chain), seed, target task, setting and stage; the params are the folder's resolved config
(``config.json``).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from usebench.errors import ConfigError
from usebench.store import read_json
from usebench.store.manifest import unit_grid
from usebench.plan.specs import UnitSpec
from usebench.train.tracker_backends import TrackContext
from usebench.train.trackers import requested, say, tracking


def experiment_name(grid: dict[str, Any]) -> str:
    """``usebench/<recipe>``, ``usebench/<grid id>``, or ``usebench`` for a unit no manifest lists."""
    return f"usebench/{grid.get('recipe') or grid.get('grid') or 'units'}" if grid else "usebench"


def unit_tags(spec: UnitSpec, grid: dict[str, Any]) -> dict[str, str]:
    """The tags every folder of the unit carries."""
    tags = {"run_id": spec.run_id, "method": spec.label, "seed": str(spec.seed), "task": spec.task,
            "setting": str(spec.config.get("setting") or "unsupervised")}
    if grid.get("recipe"):
        tags["recipe"] = str(grid["recipe"])
    if grid.get("tables"):
        tags["tables"] = ",".join(grid["tables"])
    if grid.get("grid"):
        tags["grid"] = str(grid["grid"])
    return tags


def folder_context(spec: UnitSpec, results_dir: Path, grid: dict[str, Any], home: Path) -> TrackContext:
    """How ``home`` (the unit's run directory or one of its stages' homes) appears in the trackers."""
    tags = unit_tags(spec, grid)
    homes = [(results_dir / s.home).resolve() for s in spec.stages]
    if Path(home).resolve() in homes and len(homes) > 1:
        k = homes.index(Path(home).resolve())
        tags["stage"] = f"{k + 1}/{len(homes)} {spec.stages[k].method}"
    tags["home"] = Path(home).name
    params = read_json(Path(home) / "config.json")  # the resolved config
    if params is None:
        params = dict(spec.config)
    name = spec.run_id if Path(home).name == spec.run_id else f"{spec.run_id} {tags.get('stage', Path(home).name)}"
    return TrackContext(Path(home), experiment_name(grid), name, tags, params, Path(results_dir))


@contextmanager
def unit_tracking(spec: UnitSpec, results_dir: str | Path) -> Iterator[None]:
    """Track the unit's training and results inside the block when ``$BENCH_LOG_TO`` names trackers."""
    try:
        names = requested()
    except ConfigError as e:  # the command checked it; a worker's own environment may still hold a typo
        say(f"trackers: {e}; training goes on without them")
        names = ()
    if not names:
        yield
        return
    results_dir = Path(results_dir)
    grid = unit_grid(results_dir, spec.run_id)
    with tracking(names, lambda home: folder_context(spec, results_dir, grid, home)):
        yield
