"""A rough cost estimate for a plan, printed before `bench run` starts when the (default) `paper` preset
would train BERT-base for 100K steps per unit: hours or days on a CPU, which a user should choose knowingly.

Two models: measured step times from a `bench doctor --json` report (`--step-times FILE` or `$BENCH_STEP_TIMES`,
:mod:`usebench.plan.step_times`), used whenever one is given; otherwise training FLOPs over a matmul rate times the
fixed :data:`UTILISATION`, and the estimate says so (:data:`ASSUMED`)."""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field
from typing import Any

from usebench.plan.specs import Plan
from usebench.plan.step_times import StepTimes, run_path, stage_precision

# Parameter counts of the backbones presets name (transformer body; the estimate needs only the order).
KNOWN_PARAMS = {"bert-base-uncased": 110e6, "bert-base-cased": 109e6, "minilm": 22.7e6, "roberta-base": 125e6}
VOCAB = 30_522  # the doctor's random BERT uses the packaged uncased BERT vocabulary
TOKENS_PER_SENTENCE = 32  # a typical in-domain sentence after tokenisation (USEB titles and tweets are short)
# Share of the measured matmul rate (at the precision the stages train in) a training step reaches, ASSUMED when no
# doctor report is given: from the H200 table of `bench doctor --device cuda` in docs/scale-out.md (BERT-base width,
# 32 x 64 tokens, 3-24% of the fp32 rate, under 2% of bf16), measured by the doctor's old method (one step after two
# warm-ups, collate and the final read-back on the clock, toy-length sentences; issue 36), before BertAdam's
# multi-tensor path and before the fast path: a pessimistic figure
UTILISATION = {"fp32": 0.10, "bf16": 0.01, "fp16": 0.01}
# The spread behind those figures, for an estimate's range: the same table's 3-24% of the fp32 rate; under 2% of bf16
# (the assumed 1% is its pessimistic end)
UTILISATION_RANGE = {"fp32": (0.03, 0.24), "bf16": (0.01, 0.02), "fp16": (0.01, 0.02)}
ASSUMED = ("assumed: training FLOPs at the matmul rate x a fixed utilisation (fp32 10%, bf16/fp16 1%: the old "
           "doctor method's H200 table); give --step-times doctor.json (`bench doctor --device cuda --json "
           "doctor.json` on the GPU) for measured steps")


def paper_preset_note(plan: Plan, device: str | None, launcher: str = "local",
                      step_times: Any = None) -> str | None:
    """One paragraph naming the paper preset's budget and its estimated time here, or None if no unit uses it.
    Each distinct stage counts once (a stage shared by many units trains once). With ``step_times`` (a
    :class:`usebench.plan.step_times.StepTimes`) the estimate is the doctor's measured steps. Otherwise, under Ray
    or SLURM the units run on the cluster's devices, not this driver: nothing is measured here (a matmul on a login
    node says nothing about the cluster, and `--device cuda` may have no GPU here to run it on)."""
    stages = distinct_paper_stages(plan)
    if not stages:
        return None
    steps = sum(s.steps or 0 for s, _ in stages)
    flops = training_flops(stages)
    models = sorted({model for _, model in stages})
    if step_times is not None:
        estimate = "Estimate " + measured_cost(stages, step_times).text()
    elif launcher == "local":
        precision = training_precision(stages, device)
        rate, where = _matmul_flops(device, precision)
        estimate = (f"Rough estimate on {where}: {_human(flops / (rate * UTILISATION[precision]) / 3600)} "
                    f"({ASSUMED})")
    else:
        estimate = (f"About {flops:.1e} training FLOPs in all; not timed on this driver (--launcher {launcher}: "
                    "the units run on the cluster's devices; --step-times doctor.json gives measured steps)")
    return (f"preset 'paper' (the default): {len(stages)} distinct training stage(s) on {', '.join(models)}, "
            f"{steps:,} optimizer steps in all, as the papers trained them. {estimate}. "
            f"For a quick run use --preset smoke (a few hundred steps of the packaged MiniLM).")


def distinct_paper_stages(plan: Plan) -> list[tuple[Any, str]]:
    """(stage, backbone of its chain) for each distinct stage of the plan that uses the paper preset."""
    out: dict[str, tuple[Any, str]] = {}
    for unit in plan.units:
        backbone = str(unit.stages[0].identity.get("config", {}).get("model", ""))
        for stage in unit.stages:
            if stage.preset == "paper":
                out.setdefault(stage.home, (stage, backbone))
    return list(out.values())


def training_flops(stages: list[tuple[Any, str]]) -> float:
    """6 x parameters x tokens per step x steps, summed (labeled stages encode 2 or 3 texts per example)."""
    total = 0.0
    for stage, backbone in stages:
        cfg = stage.identity.get("config", {})
        texts = 1 if stage.data["kind"] == "corpus" else (
            3 if cfg.get("hard_negatives") and cfg.get("train_data") == "allnli" else 2)
        total += 6 * _params(backbone) * cfg.get("batch_size", 8) * texts * TOKENS_PER_SENTENCE * (stage.steps or 0)
    return total


