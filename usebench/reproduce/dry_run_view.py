"""The view `bench reproduce --dry-run` shows of a built plan (:func:`usebench.reproduce.build.build_plan`), so the
CLI only prints: each table's units and cost, the stages to train, reuse or find done, the whole plan's cost, the
inputs. It reads the store and the plan only (running the plans is :mod:`usebench.reproduce.run_plans`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.plan.cost import Cost, plan_cost
from usebench.plan.step_times import step_times_from
from usebench.reproduce.build import PlannedRun, ReproducePlan
from usebench.reproduce.recipe_cost import profile_cost
from usebench.reproduce.remaining import Estimate, Remaining, estimate, remaining_work
from usebench.plan.plan_rows import PlanView, plan_view
from usebench.plan.stage_usage import stage_usage, usage_totals


@dataclass
class TableView:
    """One table of the recipe: its runs, the distinct units they plan, and their training cost."""

    table: Any  # usebench.reproduce.recipes.TableEntry
    runs: list[PlannedRun]
    unit_ids: set[str]
    cost: Cost


@dataclass
class ReproduceView:
    """Everything a reproduce dry run prints: each table, each split's plan rows, the whole plan's figures."""

    tables: list[TableView]
    splits: dict[str, PlanView]  # each split's merged plan as `bench run --dry-run` shows it
    usage: str  # stages to train, reuse within the plan, and find done in the store (one line)
    units: int
    shared: int  # units more than one table uses (planned and trained once)
    cost: Cost  # the whole plan's training, every cost model (printed with -v)
    cpu_cost: str | None  # a CPU-scale recipe's whole plan from its own measured units (printed with -v)
    inputs: list[str]  # "input glove: present (...)" / "MISSING: ...", "data missing: ..."
    baselines: int = 0  # untrained rows of the plan (every split)
    remaining: Remaining | None = None  # what is left to do in the store (None: no data root to tell)
    estimate: Estimate | None = None  # its time on the device it will run on (None: nothing remains)

    def cost_line(self) -> str:
        """The dry run's one cost line: what remains and its time here, or that nothing remains."""
        if self.remaining is None:
            return "cost: " + self.cost.text()
        if self.estimate is None and not self.units and not self.baselines:
            return "cost: nothing to train and nothing to evaluate: no unit or baseline could be planned here (see the " \
                   "lines above on missing data and blocked runs)"
        if self.estimate is None:
            return "cost: nothing to train and nothing to evaluate (every unit and baseline of the plan holds in the " \
                   "store); a run writes the tables only"
        return f"cost of what remains ({self.remaining.text()}) {self.estimate.text()}"


def reproduce_view(rp: ReproducePlan, results_dir: Path, device: str | None, measure: bool = True,
                   step_times: Path | None = None, data_root: Path | None = None,
                   launcher: str = "local", verbose: bool = True) -> ReproduceView:
    """The dry run's view of ``rp`` against the store at ``results_dir`` (nothing is trained or written);
    ``step_times``: a doctor report whose measured steps price the stages; ``data_root``: a trained unit with a
    result missing or stale is shown to be scored again (the run's rule), and the work that remains is priced on the
    device the units will run on (``device``, under ``launcher``); ``verbose``: the whole plan's other cost models
    are measured too (printed with -v)."""
    times = step_times_from(step_times)
    tables = []
    for table in rp.tables:
        runs = [r for r in rp.runs if r.table == table.id]
        ids = {i for r in runs for i in r.run_ids}
        units = [u for u in rp.units if u.run_id in ids]
        tables.append(TableView(table, runs, ids, plan_cost(units, device, measure=False, step_times=times)))
    cpu = None
    if rp.recipe.cost is not None:
        baselines = [b for plan in rp.plans.values() for b in plan.baselines]
        cpu = profile_cost(rp.recipe.cost, rp.units, baselines, measure=measure and verbose).text()
    splits = {split: plan_view(plan, results_dir, rp.unit_tables, data_root) for split, plan in rp.plans.items()}
    view = ReproduceView(tables, splits, usage_totals(stage_usage(rp.units, results_dir)), len(rp.units),
                         sum(len(t) > 1 for t in rp.unit_tables.values()),
                         plan_cost(rp.units, device, measure and verbose, step_times=times), cpu, input_lines(rp))
    baselines = [(b, split) for split, plan in rp.plans.items() for b in plan.baselines]
    view.baselines = len(baselines)
    if data_root is not None:
        view.remaining = remaining_work(rp.units, baselines, results_dir, data_root)
        view.estimate = estimate(view.remaining, rp.recipe.cost, device, launcher, times, measure)
    return view


def input_lines(rp: ReproducePlan) -> list[str]:
    """Each input a table needs, present or missing, then each dataset a split skipped for want of data."""
    needed = {n for t in rp.tables for e in (*t.runs, *t.evals) for n in e.needs}
    lines = [f"input {name}: " + (f"present ({state.value})" if state.present else f"MISSING: {state.why}")
             for name, state in rp.inputs.items() if name in needed]
    skipped = {why for p in rp.plans.values() for _, why in p.skipped}
    return lines + [f"data missing: {why}" for why in sorted(skipped)]
