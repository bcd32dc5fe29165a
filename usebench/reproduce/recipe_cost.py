"""A CPU-scale recipe's time on this machine, from the costs measured where the recipe was made.

A recipe that is meant to run on a laptop (usebench/recipes/laptop.toml) carries a ``[cost]`` table: the CPU seconds
one training step of each method and one evaluation of each task took at one thread on the machine it was measured
on (scripts/laptop_step_costs.py), that machine's one-thread matmul rate, and how much faster a unit runs there on
all its cores than its one-thread CPU time. `bench reproduce --dry-run` adds it all up over the plan (each distinct
stage once with the learning-curve evaluations it makes while training, every unit's evaluations, every
baseline's) and scales it by this machine's one-thread matmul rate,
measured in CPU time (which a loaded machine hardly moves). The FLOP model of :mod:`usebench.plan.cost` assumes a
GPU's utilisation and says nothing about evaluation; this one is what a CPU recipe's own units cost.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.errors import ConfigError

COST_KEYS = ("measured_on", "matmul_gflops_one_thread", "speedup_all_cores", "step_cpu_s", "eval_cpu_s",
             "unit_overhead_cpu_s")
OPTIONAL_KEYS = ("speedup_range",)  # [slowest, fastest] CPU seconds per wall second the recipe's units were seen at


@dataclass(frozen=True)
class CpuProfile:
    """What the recipe's units cost where it was measured (one thread, CPU seconds)."""

    measured_on: str
    matmul_gflops: float  # that machine's one-thread fp32 matmul rate (CPU time)
    speedup: float  # one unit's one-thread CPU seconds over its wall seconds on all that machine's cores
    step_cpu_s: Mapping[str, float]  # method -> CPU s per optimizer step at its recipe preset
    eval_cpu_s: Mapping[str, float]  # task -> CPU s of one evaluation (test split)
    unit_overhead_cpu_s: float  # per unit: loading, export, bookkeeping
    speedup_range: tuple[float, float] | None = None  # the spread of ``speedup`` seen in the recipe's own runs


def parse_profile(value: Any, where: str) -> CpuProfile | None:
    """The recipe's ``[cost]`` table checked (None when the recipe has none)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a table")
    unknown = sorted(set(value) - set(COST_KEYS) - set(OPTIONAL_KEYS))
    missing = sorted(set(COST_KEYS) - set(value))
    if unknown or missing:
        raise ConfigError(f"{where}: " + "; ".join(
            ([f"unknown key(s) {', '.join(unknown)}"] if unknown else []) +
            ([f"missing key(s) {', '.join(missing)}"] if missing else [])) + f" (keys: {', '.join(COST_KEYS)})")
    if not isinstance(value["measured_on"], str) or not value["measured_on"]:
        raise ConfigError(f"{where}.measured_on: expected a description of the machine and the command")
    numbers = {k: value[k] for k in ("matmul_gflops_one_thread", "speedup_all_cores", "unit_overhead_cpu_s")}
    for key in ("step_cpu_s", "eval_cpu_s"):
        if not isinstance(value[key], dict) or not value[key]:
            raise ConfigError(f"{where}.{key}: expected a table of names to seconds")
        numbers.update({f"{key}.{k}": v for k, v in value[key].items()})
    for key, v in numbers.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or (v == 0 and "overhead" not in key):
            raise ConfigError(f"{where}.{key}: expected a positive number, got {v!r}")
    return CpuProfile(value["measured_on"], float(value["matmul_gflops_one_thread"]),
                      float(value["speedup_all_cores"]), dict(value["step_cpu_s"]), dict(value["eval_cpu_s"]),
                      float(value["unit_overhead_cpu_s"]), _speedup_range(value.get("speedup_range"), where))


def _speedup_range(value: Any, where: str) -> tuple[float, float] | None:
    """``speedup_range = [slowest, fastest]``, two positive numbers in order, or None when not given."""
    if value is None:
        return None
    ok = isinstance(value, list) and len(value) == 2 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in value) and value[0] <= value[1]
    if not ok:
        raise ConfigError(f"{where}.speedup_range: expected [slowest, fastest], two positive numbers, got {value!r}")
    return float(value[0]), float(value[1])


def one_thread_matmul_gflops(seconds: float = 0.1, tries: int = 5) -> float:
    """This machine's fp32 matmul rate on one thread: the best of ``tries`` timings in process CPU time. CPU time
    keeps other processes' share of the cores out, not their share of the caches and the core's sibling thread: on
    the 2-core CI machine, under a load of about 10, single timings read 95-127 GFLOP/s and best-of-five ones
    107-132, against 127 idle: a machine's rate within that spread of the profile's is the same machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        n = 512
        a, b = torch.randn(n, n), torch.randn(n, n)
        for _ in range(3):
            a @ b
        rates = []
        for _ in range(tries):
            reps, t0 = 0, time.process_time()
            while time.process_time() - t0 < seconds:
                a @ b
                reps += 1
            rates.append(2 * n ** 3 * reps / (time.process_time() - t0) / 1e9)
        return max(rates)
    finally:
        torch.set_num_threads(threads)


