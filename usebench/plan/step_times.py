"""Measured step times for a plan's GPU-hour estimate: a ``bench doctor --json`` report's training section
(issue 36), read here and used by :func:`usebench.plan.cost.measured_cost` instead of the fixed utilisation.

Where from: ``--step-times FILE`` on ``bench run`` and ``bench reproduce`` (or ``$BENCH_STEP_TIMES``). Nothing is
looked for elsewhere: an estimate says which figures it used, and a report found by guessing could be another
machine's.

How a stage's time is estimated: its optimizer steps x the median ms/step the doctor measured for its trainer at
its precision (``amp`` bf16/auto -> bf16, fp16 -> the bf16 figure, off -> fp32), on the step path its run would take
(``--fast-path``/``$BENCH_FAST_PATH``: ``auto`` is the new path unless ``--deterministic``; the other path's figure
when that one failed, said in the note), scaled by ``max(1, work / measured work)`` with work = batch x max length
x backbone parameters: a step smaller than the doctor's 32 x 64 BERT-base one is taken to cost as much (small
steps are launch-bound), a larger one proportionally more. The same with the lean loop's figure gives what a
minimal loop would need: the ratio of the two is what our loop costs the plan. A stage whose trainer has no
measured row falls back to the FLOP model at the report's matmul rate and the assumed utilisation, and is named.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.errors import ConfigError

STEP_TIMES_ENV = "BENCH_STEP_TIMES"


@dataclass(frozen=True)
class StepTimes:
    """A doctor report's measured steps: (trainer, precision) -> {column: median ms} and the size measured."""

    source: str
    device: str
    batch: int
    seq: int
    hidden: int  # the measured backbone's width and depth (BertConfig() defaults: BERT-base)
    layers: int
    rows: dict[tuple[str, str], dict[str, float]]
    rates: dict[str, float] = field(default_factory=dict)  # the report's matmul TFLOP/s per precision


def load_step_times(path: str | Path) -> StepTimes:
    """Read a ``bench doctor --json`` report; a report without training rows or made with ``--quick`` (a toy
    model: its steps say nothing about a real backbone) is refused with the reason."""
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"--step-times {path}: cannot read a doctor report ({e})") from None
    training = report.get("training") or {}
    if report.get("quick"):
        raise ConfigError(f"--step-times {path}: a `bench doctor --quick` report (a toy model); run `bench doctor "
                          "--device cuda --json FILE` for step times a plan can use")
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for r in training.get("rows", []):
        cols = {c: r[c]["median_ms"] for c in ("old", "new", "st", "lean")
                if isinstance(r.get(c), dict) and isinstance(r[c].get("median_ms"), (int, float))}
        if cols:
            rows[(r["method"], r["precision"])] = cols
    if not rows:
        raise ConfigError(f"--step-times {path}: no measured training rows (the report's training section is "
                          "missing, failed, or from a doctor before issue 36's timing)")
    rates = {k[7:]: float(v) for k, v in (report.get("matmul") or {}).items()
             if k.startswith("tflops_") and isinstance(v, (int, float))}
    return StepTimes(str(path), str((report.get("versions") or {}).get("device_name") or "the doctor's device"),
                     int(training.get("batch", 32)), int(training.get("seq", 64)), int(training.get("hidden", 768)),
                     int(training.get("layers", 12)), rows, rates)


def step_times_from(option: str | Path | None) -> StepTimes | None:
    """The option's file, else ``$BENCH_STEP_TIMES``'s, else None (the estimate then says what it assumed)."""
    import os

    path = option or os.environ.get(STEP_TIMES_ENV, "").strip()
    return load_step_times(path) if path else None


def run_path() -> str:
    """The step path a run started now would take on a GPU: "new" (fast path) or "old"."""
    from usebench.train.runtime import deterministic_requested
    from usebench.train.step_path import requested_choice

    choice = requested_choice(None)
    return "old" if choice == "off" or (choice == "auto" and deterministic_requested(None)) else "new"


def stage_precision(cfg: dict[str, Any]) -> str:
    """The doctor row a stage's ``amp`` maps to on a GPU (fp16 has no row: the bf16 figure stands in)."""
    return "bf16" if str(cfg.get("amp", "off")) in ("bf16", "auto", "fp16") else "fp32"
