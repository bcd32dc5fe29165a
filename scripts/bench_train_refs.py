"""Reference implementations of one training step, for ``bench_train.py``.

Each reference is the step as its library writes it: sentence-transformers' loss modules on a
``SentenceTransformer`` (tokenised per step by ``model.tokenize``, as its ``smart_batching_collate`` does), or
transformers' ``DataCollatorForLanguageModeling`` + ``BertForMaskedLM`` (texts tokenised once beforehand, as
``run_mlm.py``'s ``dataset.map`` does; padding and masking per step by the collator). They run in a plain
PyTorch loop (collate, forward, backward, clip 1.0, optimizer step) with the same optimizer class and settings
as the trainer they are compared with, on the same texts per step, so what differs is the step itself.

Methods without a packaged reference (ConSERT, BERT-flow, DenoSent, PaSeR: their reference code is a fork or a
research repository, not an installable library; the thesis' ``clm-ae``, ``mlm-ae``, ``simcse-clm``, ``simcse-mlm``,
``consert-clm``, ``consert-mlm``: R. Wang 2022 published no code) have none; the table says so.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from usebench.train.optim import build_optimizer


@dataclass
class RefStep:
    """A reference model and its loss on one step's items (texts or labeled examples)."""

    label: str  # what the table calls it
    module: torch.nn.Module
    loss: Callable[[list[Any], np.random.Generator], torch.Tensor]


def st_model(path: str, max_length: int, pooling: str, device: str) -> Any:
    """A ``SentenceTransformer``: Transformer(max_seq_length) + Pooling(mode), as the [ST] examples build it, on
    ``device``. Moved there explicitly: sentence-transformers 6 leaves a model built from modules on the CPU
    whatever ``device`` says (its ``device`` then only names where ``encode`` sends inputs)."""
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers >= 6
        from sentence_transformers.base.modules import Transformer
        from sentence_transformers.sentence_transformer.modules import Pooling
    except ImportError:  # 3.x - 5.x
        from sentence_transformers.models import Pooling, Transformer

    enc = Transformer(path, max_seq_length=max_length)
    width = enc.get_embedding_dimension() if hasattr(enc, "get_embedding_dimension") else \
        enc.get_word_embedding_dimension()
    model = SentenceTransformer(modules=[enc, Pooling(width, pooling)], device=device)
    return model.to(device)


def st_losses() -> Any:
    """sentence-transformers' losses module (moved under ``sentence_transformer`` in 6)."""
    try:
        from sentence_transformers.sentence_transformer import losses
    except ImportError:
        from sentence_transformers import losses
    return losses


def _features(model: Any, columns: list[list[str]]) -> list[dict[str, torch.Tensor]]:
    """Per column: ``model.preprocess`` (sentence-transformers >= 6; ``tokenize`` before, deprecated since) then
    to the model's device (sentence-transformers' collate)."""
    from sentence_transformers.util import batch_to_device

    prepare = model.preprocess if hasattr(model, "preprocess") else model.tokenize
    device = next(model.parameters()).device  # where the weights are, whatever model.device reports
    return [batch_to_device(prepare(col), device) for col in columns]


def _st(label: str, model: Any, loss_module: Any, columns: Callable[[list[Any], np.random.Generator], tuple]):
    # a loss with modules of its own (DenoisingAutoEncoderLoss builds its decoder on the CPU) trains where the model is
    loss_module.to(next(model.parameters()).device)
    def loss(items: list[Any], rng: np.random.Generator) -> torch.Tensor:
        cols, labels = columns(items, rng)
        return loss_module(_features(model, cols), labels)

    return RefStep(label, loss_module, loss)


def _tsdae(path: str, cfg: Any, device: str) -> RefStep:
    DenoisingAutoEncoderLoss = st_losses().DenoisingAutoEncoderLoss

    from usebench.methods.parts.noise import delete_words

    model = st_model(path, cfg.max_length, "cls", device)
    module = DenoisingAutoEncoderLoss(model, tie_encoder_decoder=True)

    def columns(texts, rng):  # DenoisingAutoEncoderDataset: (noisy, original); our punkt-free deletion noise
        return [[delete_words(t, cfg.noise_ratio, rng) for t in texts], list(texts)], None

    return _st("ST DenoisingAutoEncoderLoss", model, module, columns)


def _mnrl_self(path: str, cfg: Any, device: str) -> RefStep:
    MultipleNegativesRankingLoss = st_losses().MultipleNegativesRankingLoss

    model = st_model(path, cfg.max_length, "cls", device)
    return _st("ST MultipleNegativesRankingLoss (s, s)", model,
               MultipleNegativesRankingLoss(model, scale=1 / cfg.temperature),
               lambda texts, rng: ([list(texts), list(texts)], None))


def _ct(path: str, cfg: Any, device: str) -> RefStep:
    ContrastiveTensionLoss = st_losses().ContrastiveTensionLoss

    from usebench.methods.ct import st_layout

    model = st_model(path, cfg.max_length, "mean", device)

    def columns(texts, rng):  # ContrastiveTensionDataLoader's pairs: every (K+1)-th identical
        a, b, labels = st_layout(list(range(len(texts))), cfg.negatives_k, cfg.batch_size)
        return [[texts[i] for i in a], [texts[i] for i in b]], torch.tensor(labels, dtype=torch.float32,
                                                                             device=model.device)

    return _st("ST ContrastiveTensionLoss", model, ContrastiveTensionLoss(model), columns)


