"""Output heads shared by the generative methods (DenoSent's decoder, PaSeR's decoder and MLM loss).

Both methods predict vocabulary tokens with a BERT-style MLM head (dense + GELU + LayerNorm, then a projection
onto the vocabulary). :func:`mlm_head` returns the checkpoint's *pretrained* head (``BertForMaskedLM.cls``)
when the checkpoint has one, or a *fresh* head: HF's random initialisation of the transform (normal with the
config's ``initializer_range``, LayerNorm 1/0, bias 0) with the output projection taken from the encoder's
word embeddings. Sentence-transformers checkpoints such as the packaged all-MiniLM-L6-v2 are saved as a bare
``BertModel`` and have no MLM head: asking for ``"pretrained"`` there falls back to a fresh head and says so
(the returned flag and a log line).
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from torch import nn

from benchmark.errors import BenchError

HeadInit = Literal["pretrained", "fresh"]
log = logging.getLogger(__name__)


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' load report (a missing MLM head is expected and reported by us)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


def _head_of(mlm: nn.Module) -> tuple[str, nn.Module]:
    """(name, module) of the part of an ``*ForMaskedLM`` model that is not the base model."""
    others = [(n, m) for n, m in mlm.named_children() if n != mlm.base_model_prefix]
    if len(others) != 1:
        raise BenchError(f"{type(mlm).__name__}: expected one MLM head module beside "
                         f"{mlm.base_model_prefix!r}, found {[n for n, _ in others]}")
    return others[0]


def mlm_head(model: nn.Module, path: str, init: HeadInit = "pretrained", tie: bool = True
             ) -> tuple[nn.Module, bool]:
    """(head, pretrained?) mapping hidden states (..., hidden) to vocabulary logits (..., vocab).

    ``model``: the encoder (an HF base model such as ``BertModel``); ``path``: its checkpoint. ``tie``: the
    output projection *is* the encoder's word-embedding matrix (as in ``BertForMaskedLM``); otherwise it starts
    as a copy and trains separately.
    """
    from transformers import AutoModelForMaskedLM

    loaded = False
    mlm: nn.Module | None = None
    if init == "pretrained":
        with _quiet_transformers():
            mlm, info = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True)
        name, head = _head_of(mlm)
        missing = [k for k in info["missing_keys"] if k.startswith(name + ".")
                   and not k.endswith(("decoder.weight", "decoder.bias"))]  # tied to other weights
        loaded = not missing
        if not loaded:
            log.warning("%s has no pretrained MLM head (%d head weights missing): using a fresh head whose "
                        "output projection is the word-embedding matrix", path, len(missing))
    if mlm is None or not loaded:
        with _quiet_transformers():
            mlm = AutoModelForMaskedLM.from_config(model.config)
    _, head = _head_of(mlm)
    output = mlm.get_output_embeddings()
    words = model.get_input_embeddings().weight
    if output is None or output.weight.shape != words.shape:
        raise BenchError(f"{type(mlm).__name__}: its output projection does not match the word embeddings")
    output.weight = words if tie else nn.Parameter(words.detach().clone())
    return head, loaded
