"""What a recipe's plan still has to do in a store, and one estimate of its time on the device it will run on: the
cost line of `bench reproduce --dry-run` (the other cost models, over the whole plan, are printed with ``-v``).

The work that remains: each distinct stage that trains (a stage done in the store, or trained by an earlier unit of
the plan, costs nothing more), the evaluations of every unit that runs (all its tasks when it trains; only the results
to score again when it is trained: :func:`usebench.plan.held_results.stale_results`, the run's own rule), and each baseline's
tasks without a result that holds. The estimate of that work:

- on a CPU, for a recipe that carries its measured units (``[cost]``, :mod:`usebench.reproduce.recipe_cost`): their
  CPU seconds scaled by this machine's one-thread matmul rate, over the all-core speedup; the range is the spread of
  that speedup seen in the recipe's own runs (``speedup_range``);
- otherwise (a GPU, or a recipe without ``[cost]``): the doctor's measured steps when given (``--step-times``; the range
  from the lean loop's time to ours), else the training FLOPs at the device's matmul rate and the assumed utilisation,
  the range from that utilisation's spread (:data:`usebench.plan.cost.UTILISATION_RANGE`); evaluation is not counted.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.errors import MissingDataError
from usebench.plan.cost import H200_FP32_FLOPS, UTILISATION_RANGE, measured_cost, training_flops, training_precision
from usebench.plan.stage_usage import stage_usage
from usebench.plan.held_results import stale_results
from usebench.store import result_path, run_id
from usebench.store.validity import expected_result, path_stale_reason


@dataclass(frozen=True)
class Remaining:
    """The plan's work left in the store: distinct (stage, backbone) to train, and the tasks still to score."""

    stages: list[tuple[Any, str]]
    unit_evals: list[tuple[str, ...]]  # per unit that runs: the tasks it scores
    baseline_evals: list[tuple[str, ...]]  # per baseline with a task left: those tasks

    @property
    def steps(self) -> int:
        return sum(s.steps or 0 for s, _ in self.stages)

    @property
    def nothing(self) -> bool:
        return not self.stages and not any(self.unit_evals) and not any(self.baseline_evals)

    def text(self) -> str:
        train = (f"{len(self.stages):,} stage(s) to train, {self.steps:,} optimizer steps" if self.stages
                 else "nothing to train")
        units, bases = sum(map(bool, self.unit_evals)), sum(map(bool, self.baseline_evals))
        scored = sum(map(len, self.unit_evals)) + sum(map(len, self.baseline_evals))
        return train + (f"; {scored} evaluation(s) of {units} unit(s) and {bases} baseline(s)" if scored
                        else "; nothing to evaluate")


def remaining_work(units: Sequence[Any], baselines: Sequence[tuple[Any, str]], results_dir: Path,
                   data_root: Path) -> Remaining:
    """What running ``units`` and ``baselines`` ((baseline spec, split) pairs) would still do in ``results_dir``."""
    stages: dict[str, tuple[Any, str]] = {}
    for unit, uses in zip(units, stage_usage(units, results_dir)):
        backbone = str(unit.stages[0].identity.get("config", {}).get("model", ""))
        for stage, use in zip(unit.stages, uses):
            if use.action == "train":
                stages.setdefault(stage.home, (stage, backbone))
    hashes: dict = {}
    evals = []
    for unit in units:
        result, stale = stale_results(unit, data_root, results_dir, hashes)
        evals.append(tuple(unit.evals) if result is None else tuple(task for task, _, _ in stale))
    left = [_baseline_left(b, split, data_root, results_dir, hashes) for b, split in baselines]
    return Remaining(list(stages.values()), evals, left)


def _baseline_left(spec: Any, split: str, data_root: Path, results_dir: Path, hashes: dict) -> tuple[str, ...]:
    """The tasks of an untrained baseline row without a stored result that holds (as `bench eval` decides)."""
    from usebench.store.records import model_slug
    from usebench.registry import TASKS
    from usebench.plan.eval_options import EvalOptions, describe_model

    method, config, precision = describe_model(EvalOptions(model=spec.model, pooling=spec.pooling, device="cpu"))
    run = run_id(model_slug(method["name"]), model_slug(spec.model), config, 0)
    left = []
    for name in spec.evals:
        task = TASKS.get(name)
        if split not in task.splits:
            continue
        if (name, split) not in hashes:
            try:
                hashes[name, split] = task.data_sha256(data_root, split)
            except MissingDataError as e:
                hashes[name, split] = e
        if isinstance(hashes[name, split], MissingDataError):
            continue  # skipped by the run as well, with the command that fetches the data
        expected = expected_result(name, split, hashes[name, split], config=config, precision=precision)
        if path_stale_reason(result_path(results_dir, run, name, split), expected) is not None:
            left.append(name)
    return tuple(left)


