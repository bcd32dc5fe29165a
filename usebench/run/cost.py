"""A rough cost estimate for a plan, printed before `bench run` starts when the (default) `paper` preset
would train BERT-base for 100K steps per unit: hours or days on a CPU, which a user should choose knowingly."""
from __future__ import annotations

import time
from typing import Any

from usebench.run.plan import Plan

# Parameter counts of the backbones presets name (transformer body; the estimate needs only the order).
KNOWN_PARAMS = {"bert-base-uncased": 110e6, "bert-base-cased": 109e6, "minilm": 22.7e6, "roberta-base": 125e6}
TOKENS_PER_SENTENCE = 32  # a typical in-domain sentence after tokenisation (USEB titles and tweets are short)
# Share of the measured matmul rate (at the precision the stages train in) a training step reaches: measured by
# `bench doctor --device cuda` on an H200 at BERT-base width, batch 32 x 64 tokens (docs/scale-out.md): 3-24% of the
# fp32 rate, under 2% of the bf16/fp16 rate (steps of this size are launch-bound, autocast no faster than fp32)
UTILISATION = {"fp32": 0.10, "bf16": 0.01, "fp16": 0.01}


def paper_preset_note(plan: Plan, device: str | None, launcher: str = "local") -> str | None:
    """One paragraph naming the paper preset's budget and its estimated time here, or None if no unit uses it.
    Each distinct stage counts once (a stage shared by many units trains once). Under Ray or SLURM the units run on
    the cluster's devices, not this driver: nothing is measured here (a matmul on a login node says nothing about
    the cluster, and `--device cuda` may have no GPU here to run it on)."""
    stages = distinct_paper_stages(plan)
    if not stages:
        return None
    steps = sum(s.steps or 0 for s, _ in stages)
    flops = training_flops(stages)
    models = sorted({model for _, model in stages})
    if launcher == "local":
        precision = training_precision(stages, device)
        rate, where = _matmul_flops(device, precision)
        estimate = f"Rough estimate on {where}: {_human(flops / (rate * UTILISATION[precision]) / 3600)}"
    else:
        estimate = (f"About {flops:.1e} training FLOPs in all; not timed on this driver (--launcher {launcher}: "
                    "the units run on the cluster's devices)")
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


def _params(model: str) -> float:
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


def _human(hours: float) -> str:
    if hours < 1:
        return f"about {hours * 60:.0f} minutes"
    if hours < 48:
        return f"about {hours:.0f} hours"
    return f"about {hours / 24:.0f} days"
