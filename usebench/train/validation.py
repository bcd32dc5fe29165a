"""Checkpoint selection by validation loss: the training objective on held-out sentences (``dev_metric=loss``).

R. Wang 2022 (thesis) Sec. 5.2.2: "For the best model checkpoint selection we use validation loss i.e. loss on
validation dataset as default. The domain of the validation dataset is consistent with the training dataset ...
We evaluate the model checkpoint every 250 steps". The loss is the method's own (``TrainModule.forward``) over the
whole batches of ``dev_corpus``, in eval mode without gradients, as the HF Trainer's ``evaluate`` computes an
eval loss (so SimCSE's two dropout views coincide there); each batch's noise (masks, augmentations) comes from a
fixed RNG, so every evaluation of a run scores the same inputs and scores are comparable across steps.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from usebench.data.corpus import read_corpus
from usebench.errors import BenchError
from usebench.train.config import TrainConfig
from usebench.train.runtime import autocast_context, to_device

VALIDATION_SEED = 0x7A11D  # the validation batches' RNG root (fixed: the same inputs at every evaluation)


def read_dev_corpus(cfg: TrainConfig, batch: int) -> list[str]:
    """The validation sentences (stripped, blank lines dropped, clipped as training lines); at least one batch."""
    if not cfg.dev_corpus:
        raise BenchError("dev_metric=loss selects checkpoints by the loss on held-out sentences: pass them with "
                         "--set dev_corpus=FILE (one sentence a line, from the training corpus' domain), or turn "
                         "the selection off with --set dev_every=0")
    texts = [t[: cfg.max_chars] for t in read_corpus(cfg.dev_corpus)]
    if len(texts) < batch:
        raise BenchError(f"dev_corpus {cfg.dev_corpus} has {len(texts)} sentences, fewer than one batch ({batch})")
    return texts


def corpus_sha256(texts: list[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass") + b"\n")
    return h.hexdigest()


def validation_loss(method: Any, cfg: TrainConfig, module: Any, texts: list[str], device: torch.device) -> float:
    """Mean loss over the ``len(texts) // batch_size`` whole batches of ``texts`` (eval mode, no gradients)."""
    bs = method.sentences_per_step(cfg)
    was_training = module.training
    module.eval()
    losses = []
    try:
        with torch.no_grad(), autocast_context(cfg, device):
            for k in range(len(texts) // bs):
                batch = method.collate(cfg, module.tokenizer, texts[k * bs : (k + 1) * bs],
                                       np.random.default_rng([VALIDATION_SEED, k]))
                out = module(to_device(batch, device))
                losses.append(float((out["loss"] if isinstance(out, dict) else out).detach()))
    finally:
        module.train(was_training)
    return float(np.mean(losses))


def loss_evaluator(method: Any, cfg: TrainConfig, module: Any, texts: list[str],
                   device: torch.device) -> Callable[[Any], float]:
    """A ``dev_eval`` for the loop: higher is better, so it returns the negated validation loss."""
    return lambda _checkpoint: -validation_loss(method, cfg, module, texts, device)