@dataclass(frozen=True)
class Estimate:
    """Hours of the remaining work on ``where`` (about ``hours``, between ``low`` and ``high``) and its basis."""

    hours: float
    low: float
    high: float
    where: str
    basis: str

    def text(self) -> str:
        spread = f", {_h(self.low)} to {_h(self.high)}" if (self.low, self.high) != (self.hours, self.hours) else ""
        return f"on {self.where}: about {_h(self.hours)}{spread}; basis: {self.basis}"


def _h(hours: float) -> str:
    return f"{hours * 60:.0f} min" if hours < 1 else f"{hours:,.1f} h"


def estimate(work: Remaining, profile: Any, device: str | None, launcher: str, step_times: Any = None,
             measure: bool = True) -> Estimate | None:
    """One estimate of ``work`` on the device the units will run on (None when nothing remains); ``profile``: the
    recipe's measured units (a :class:`usebench.reproduce.recipe_cost.CpuProfile`) or None."""
    if work.nothing:
        return None
    import torch

    local = launcher == "local"
    target = device or ("cuda" if torch.cuda.is_available() or not local else "cpu")
    if profile is not None and target == "cpu":
        return _profile_estimate(work, profile, measure)
    if step_times is not None:
        cost = measured_cost(work.stages, step_times)
        return Estimate(cost.hours, min(cost.lean_hours or cost.hours, cost.hours), cost.hours,
                        step_times.device, cost.text() + "; the range runs from the lean loop's time to ours; "
                        "evaluation not counted")
    return _flop_estimate(work, target, local and measure)


def _profile_estimate(work: Remaining, profile: Any, measure: bool) -> Estimate:
    from usebench.reproduce.recipe_cost import one_thread_matmul_gflops, work_cost

    cost = work_cost(profile, [s for s, _ in work.stages], work.unit_evals, work.baseline_evals,
                     sum(map(bool, work.unit_evals)), one_thread_matmul_gflops() if measure else None)
    slow, fast = profile.speedup_range or (profile.speedup, profile.speedup)
    per_speedup = cost.hours * profile.speedup  # hours at a speedup of 1
    basis = (cost.basis() + (f"; the range: {slow:g} to {fast:g} CPU seconds per wall second, as the recipe's own "
                             "units ran beside other work and alone" if profile.speedup_range else ""))
    return Estimate(cost.hours, per_speedup / fast, per_speedup / slow, "this CPU, all its cores", basis)


def _flop_estimate(work: Remaining, device: str, measure: bool) -> Estimate:
    """Training FLOPs at the device's measured matmul rate (an H200's, as the doctor measured it, where the units
    run elsewhere) and the assumed utilisation; the range from that utilisation's spread."""
    from usebench.plan.cost import UTILISATION, _matmul_flops

    precision = training_precision(work.stages, device) if measure else "fp32"
    rate, where = None, f"{device} (not measured here: an H200's fp32 matmul rate, {H200_FP32_FLOPS / 1e12:.1f} " \
                        "TFLOP/s as `bench doctor` measured it)"
    if measure:
        try:
            rate, where = _matmul_flops(device, precision)
        except (RuntimeError, AssertionError) as e:
            where = f"{device} (not measured here: {str(e).splitlines()[0]}; an H200's fp32 rate taken)"
    rate = rate or H200_FP32_FLOPS
    flops = training_flops(work.stages)
    lo_util, hi_util = UTILISATION_RANGE[precision]
    hours = flops / (rate * UTILISATION[precision]) / 3600
    basis = (f"{flops:.2e} training FLOPs at the matmul rate x an assumed {UTILISATION[precision]:.0%} utilisation "
             f"({lo_util:.0%}-{hi_util:.0%}: the range); evaluation not counted; `--step-times doctor.json` prices "
             "the steps as measured")
    return Estimate(hours, flops / (rate * hi_util) / 3600, flops / (rate * lo_util) / 3600, where, basis)