@functools.lru_cache(maxsize=None)
def _params(model: str) -> float:
    """The backbone's parameter count (read once per process: a grid names a few backbones thousands of times)."""
    if model in KNOWN_PARAMS:
        return KNOWN_PARAMS[model]
    try:  # a local checkpoint: count from its config (12 L H^2 for the layers plus the embeddings)
        from transformers import AutoConfig

        from usebench.eval.models import resolve_model

        cfg = AutoConfig.from_pretrained(resolve_model(model).path)
        return 12 * cfg.num_hidden_layers * cfg.hidden_size ** 2 + cfg.vocab_size * cfg.hidden_size
    except Exception:  # noqa: BLE001  an estimate must never stop a run
        return KNOWN_PARAMS["bert-base-uncased"]


def training_precision(stages: list[tuple[Any, str]], device: str | None) -> str:
    """The precision most of the stages' steps run in: ``amp`` bf16/fp16, ``auto`` = bf16 on a GPU, else fp32."""
    import torch

    on_gpu = (device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cuda")
    steps: dict[str, int] = {}
    for stage, _ in stages:
        amp = str(stage.identity.get("config", {}).get("amp", "off"))
        precision = {"bf16": "bf16", "fp16": "fp16", "auto": "bf16"}.get(amp, "fp32") if on_gpu else "fp32"
        steps[precision] = steps.get(precision, 0) + (stage.steps or 0)
    return max(steps, key=steps.get) if steps else "fp32"


def _matmul_flops(device: str | None, precision: str = "fp32") -> tuple[float, str]:
    """Measured matmul throughput (FLOP/s) on the device at ``precision``, after a warm-up (the first products pay
    for cuBLAS's handle and kernel choice), about 0.2 s of work."""
    import torch

    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32) if dev.type == "cuda" \
        else torch.float32
    n = 2048 if dev.type == "cuda" else 1024
    a, b = torch.randn(n, n, device=dev, dtype=dtype), torch.randn(n, n, device=dev, dtype=dtype)
    for _ in range(3):
        a @ b
    if dev.type == "cuda":
        torch.cuda.synchronize()
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.2:
        a @ b
        reps += 1
        if dev.type == "cuda" and reps % 16 == 0:
            torch.cuda.synchronize()  # bound the queue so the clock measures work done, not work queued
    if dev.type == "cuda":
        torch.cuda.synchronize()
    rate = 2 * n ** 3 * reps / (time.perf_counter() - t0)
    shown = precision if dev.type == "cuda" else "fp32"
    return rate, f"this {dev.type.upper()} ({rate / 1e9:.0f} GFLOP/s {shown} measured)"


@dataclass
class MeasuredCost:
    """GPU-hours of a plan's stages at the doctor's measured steps (ours on ``path``, and the lean loop)."""

    times: StepTimes
    path: str
    hours: float = 0.0
    lean_hours: float = 0.0
    measured: int = 0
    assumed: dict[str, int] = field(default_factory=dict)  # trainer -> stages estimated by the FLOP model
    fallbacks: set[str] = field(default_factory=set)  # "trainer precision: old path (new failed)" and the like

    def text(self) -> str:
        lean = f"; the lean loop would need about {self.lean_hours:,.1f}" if self.lean_hours else ""
        out = (f"at the measured steps ({self.times.source}: {self.times.device}, ours on the {self.path} path): "
               f"about {self.hours:,.1f} GPU-hours{lean}")
        if self.assumed:
            out += (f"; {sum(self.assumed.values())} stage(s) of {', '.join(sorted(self.assumed))} not measured "
                    "there: FLOP model at its matmul rate and the assumed utilisation")
        if self.fallbacks:
            out += "; " + ", ".join(sorted(self.fallbacks))
        return out


def measured_cost(stages: list[tuple[Any, str]], times: StepTimes) -> MeasuredCost:
    """Each stage's hours from ``times`` (the rule is in :mod:`usebench.plan.step_times`' docstring)."""
    out = MeasuredCost(times, run_path())
    measured_params = KNOWN_PARAMS["bert-base-uncased"] if (times.hidden, times.layers) == (768, 12) else \
        12 * times.layers * times.hidden**2 + VOCAB * times.hidden  # the doctor's BertConfig() is bert-base's shape
    for stage, backbone in stages:
        cfg = stage.identity.get("config", {})
        precision = stage_precision(cfg)
        cols = times.rows.get((stage.method, precision), {})
        ours_ms, used = _pick(cols, out.path)
        steps = stage.steps or 0
        scale = max(1.0, cfg.get("batch_size", 8) * cfg.get("max_length", times.seq) * _params(backbone)
                    / (times.batch * times.seq * measured_params))
        if ours_ms is None:
            out.assumed[stage.method] = out.assumed.get(stage.method, 0) + 1
            rate = times.rates.get(precision) or times.rates.get("fp32")
            flops = training_flops([(stage, backbone)])
            hours = flops / (rate * 1e12 * UTILISATION[precision]) / 3600 if rate else 0.0
            out.hours, out.lean_hours = out.hours + hours, out.lean_hours + hours
            continue
        if used != out.path:
            out.fallbacks.add(f"{stage.method} {precision}: the {used} path's figure (no {out.path} path row)")
        out.measured += 1
        out.hours += steps * ours_ms / 1e3 * scale / 3600
        out.lean_hours += steps * cols.get("lean", ours_ms) / 1e3 * scale / 3600
    if not math.isfinite(out.hours):
        out.hours = 0.0
    return out