def _ct_ibn(path: str, cfg: Any, device: str) -> RefStep:
    from sentence_transformers import util
    ContrastiveTensionLossInBatchNegatives = st_losses().ContrastiveTensionLossInBatchNegatives

    model = st_model(path, cfg.max_length, "mean", device)
    sim = util.cos_sim if cfg.similarity == "cos" else util.dot_score
    return _st("ST ContrastiveTensionLossInBatchNegatives", model,
               ContrastiveTensionLossInBatchNegatives(model, scale=cfg.logit_scale, similarity_fct=sim),
               lambda texts, rng: ([list(texts), list(texts)], None))


def _mnrl(path: str, cfg: Any, device: str) -> RefStep:
    MultipleNegativesRankingLoss = st_losses().MultipleNegativesRankingLoss

    model = st_model(path, cfg.max_length, cfg.pooling, device)
    return _st("ST MultipleNegativesRankingLoss", model, MultipleNegativesRankingLoss(model, scale=cfg.scale),
               lambda rows, rng: ([[r[c] for r in rows] for c in range(len(rows[0]))], None))


def _cosine(path: str, cfg: Any, device: str) -> RefStep:
    CosineSimilarityLoss = st_losses().CosineSimilarityLoss

    model = st_model(path, cfg.max_length, cfg.pooling, device)

    def columns(rows, rng):
        labels = torch.tensor([r[2] for r in rows], dtype=torch.float32, device=model.device)
        return [[r[0] for r in rows], [r[1] for r in rows]], labels

    return _st("ST CosineSimilarityLoss", model, CosineSimilarityLoss(model), columns)


class HFMaskedLM:
    """transformers' MLM pipeline: texts tokenised once (``dataset.map``), ``DataCollatorForLanguageModeling``
    pads and masks each batch, ``BertForMaskedLM`` computes the loss; ``masked_head_only`` is the same step with
    the LM head applied to the masked positions only (the plain loop the trainer is held to)."""

    def __init__(self, path: str, cfg: Any, device: str, texts: list[str], masked_head_only: bool):
        from transformers import AutoModelForMaskedLM, AutoTokenizer, DataCollatorForLanguageModeling

        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForMaskedLM.from_pretrained(path).to(device)
        self.collator = DataCollatorForLanguageModeling(self.tokenizer, mlm_probability=cfg.mlm_probability,
                                                        return_tensors="pt", seed=0)
        enc = self.tokenizer(texts, truncation=True, max_length=cfg.max_length, return_special_tokens_mask=True)
        self.encoded = {t: {k: enc[k][i] for k in enc} for i, t in enumerate(texts)}
        self.device, self.masked_head_only = device, masked_head_only

    def loss(self, texts: list[str], rng: np.random.Generator) -> torch.Tensor:
        batch = {k: v.to(self.device) for k, v in self.collator([self.encoded[t] for t in texts]).items()}
        if not self.masked_head_only:
            return self.model(**batch).loss
        labels = batch.pop("labels")
        hidden = self.model.base_model(**batch).last_hidden_state  # (bsz, len, h)
        where = labels != -100
        logits = self.model.cls(hidden[where])  # (masked, vocab)
        return F.cross_entropy(logits, labels[where])


def _mlm(path: str, cfg: Any, device: str, texts: list[str], masked_head_only: bool = False) -> RefStep:
    ref = HFMaskedLM(path, cfg, device, texts, masked_head_only)
    label = "plain loop, head on masked positions" if masked_head_only else \
        "HF DataCollatorForLanguageModeling + BertForMaskedLM"
    return RefStep(label, ref.model, ref.loss)


REFERENCES: dict[str, Callable[..., RefStep]] = {
    "tsdae": _tsdae, "simcse": _mnrl_self, "ct": _ct, "ct-ibn": _ct_ibn, "sbert-mnrl": _mnrl, "sbert-nli": _mnrl,
    "sbert-cosine": _cosine, "sbert-stsb": _cosine,
}


def reference(method: str, path: str, cfg: Any, device: str, texts: list[str], plain: bool = False) -> RefStep | None:
    """The reference step of ``method`` (``plain``: MLM's plain loop with the head on masked positions), or None."""
    if method == "mlm":
        return _mlm(path, cfg, device, texts, masked_head_only=plain)
    if plain or method not in REFERENCES:
        return None
    return REFERENCES[method](path, cfg, device)


class RefLoop:
    """A plain training loop around a :class:`RefStep`: the trainer's optimizer and clipping, nothing else.
    ``amp``: "bf16" autocast, "fp16" autocast with a GradScaler (unscaled before clipping, as the fp16 references
    do), or "fp32"/None."""

    def __init__(self, ref: RefStep, cfg: Any, device: str, amp: str | bool | None):
        named = [(n, p) for n, p in ref.module.named_parameters() if p.requires_grad]
        self.ref, self.params = ref, [p for _, p in named]
        self.optimizer = build_optimizer(cfg, named)
        self.clip, self.device = cfg.grad_clip, torch.device(device)
        self.amp = "bf16" if amp is True else (amp or "fp32")
        self.dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.amp)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.amp == "fp16")
        ref.module.train()

    def step(self, items: list[Any], rng: np.random.Generator) -> None:
        with torch.autocast(self.device.type, dtype=self.dtype or torch.bfloat16, enabled=self.dtype is not None):
            loss = self.ref.loss(items, rng)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        if self.clip is not None:
            torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
