"""``bench doctor``'s training section (issue 36): per trainer and precision, our step on the old path
(``fast_path="off"``) and the new path (``"on"``), sentence-transformers' step for the same loss where one exists
(:mod:`usebench.doctor.references`), and the lean loop around the same module
(:mod:`usebench.doctor.lean`), all timed alike (:mod:`usebench.doctor.steptime`: pre-collated batches, a
warm-up over every shape, the median of >= 20 synced steps and a window mean); the figures are the ratios
ours/ST and ours/lean, with the MFU of each column and the step path's notes.

Batches are real ``batch x seq`` ones: every sentence has more words than ``seq`` tokens (each of the doctor's words
is one token), so every row of every text column fills the length (TSDAE's noisy encoder input excepted: the
deletion shortens it, as in training).
"""
from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.doctor.common import Size, device_name, peak_mb, reset_peak

PATHS = {"old": "off", "new": "on"}  # column -> train(fast_path=...)
COLUMNS = ("old", "new", "st", "lean")
INSIDE = ("median of per-step times (a device sync at each step boundary) after a warm-up over every batch shape; "
          "window mean = the same steps with syncs at the window's edges only; collate, loss read-back and export "
          "outside the clock")


@dataclass(frozen=True)
class StepBench:
    """Where and how big: the device, the model, the batch, the timed steps per pass, the least warm-up."""

    device: str
    model: str
    batch: int
    seq: int
    steps: int = 20
    min_warmup: int = 3
    paths: tuple[str, ...] = ("old",)
    rates: dict[str, Any] = field(default_factory=dict)  # the matmul section's tflops_<precision>
    lean_optimizer: str = "fused"  # the lean loop's: "fused" AdamW, or "trainer" (ours: the loop's overhead alone)


@dataclass
class Setup:
    """What every column of one trainer shares: its data, the examples as the loop prepares them, the n batches
    of steps 0..n-1 collated as the loop collates them (the lean loop's and the FLOP count's), and the prepared
    sentence-transformers batches (made once, reused at every precision)."""

    method: Any
    cfg: Any  # the config the batches were collated with (fp32; amp does not change a batch)
    data: list[Any]
    examples: list[Any]
    tokenizer: Any
    config: Any
    batches: list[Any]
    flops: float | None
    ref_batches: list[Any] | None = None
    notes: list[str] = field(default_factory=list)


def amp_of(precision: str) -> str:
    """The trainers' ``amp`` setting of a column's precision (TF32 is fp32 with a global matmul setting)."""
    return "bf16" if precision == "bf16" else "fp16" if precision == "fp16" else "off"


def trainer_setup(method: Any, bench: StepBench) -> Setup:
    """Data, examples, collated batches and FLOPs of ``method`` at ``bench``'s size."""
    from transformers import AutoConfig, AutoTokenizer

    from usebench.eval.models import resolve_model
    from usebench.doctor.trainers import method_config, training_data
    from usebench.doctor.flops import step_gemms
    from usebench.train.batches import collate_step
    from usebench.train.loop import prepare_corpus

    cfg = method_config(method, bench.model, Size(batch=bench.batch, seq=bench.seq), "off", bench.steps)
    per_step = method.sentences_per_step(cfg)
    data = training_data(method, max(64, per_step * (bench.steps + 2)), words=(bench.seq, bench.seq + 8))
    if method.data_kind == "labeled":
        examples = method.prepare_examples(cfg, data, cfg.batch_size)
    else:
        examples = prepare_corpus(method.filter_corpus(cfg, prepare_corpus(data, cfg, 1)), cfg, cfg.batch_size)
    path = resolve_model(cfg.model).path
    tokenizer, config = AutoTokenizer.from_pretrained(path), AutoConfig.from_pretrained(path)
    batches = [collate_step(method, cfg, tokenizer, examples, step, 0) for step in range(bench.steps)]
    gemms = [step_gemms(method.name, cfg, config, b, int(tokenizer.pad_token_id)) for b in batches]
    flops = None if any(g is None for g in gemms) else statistics.mean(sum(x.flops for x in g) for g in gemms)
    return Setup(method, cfg, data, examples, tokenizer, config, batches, flops)


def batch_fill(batch: Any) -> tuple[dict[str, list[int]], float | None]:
    """(shape of every 2-D integer tensor, fraction of real tokens over every attention mask) of a batch: the
    evidence that each step is batch x seq tokens."""
    import torch

    shapes: dict[str, list[int]] = {}
    masks: list[torch.Tensor] = []

    def walk(v: Any, name: str) -> None:
        if isinstance(v, torch.Tensor):
            if v.ndim == 2 and not v.dtype.is_floating_point:
                shapes[name] = list(v.shape)
                if "attention_mask" in name:
                    masks.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{name}.{k}" if name else str(k))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, f"{name}[{i}]")

    walk(batch, "")
    real = sum(float(m.sum()) for m in masks)
    total = sum(m.numel() for m in masks)
    return shapes, (real / total if total else None)