def _pick(cols: dict[str, float], path: str) -> tuple[float | None, str]:
    """The path's median, else the other path's (None when neither was measured)."""
    other = "old" if path == "new" else "new"
    for p in (path, other):
        if p in cols:
            return cols[p], p
    return None, path


def _human(hours: float) -> str:
    if hours < 1:
        return f"about {hours * 60:.0f} minutes"
    if hours < 48:
        return f"about {hours:.0f} hours"
    return f"about {hours / 24:.0f} days"


# The cost of a whole plan (`bench reproduce --dry-run`): each distinct stage once.
GPU_STEP_SECONDS = 0.1  # the docs' rough floor for one small-batch BERT-base step on an A100 (docs/papers/tsdae.md)
H200_FP32_FLOPS = 51.0e12  # warmed-up fp32 matmul that `bench doctor` measured on an H200 (docs/scale-out.md)


@dataclass(frozen=True)
class Cost:
    """The training cost of a plan: distinct stages, optimizer steps, FLOPs, and time estimates."""

    stages: int
    steps: int
    flops: float
    device_hours: float  # at the measured matmul rate of the device it would run on
    device: str
    gpu_floor_hours: float  # steps x GPU_STEP_SECONDS: the docs' rough A100 floor
    h200_hours: float = 0.0  # FLOPs at the H200's measured fp32 rate and the cost model's fp32 utilisation
    measured: Any = None  # usebench.plan.step_times.MeasuredCost: GPU-hours at a doctor report's measured steps

    @property
    def measured_hours(self) -> float | None:
        return self.measured.hours if self.measured is not None else None

    def text(self) -> str:
        """One line: the plan's size, then the GPU-hours at the measured steps when a doctor report was given,
        else the assumed figures (named as such)."""
        here = f"about {self.device_hours:,.1f} hours" if self.device_hours else "no estimate"
        gpu = (self.measured.text() if self.measured is not None else
               f"on an H200 (fp32 matmul {H200_FP32_FLOPS / 1e12:.1f} TFLOP/s as `bench doctor` measured it): about "
               f"{self.h200_hours:,.1f} GPU-hours, {ASSUMED}")
        return (f"{self.stages:,} distinct training stage(s), {self.steps:,} optimizer steps, {self.flops:.2e} "
                f"training FLOPs; on {self.device}: {here}; {gpu}; at "
                f"{GPU_STEP_SECONDS} s per small-batch step (the docs' rough A100 floor): about "
                f"{self.gpu_floor_hours:,.1f} GPU-hours")


def plan_cost(units: list, device: str | None, measure: bool = True, step_times: Any = None) -> Cost:
    """Each distinct stage (by its home) once, over every preset: its steps and FLOPs (the cost model of
    this module's cost model), the time at this device's measured matmul rate, and with ``step_times`` (a
    :class:`usebench.plan.step_times.StepTimes`) the GPU-hours at the doctor's measured steps."""
    stages: dict[str, tuple[Any, str]] = {}
    for unit in units:
        backbone = str(unit.stages[0].identity.get("config", {}).get("model", ""))
        for stage in unit.stages:
            stages.setdefault(stage.home, (stage, backbone))
    steps = sum(s.steps or 0 for s, _ in stages.values())
    flops = training_flops(list(stages.values()))
    rate, where, util = _device_rate(list(stages.values()), device) if measure and stages else \
        (None, "this device (not measured)", 1.0)
    hours = flops / (rate * util) / 3600 if rate else 0.0
    h200 = flops / (H200_FP32_FLOPS * UTILISATION["fp32"]) / 3600
    measured = measured_cost(list(stages.values()), step_times) if step_times is not None else None
    return Cost(len(stages), steps, flops, hours, where, steps * GPU_STEP_SECONDS / 3600, h200, measured)


def _device_rate(stages: list[tuple[Any, str]], device: str | None) -> tuple[float | None, str, float]:
    """The measured matmul rate of the device the units would run on, at the precision most steps train in, and
    the share of it a training step reaches (this module's cost model); a device this machine lacks (`--device
    cuda` on a login node) is named, not measured: an estimate never stops a plan."""
    try:
        precision = training_precision(stages, device)
        rate, where = _matmul_flops(device, precision)
    except (RuntimeError, AssertionError) as e:
        return None, f"{device} (not measured here: {str(e).splitlines()[0]})", 1.0
    return rate, where, UTILISATION[precision]
