"""Reference implementations of one training step: what ``bench doctor`` and ``scripts/bench_train.py`` time beside
ours (the ``st`` column).

Each reference is the step as its library writes it: sentence-transformers' loss modules on a
``SentenceTransformer`` (tokenised by ``model.preprocess``/``tokenize``, as its collate does), or transformers'
``DataCollatorForLanguageModeling`` + ``BertForMaskedLM`` for MLM (sentence-transformers has no MLM loss). A
:class:`RefStep` is split in two so that the timing can keep collation off the clock, as it does for ours:
``prepare`` (host: noise, tokenisation, padding, masking, labels) and ``loss`` (the device copy and the loss).
:class:`RefLoop` runs it as the Hugging Face Trainer that ``SentenceTransformerTrainer`` builds on would: its
default optimizer (``adamw_torch_fused``: fused AdamW where the device has it), gradient clipping at its default
``max_grad_norm`` 1.0, autocast for bf16/fp16 (a GradScaler for fp16).

Trainers without a packaged reference (ConSERT, BERT-flow, DenoSent, PaSeR: their reference code is a fork or a
research repository, not an installable library; the thesis' ``clm-ae``, ``mlm-ae``, ``simcse-clm``, ``simcse-mlm``,
``consert-clm``, ``consert-mlm``: R. Wang 2022 published no code) have none: :func:`reference_note` says why.
sentence-transformers is imported only when a reference is built; without it the references are skipped with a
note, never an error.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

HF_MAX_GRAD_NORM = 1.0  # transformers.TrainingArguments.max_grad_norm's default, which ST's trainer keeps
ST_METHODS = ("tsdae", "simcse", "ct", "ct-ibn", "sbert-mnrl", "sbert-nli", "sbert-cosine", "sbert-stsb")


@dataclass
class RefStep:
    """A reference model and its loss: ``prepare(items, rng)`` on the host (off the clock), ``loss(prepared)`` on
    the device."""

    label: str  # what the table calls it
    library: str  # "sentence-transformers" or "transformers"
    module: torch.nn.Module  # whose parameters train
    prepare: Callable[[list[Any], np.random.Generator], Any]
    loss: Callable[[Any], torch.Tensor]

    def step_loss(self, items: list[Any], rng: np.random.Generator) -> torch.Tensor:
        """Collate and loss in one call (collation on the clock: for callers that do not separate them)."""
        return self.loss(self.prepare(items, rng))


def st_installed() -> bool:
    """Whether sentence-transformers can be imported (checked without importing it)."""
    return importlib.util.find_spec("sentence_transformers") is not None


def reference_note(method: str) -> str | None:
    """Why ``method`` has no reference step here (None when it has one)."""
    if method == "mlm":
        return None
    if method not in ST_METHODS:
        return f"no installable reference for {method} (sentence-transformers has no such loss)"
    if not st_installed():
        return "sentence-transformers not installed: reference skipped (pip install sentence-transformers)"
    return None


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


def _on(value: Any, device: torch.device) -> Any:
    """A fresh dict/list of ``value``'s tensors on ``device`` (ST's modules write their outputs into the feature
    dicts they get: a prepared batch used again must not carry the last step's)."""
    if isinstance(value, torch.Tensor):
        return value.to(device, non_blocking=True)
    if isinstance(value, dict):
        return {k: _on(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_on(v, device) for v in value)
    return value


def _st(label: str, model: Any, loss_module: Any, columns: Callable[[list[Any], np.random.Generator], tuple]
        ) -> RefStep:
    """A RefStep around a sentence-transformers loss; ``columns(items, rng) -> (texts per column, labels)``."""
    device = next(model.parameters()).device  # where the weights are, whatever model.device reports
    # a loss with modules of its own (DenoisingAutoEncoderLoss builds its decoder on the CPU) trains where the model is
    loss_module.to(device)
    tokenize = model.preprocess if hasattr(model, "preprocess") else model.tokenize  # ST >= 6: preprocess

    def prepare(items: list[Any], rng: np.random.Generator) -> tuple[list[dict], Any]:
        cols, labels = columns(items, rng)
        return [dict(tokenize(col)) for col in cols], labels

    def loss(prepared: tuple[list[dict], Any]) -> torch.Tensor:
        features, labels = prepared
        return loss_module(_on(features, device), _on(labels, device))

    return RefStep(label, "sentence-transformers", loss_module, prepare, loss)


def _tsdae(path: str, cfg: Any, device: str) -> RefStep:
    from usebench.methods.parts.noise import delete_words

    model = st_model(path, cfg.max_length, "cls", device)
    module = st_losses().DenoisingAutoEncoderLoss(model, tie_encoder_decoder=True)

    def columns(texts, rng):  # DenoisingAutoEncoderDataset: (noisy, original); our punkt-free deletion noise
        return [[delete_words(t, cfg.noise_ratio, rng) for t in texts], list(texts)], None

    return _st("ST DenoisingAutoEncoderLoss", model, module, columns)


def _mnrl_self(path: str, cfg: Any, device: str) -> RefStep:
    model = st_model(path, cfg.max_length, "cls", device)
    return _st("ST MultipleNegativesRankingLoss (s, s)", model,
               st_losses().MultipleNegativesRankingLoss(model, scale=1 / cfg.temperature),
               lambda texts, rng: ([list(texts), list(texts)], None))


def _ct(path: str, cfg: Any, device: str) -> RefStep:
    from usebench.methods.ct import st_layout

    model = st_model(path, cfg.max_length, "mean", device)

    def columns(texts, rng):  # ContrastiveTensionDataLoader's pairs: every (K+1)-th identical
        a, b, labels = st_layout(list(range(len(texts))), cfg.negatives_k, cfg.batch_size)
        return [[texts[i] for i in a], [texts[i] for i in b]], torch.tensor(labels, dtype=torch.float32)

    return _st("ST ContrastiveTensionLoss", model, st_losses().ContrastiveTensionLoss(model), columns)


def _ct_ibn(path: str, cfg: Any, device: str) -> RefStep:
    from sentence_transformers import util

    model = st_model(path, cfg.max_length, "mean", device)
    sim = util.cos_sim if cfg.similarity == "cos" else util.dot_score
    return _st("ST ContrastiveTensionLossInBatchNegatives", model,
               st_losses().ContrastiveTensionLossInBatchNegatives(model, scale=cfg.logit_scale, similarity_fct=sim),
               lambda texts, rng: ([list(texts), list(texts)], None))


def _mnrl(path: str, cfg: Any, device: str) -> RefStep:
    model = st_model(path, cfg.max_length, cfg.pooling, device)
    return _st("ST MultipleNegativesRankingLoss", model,
               st_losses().MultipleNegativesRankingLoss(model, scale=cfg.scale),
               lambda rows, rng: ([[r[c] for r in rows] for c in range(len(rows[0]))], None))


def _cosine(path: str, cfg: Any, device: str) -> RefStep:
    model = st_model(path, cfg.max_length, cfg.pooling, device)

    def columns(rows, rng):
        labels = torch.tensor([r[2] for r in rows], dtype=torch.float32)
        return [[r[0] for r in rows], [r[1] for r in rows]], labels

    return _st("ST CosineSimilarityLoss", model, st_losses().CosineSimilarityLoss(model), columns)


class HFMaskedLM:
    """transformers' MLM pipeline: texts tokenised once (``dataset.map``), ``DataCollatorForLanguageModeling``
    pads and masks each batch, ``BertForMaskedLM`` computes the loss; ``masked_head_only`` is the same step with
    the LM head applied to the masked positions only (a plain loop's choice)."""

    def __init__(self, path: str, cfg: Any, device: str, texts: list[str], masked_head_only: bool):
        from transformers import AutoModelForMaskedLM, AutoTokenizer, DataCollatorForLanguageModeling

        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForMaskedLM.from_pretrained(path).to(device)
        self.collator = DataCollatorForLanguageModeling(self.tokenizer, mlm_probability=cfg.mlm_probability,
                                                        return_tensors="pt", seed=0)
        self.cfg, self.encoded = cfg, {}
        self.encode(texts)
        self.device, self.masked_head_only = torch.device(device), masked_head_only

    def encode(self, texts: list[str]) -> None:
        """Tokenise ``texts`` not seen yet (what ``dataset.map`` does once, before training)."""
        new = [t for t in dict.fromkeys(texts) if t not in self.encoded]
        if new:
            enc = self.tokenizer(new, truncation=True, max_length=self.cfg.max_length,
                                 return_special_tokens_mask=True)
            self.encoded.update({t: {k: enc[k][i] for k in enc} for i, t in enumerate(new)})

    def prepare(self, texts: list[str], rng: np.random.Generator) -> dict[str, torch.Tensor]:
        self.encode(texts)
        return dict(self.collator([self.encoded[t] for t in texts]))

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        batch = _on(batch, self.device)
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
    return RefStep(label, "transformers", ref.model, ref.prepare, ref.loss)


REFERENCES: dict[str, Callable[..., RefStep]] = {
    "tsdae": _tsdae, "simcse": _mnrl_self, "ct": _ct, "ct-ibn": _ct_ibn, "sbert-mnrl": _mnrl, "sbert-nli": _mnrl,
    "sbert-cosine": _cosine, "sbert-stsb": _cosine,
}


def reference(method: str, path: str, cfg: Any, device: str, texts: list[str], plain: bool = False) -> RefStep | None:
    """The reference step of ``method`` (``plain``: MLM's plain loop with the head on masked positions), or None
    (:func:`reference_note` says why)."""
    if method == "mlm":
        return _mlm(path, cfg, device, texts, masked_head_only=plain)
    if plain or reference_note(method) is not None:
        return None
    return REFERENCES[method](path, cfg, device)


def fused_adamw(params: list[torch.nn.Parameter], lr: float) -> tuple[torch.optim.Optimizer, str]:
    """(optimizer, label): torch's AdamW with ``fused=True`` (the HF Trainer's default ``adamw_torch_fused``), or
    its multi-tensor ``foreach`` form where this device or dtype has no fused kernel."""
    try:
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.0, fused=True), "AdamW fused"
    except (RuntimeError, ValueError):  # no fused kernel here: the next best, still no per-parameter loop
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.0, foreach=True), "AdamW foreach"


AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}  # fp32 and tf32 run without autocast


class RefLoop:
    """A plain training loop around a :class:`RefStep`: forward under autocast, backward, clip, optimizer step.
    ``optimizer="hf"``: the Hugging Face Trainer's default (fused AdamW, clipping at 1.0), what a user of
    ``SentenceTransformerTrainer`` gets; ``"trainer"``: the usebench trainer's own optimizer and clipping (isolates
    the loss step from the optimizer). ``amp``: "bf16" autocast, "fp16" autocast with a GradScaler (unscaled
    before clipping), or "fp32"/"tf32"/None."""

    def __init__(self, ref: RefStep, cfg: Any, device: str, amp: str | bool | None, optimizer: str = "hf"):
        from usebench.train.optim import build_optimizer

        named = [(n, p) for n, p in ref.module.named_parameters() if p.requires_grad]
        self.ref, self.params = ref, [p for _, p in named]
        if optimizer == "hf":
            self.optimizer, self.optimizer_label = fused_adamw(self.params, cfg.lr)
            self.clip: float | None = HF_MAX_GRAD_NORM
        else:
            self.optimizer, self.clip = build_optimizer(cfg, named), cfg.grad_clip
            self.optimizer_label = type(self.optimizer).__name__
        self.device = torch.device(device)
        self.amp = "bf16" if amp is True else (amp or "fp32")
        self.dtype = AUTOCAST.get(self.amp)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.amp == "fp16")
        ref.module.train()

    def step(self, items: list[Any], rng: np.random.Generator) -> None:
        """One step on raw items (collation included)."""
        self.step_prepared(self.ref.prepare(items, rng))

    def step_prepared(self, prepared: Any) -> None:
        """One step on a batch :attr:`RefStep.prepare` made."""
        with torch.autocast(self.device.type, dtype=self.dtype or torch.bfloat16, enabled=self.dtype is not None):
            loss = self.ref.loss(prepared)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        if self.clip is not None:
            torch.nn.utils.clip_grad_norm_(self.params, self.clip, foreach=True)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