def column(fn: Callable[[], dict[str, Any]], device: str) -> dict[str, Any]:
    """One column's record, its peak GPU memory, or its error (a failing column is a finding, not the end)."""
    reset_peak(device)
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {e}"[:500]}
    if "skipped" not in out:
        out["peak_gpu_mb"] = peak_mb(device)
    return out


@contextmanager
def tf32_policy(precision: str) -> Iterator[None]:
    """The fast path's TF32 policy for the column (``$BENCH_TF32``): off for fp32, so the fp32 column is full
    precision on both paths, on for the tf32 column; the previous value afterwards."""
    import os

    from usebench.train.step_path import TF32_ENV

    before = os.environ.get(TF32_ENV)
    os.environ[TF32_ENV] = "on" if precision == "tf32" else "off"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TF32_ENV, None)
        else:
            os.environ[TF32_ENV] = before


def ours_column(setup: Setup, bench: StepBench, precision: str, path: str) -> dict[str, Any]:
    """Ours on ``path`` ("old" or "new") through the real loop."""
    from usebench.doctor.steptime import fresh_compile_state, matmul_precision, time_train
    from usebench.doctor.trainers import method_config

    cfg = method_config(setup.method, bench.model, Size(batch=bench.batch, seq=bench.seq), amp_of(precision),
                        bench.steps)
    if path == "new":
        fresh_compile_state()
    with tempfile.TemporaryDirectory() as tmp, matmul_precision(precision), tf32_policy(precision):
        timing, facts = time_train(setup.method, cfg, setup.data, bench.device, PATHS[path], bench.steps,
                                   bench.min_warmup, Path(tmp))
    notes = list(timing.notes) + list(facts["step_path"].get("notes", []))
    if precision == "fp32" and facts["tf32_in_run"]:
        notes.append("TF32 was on during this fp32 run (the path's TF32 policy)")
    if facts.get("skipped_steps"):  # fp16: each path's overflows, side by side (issue 50)
        notes.append(f"{facts['skipped_steps']} step(s) skipped by the fp16 loss scaler (overflow)")
    return {**timing.record(), **facts, "notes": notes}


def st_column(setup: Setup, bench: StepBench, precision: str) -> dict[str, Any]:
    """sentence-transformers' (or, for MLM, transformers') step for the same loss, or why there is none."""
    import numpy as np

    from usebench.eval.models import resolve_model
    from usebench.doctor.references import RefLoop, reference, reference_note
    from usebench.doctor.steptime import matmul_precision, time_steps
    from usebench.doctor.trainers import method_config

    note = reference_note(setup.method.name)
    if note is not None:
        return {"skipped": note}
    cfg = method_config(setup.method, bench.model, Size(batch=bench.batch, seq=bench.seq), amp_of(precision),
                        bench.steps)
    texts = [t for t in setup.examples if isinstance(t, str)]
    with matmul_precision(precision):
        ref = reference(setup.method.name, resolve_model(cfg.model).path, cfg, bench.device, texts)
        if ref is None:
            return {"skipped": "no reference step"}
        loop = RefLoop(ref, cfg, bench.device, amp=precision, optimizer="hf")
        if setup.ref_batches is None:  # the same examples per step as ours; noise from the step's own RNG
            setup.ref_batches = [ref.prepare(_items(setup, cfg, step), np.random.default_rng([0, step]))
                                 for step in range(bench.steps)]
        timing = time_steps(loop.step_prepared, setup.ref_batches, bench.device, bench.min_warmup)
    return {**timing.record(), "label": ref.label, "library": ref.library, "optimizer": loop.optimizer_label}


def _items(setup: Setup, cfg: Any, step: int) -> list[Any]:
    return [setup.examples[i] for i in setup.method.batch_indices(cfg, len(setup.examples), step, 0)]


def lean_column(setup: Setup, bench: StepBench, precision: str) -> dict[str, Any]:
    """The lean loop around the same module, on the same collated batches as ours."""
    from usebench.doctor.lean import LeanStep
    from usebench.doctor.steptime import matmul_precision, pinned, time_steps
    from usebench.doctor.trainers import method_config

    cfg = method_config(setup.method, bench.model, Size(batch=bench.batch, seq=bench.seq), amp_of(precision),
                        bench.steps)
    batches = [pinned(b) for b in setup.batches] if bench.device.startswith("cuda") else setup.batches
    with matmul_precision(precision):
        lean = LeanStep(setup.method, cfg, bench.device, precision, optimizer=bench.lean_optimizer)
        timing = time_steps(lean.step, batches, bench.device, bench.min_warmup)
    return {**timing.record(), "label": "lean loop (same module)", "optimizer": lean.optimizer_label}