@dataclass
class ProfileCost:
    """The plan's CPU seconds by kind at the profile's figures, and its hours here."""

    profile: CpuProfile
    train_cpu_s: float = 0.0
    eval_cpu_s: float = 0.0
    overhead_cpu_s: float = 0.0
    here_gflops: float | None = None  # this machine's one-thread rate (None: not measured, the profile's taken)
    unknown: list[str] = field(default_factory=list)  # methods or tasks the profile has no figure for

    @property
    def scale(self) -> float:
        """How much longer a CPU second of the profile takes here (its matmul rate over this machine's)."""
        return self.profile.matmul_gflops / self.here_gflops if self.here_gflops else 1.0

    @property
    def hours(self) -> float:
        cpu = self.train_cpu_s + self.eval_cpu_s + self.overhead_cpu_s
        return cpu * self.scale / self.profile.speedup / 3600

    def text(self) -> str:
        return f"about {self.hours:.1f} hours on all cores: {self.basis()}"

    def basis(self) -> str:
        """Where the hours come from: the CPU seconds by kind, the machine factor and the all-core speedup."""
        here = (f"this CPU's one-thread matmul {self.here_gflops:.0f} GFLOP/s against {self.profile.matmul_gflops:.0f}"
                if self.here_gflops else "not measured here")
        gaps = f"; no figure for {', '.join(self.unknown)} (not counted)" if self.unknown else ""
        return (f"{self.train_cpu_s / 3600:.2f} h of training, {self.eval_cpu_s / 3600:.2f} h of evaluation and "
                f"{self.overhead_cpu_s / 3600:.2f} h of set-up at one thread as measured on {self.profile.measured_on}, "
                f"x{self.scale:.2f} ({here}), / {self.profile.speedup:g} for all cores{gaps}")


def work_cost(profile: CpuProfile, stages: Sequence[Any], unit_evals: Sequence[Sequence[str]],
              baseline_evals: Sequence[Sequence[str]], units: int, here_gflops: float | None) -> ProfileCost:
    """The cost at ``profile``'s figures of a given piece of work: these stages' steps (each once) with the
    learning-curve evaluations they make while training, these evaluations, a set-up per unit that runs;
    ``here_gflops``: this machine's one-thread rate (None: the profile's). Priced as :func:`profile_cost` prices the
    whole plan, so that the dry run's remaining cost of an empty store is the prediction the run stores."""
    cost = ProfileCost(profile, here_gflops=here_gflops)
    for stage in stages:
        cost.train_cpu_s += (stage.steps or 0) * _figure(profile.step_cpu_s, stage.method, cost.unknown)
        points = curve_points_of(stage)
        if points:
            cost.eval_cpu_s += points * _figure(profile.eval_cpu_s, _curve_task(stage), cost.unknown)
    for tasks in (*unit_evals, *baseline_evals):
        cost.eval_cpu_s += sum(_figure(profile.eval_cpu_s, t, cost.unknown) for t in tasks)
    cost.overhead_cpu_s = units * profile.unit_overhead_cpu_s
    return cost


