"""Output heads shared by the generative methods (DenoSent's decoder, PaSeR's decoder and MLM loss, TSDAE, MLM).

Both methods predict vocabulary tokens with a BERT-style MLM head (dense + GELU + LayerNorm, then a projection
onto the vocabulary). :func:`mlm_head` returns the checkpoint's *pretrained* head (``BertForMaskedLM.cls``)
when the checkpoint has one, or a *fresh* head: HF's random initialisation of the transform (normal with the
config's ``initializer_range``, LayerNorm 1/0, bias 0) with the output projection taken from the encoder's
word embeddings. Sentence-transformers checkpoints such as the packaged all-MiniLM-L6-v2 are saved as a bare
``BertModel`` and have no MLM head: asking for ``"pretrained"`` there falls back to a fresh head and says so
(the returned flag and a log line).

A masked-token loss needs the vocabulary logits only where there is a label (15% of the tokens for MLM, the
non-pad target tokens for a decoder): :func:`label_positions` finds those positions once, on the host (in
``collate``, so no device synchronisation is needed to size the gather), and :func:`labelled_ce` runs the head
on those rows only. The loss equals cross-entropy over the head of every position with the others ignored, to
float rounding, and so do its gradients (``tests/methods/test_labelled_head.py``). Any method that projects
onto a vocabulary (the MLM autoencoders too) should use them.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from usebench.errors import BenchError
from usebench.train import static_shapes

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
        # torch's RNG as it was afterwards: a checkpoint without a head then falls back to exactly the head that
        # init="fresh" draws at the same seed (loading initialises the missing weights, drawing from the RNG)
        with _quiet_transformers(), torch.random.fork_rng(devices=[]):
            mlm, info = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True)
        name, head = _head_of(mlm)
        missing = [k for k in info["missing_keys"] if k.startswith(name + ".")
                   and not k.endswith(("decoder.weight", "decoder.bias"))]  # tied to other weights
        loaded = not missing
        if not loaded:
            log.warning("%s has no pretrained MLM head (%d head weights missing): using a fresh head whose "
                        "output projection %s the word-embedding matrix", path, len(missing),
                        "is" if tie else "starts as a copy of")
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


IGNORE = -100  # the label of positions without a target (torch's and HF's ignore_index)


def label_positions(labels: torch.Tensor, ignore_index: int = IGNORE) -> tuple[torch.Tensor, torch.Tensor]:
    """(flat positions, targets) of the labelled entries of ``labels`` (any shape, row-major), both (n,) int64.

    Call it where the labels are made (``collate``, on the host): the number of positions is then known before
    the batch reaches the device, and :func:`labelled_ce` gathers without a host synchronisation. In a fast-path
    collate both are padded up to a count bucket with ignored entries (:func:`usebench.train.static_shapes.
    pad_labelled`): the same loss, on one of a few shapes."""
    flat = labels.reshape(-1)
    positions = (flat != ignore_index).nonzero().squeeze(1)
    if static_shapes.active():
        return static_shapes.pad_labelled(positions, flat[positions])
    return positions, flat[positions]


# Heads split over several child modules, in the order the model's forward applies them
SPLIT_HEADS = (("vocab_transform", "activation", "vocab_layer_norm", "vocab_projector"),  # DistilBERT
               ("generator_predictions", "generator_lm_head"))  # ELECTRA's generator (ForMaskedLM / ForCausalLM)


def lm_head_of(mlm: nn.Module) -> nn.Module:
    """The vocabulary head of an HF ``*ForMaskedLM`` / ``*LMHeadModel`` / ``*ForCausalLM`` (hidden states ->
    logits): the one child module beside the base model (BERT's ``cls``, RoBERTa's ``lm_head``), or the parts of
    a split head (DistilBERT's four, ELECTRA's two) in the order its forward applies them."""
    for names in SPLIT_HEADS:
        if all(isinstance(getattr(mlm, n, None), nn.Module) for n in names):
            return nn.Sequential(*(getattr(mlm, n) for n in names))
    return _head_of(mlm)[1]


def labelled_ce(head: nn.Module, hidden: torch.Tensor, positions: torch.Tensor, targets: torch.Tensor
                ) -> torch.Tensor:
    """Mean cross-entropy of ``head`` at the labelled positions only.

    hidden: (..., h) states whose leading dimensions ``positions`` index row-major (see :func:`label_positions`);
    targets: (n,). The head runs on the n gathered rows, not on every position; logits are fp32 for the loss
    (also under autocast). With no labelled position the loss is 0 and still depends on the head's parameters
    (torch's mean over nothing would be NaN)."""
    rows = hidden.reshape(-1, hidden.shape[-1]).index_select(0, positions)  # (n, h)
    logits = head(rows).float()  # (n, vocab)
    if positions.numel() == 0:  # a shape, known on the host: no synchronisation
        return logits.sum() * 0.0
    return F.cross_entropy(logits, targets)