def mfu(flops: float | None, record: dict[str, Any], rate_tflops: float | None) -> float | None:
    """Model FLOP utilisation of a column at its median step against ``rate_tflops`` (None when unknown)."""
    ms = record.get("median_ms")
    return flops / (ms / 1e3) / (rate_tflops * 1e12) if flops and ms and rate_tflops else None


def ratios(row: dict[str, Any]) -> dict[str, float | None]:
    """ours/ST and ours/lean for each of our paths, from the medians (< 1: ours is faster)."""
    def ms(name: str) -> float | None:
        return row.get(name, {}).get("median_ms")

    return {f"{ours}_over_{other}": (ms(ours) / ms(other) if ms(ours) and ms(other) else None)
            for ours in ("old", "new") for other in ("st", "lean")}


def training_row(setup: Setup, bench: StepBench, precision: str) -> dict[str, Any]:
    """One trainer at one precision: every column, the ratios, MFU against the measured and the datasheet rate."""
    from usebench.doctor.hardware import datasheet_peak

    shapes, fill = batch_fill(setup.batches[0])
    row: dict[str, Any] = {"method": setup.method.name, "precision": precision,
                           "gflop": None if setup.flops is None else setup.flops / 1e9, "batch_shapes": shapes,
                           "fill": fill, "notes": list(setup.notes)}
    if precision == "tf32" and not bench.device.startswith("cuda"):
        row["notes"].append("TF32 is a CUDA mode: on a CPU this column is fp32")
    for path in bench.paths:
        row[path] = column(lambda: ours_column(setup, bench, precision, path), bench.device)
    row["st"] = column(lambda: st_column(setup, bench, precision), bench.device)
    row["lean"] = column(lambda: lean_column(setup, bench, precision), bench.device)
    measured = bench.rates.get(f"tflops_{precision}")
    sheet = datasheet_peak(device_name(bench.device), precision) if bench.device.startswith("cuda") else None
    for name in COLUMNS:
        if "median_ms" in row.get(name, {}):
            row[name]["mfu_measured"] = mfu(setup.flops, row[name], measured)
            row[name]["mfu_datasheet"] = mfu(setup.flops, row[name], sheet[1] if sheet else None)
    row["datasheet_tflops"] = sheet[1] if sheet else None
    row["ratios"] = ratios(row)
    return row


def training(device: str, size: Size, model: str, rates: dict[str, Any], trainers: tuple[str, ...],
             log: Callable[[str], None], partial: Callable[[list[dict[str, Any]]], None] | None = None,
             paths: tuple[str, ...] = ("old",), precisions: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Every trainer at every precision (default fp32, TF32 and bf16 on a GPU; fp32 and bf16 on a CPU), fp32
    first: each column warms itself up, so no precision runs warm on another's kernels. ``partial(rows)`` after
    each row, so a run cut short keeps them."""
    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench.registry import METHODS

    precisions = precisions or (("fp32", "tf32", "bf16") if device.startswith("cuda") else ("fp32", "bf16"))
    bench = StepBench(device, model, size.batch, size.seq, size.timed_steps, size.min_warmup, paths, rates)
    rows: list[dict[str, Any]] = []
    for trainer in trainers:
        try:
            setup = trainer_setup(METHODS.get(trainer), bench)
        except Exception as e:  # noqa: BLE001  a trainer whose data or collate fails is a finding
            rows += [{"method": trainer, "precision": p, "error": f"{type(e).__name__}: {e}"[:500]}
                     for p in precisions]
            continue
        for precision in precisions:
            rows.append(training_row(setup, bench, precision))
            if partial is not None:
                partial(rows)
            log(f"  training {trainer} {precision}: {row_brief(rows[-1])}")
    out = {"batch": size.batch, "seq": size.seq, "hidden": size.hidden, "layers": size.layers,
           "timed_steps": size.timed_steps, "min_warmup": size.min_warmup, "paths": list(paths),
           "precisions": list(precisions), "clock": INSIDE, "rows": rows}
    if size.timed_steps < 20:
        out["note"] = (f"{size.timed_steps} timed steps per pass (--quick): a smoke run of the timing on a toy "
                       "model, not a measurement")
    return out


def row_brief(row: dict[str, Any]) -> str:
    """ms/step of each column (or its error), for the progress log."""
    if "error" in row:
        return f"ERROR {row['error']}"
    parts = []
    for name in COLUMNS:
        c = row.get(name)
        if c is not None:
            parts.append(f"{name} " + (f"{c['median_ms']:.1f} ms" if "median_ms" in c else
                                       "ERROR" if "error" in c else "-"))
    return ", ".join(parts)