def profile_cost(profile: CpuProfile, units: Sequence[Any], baselines: Sequence[Any],
                 measure: bool = True) -> ProfileCost:
    """The plan's cost at ``profile``'s figures: each distinct stage's steps once, each unit's and each baseline's
    evaluations, a set-up per unit; scaled to this machine when ``measure``."""
    cost = ProfileCost(profile, here_gflops=one_thread_matmul_gflops() if measure else None)
    seen: set[str] = set()
    for unit in units:
        for stage in unit.stages:
            if stage.home in seen:
                continue
            seen.add(stage.home)
            cost.train_cpu_s += (stage.steps or 0) * _figure(profile.step_cpu_s, stage.method, cost.unknown)
            points = curve_points_of(stage)
            if points:
                cost.eval_cpu_s += points * _figure(profile.eval_cpu_s, _curve_task(stage), cost.unknown)
        cost.eval_cpu_s += sum(_figure(profile.eval_cpu_s, t, cost.unknown) for t in unit.evals)
        cost.overhead_cpu_s += profile.unit_overhead_cpu_s
    for base in baselines:
        if base.name != "bm25":  # BM25 encodes nothing: seconds, not the encoder's cost
            cost.eval_cpu_s += sum(_figure(profile.eval_cpu_s, t, cost.unknown) for t in base.evals)
    return cost


def curve_points_of(stage: Any) -> int:
    """How many learning-curve evaluations a planned stage makes while training (``curve_steps`` before its last
    step: the last one is the unit's own evaluation)."""
    config = (getattr(stage, "identity", None) or {}).get("config") or {}
    return sum(1 for s in config.get("curve_steps") or () if s < (stage.steps or 0)) if config.get("curve_task") else 0


def _curve_task(stage: Any) -> str:
    return str(stage.identity["config"]["curve_task"])


PREDICTIONS = (".reproduce", "{paper}-cost.json")  # under the results store: every prediction a run started with


def record_prediction(profile: CpuProfile, units: Sequence[Any], baselines: Sequence[Any], results_dir: Path,
                      paper: str) -> ProfileCost:
    """Measure this machine, price the whole plan at ``profile``'s figures and append the prediction, with the
    figures it used, to ``<results_dir>/.reproduce/<paper>-cost.json``: the recipe's page sets what each unit then
    cost against the first one, made before anything ran (a resumed run appends its own)."""
    from usebench.store import git_sha, now_iso, read_json, write_json_atomic

    cost = profile_cost(profile, units, baselines, measure=True)
    path = Path(results_dir).joinpath(PREDICTIONS[0], PREDICTIONS[1].format(paper=paper))
    before = (read_json(path) or {}).get("predictions") if path.is_file() else None
    entry = {"at": now_iso(), "git_sha": git_sha(), "hours": round(cost.hours, 4), "scale": round(cost.scale, 4),
             "here_gflops": cost.here_gflops, "train_cpu_s": round(cost.train_cpu_s, 1),
             "eval_cpu_s": round(cost.eval_cpu_s, 1), "overhead_cpu_s": round(cost.overhead_cpu_s, 1),
             "units": len(units), "unknown": list(cost.unknown),
             "profile": {"measured_on": profile.measured_on, "matmul_gflops_one_thread": profile.matmul_gflops,
                         "speedup_all_cores": profile.speedup, "step_cpu_s": dict(profile.step_cpu_s),
                         "eval_cpu_s": dict(profile.eval_cpu_s), "unit_overhead_cpu_s": profile.unit_overhead_cpu_s}}
    write_json_atomic(path, {"predictions": [*(before if isinstance(before, list) else []), entry]})
    return cost


def _figure(figures: Mapping[str, float], name: str, unknown: list[str]) -> float:
    if name not in figures:
        if name not in unknown:
            unknown.append(name)
        return 0.0
    return float(figures[name])
