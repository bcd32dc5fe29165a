"""ConSERT's embedding-level augmentations (Yan et al. 2021, ACL; yym6472/ConSERT).

The reference applies them *inside* the BERT forward (its patched ``transformers/modeling_bert.py``):

- ``shuffle``: permute the **position ids** of the real tokens ([CLS]/[SEP] included, padding excluded); the token
  embeddings stay where they are.
- ``token_cutoff`` ("row"): zero ``int(rate * n_real)`` whole token rows of the embedding-layer output (after its
  LayerNorm/dropout). The attention mask is unchanged, so zeroed tokens are still attended and pooled.
- ``feature_cutoff`` ("column"): zero ``int(rate * hidden)`` hidden dimensions at every position of a sentence
  (the columns are drawn per sentence).
- ``dropout`` ("random"): zero ``int(rate * n_real * hidden)`` random elements within the real-token rows.

None of them rescales the survivors (unlike ``nn.Dropout``). Random draws use a python ``random.Random`` as the
reference does (its ``random.shuffle``), so seeding python's RNG makes them reproducible.

Functions here are pure (new tensors, no in-place writes), so gradients flow to the surviving elements.
:func:`augmented_forward` wires them into an HF encoder: shuffle via ``position_ids``, the cutoffs via a forward
hook on ``model.embeddings``.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal, get_args

import torch

from usebench.errors import ConfigError

Augmentation = Literal["none", "shuffle", "token_cutoff", "feature_cutoff", "dropout"]
AUGMENTATIONS: tuple[str, ...] = get_args(Augmentation)
# The cutoffs act on the embedding-layer output; shuffle acts on the position ids.
EMBEDDING_AUGMENTATIONS = ("token_cutoff", "feature_cutoff", "dropout")


def shuffle_position_ids(attention_mask: torch.Tensor, rng: random.Random) -> torch.Tensor:
    """Position ids (bsz, seq) with the ids of each sentence's real tokens permuted; padding keeps its own ids.

    Base ids are ``arange(seq)`` (what BERT uses when none are given). With right padding the real tokens hold
    ids ``0..n_real-1`` and, after the shuffle, a permutation of exactly that range, as in the reference.
    """
    bsz, seq = attention_mask.shape
    position_ids = torch.arange(seq, device=attention_mask.device).repeat(bsz, 1)  # (bsz, seq)
    for row in range(bsz):
        real = attention_mask[row].nonzero(as_tuple=True)[0]  # (n_real,)
        order = list(range(len(real)))
        rng.shuffle(order)
        position_ids[row, real] = position_ids[row, real[torch.tensor(order, dtype=torch.long, device=real.device)]]
    return position_ids


def _keep_mask_like(emb: torch.Tensor) -> torch.Tensor:
    return torch.ones(emb.shape, dtype=emb.dtype, device=emb.device)


def token_cutoff(emb: torch.Tensor, attention_mask: torch.Tensor, rate: float, rng: random.Random) -> torch.Tensor:
    """Zero ``int(rate * n_real)`` randomly chosen real-token rows per sentence. emb: (bsz, seq, hidden)."""
    keep = _keep_mask_like(emb)
    for row in range(emb.shape[0]):
        real = attention_mask[row].nonzero(as_tuple=True)[0].tolist()
        for pos in rng.sample(real, int(rate * len(real))):
            keep[row, pos, :] = 0
    return emb * keep


def feature_cutoff(emb: torch.Tensor, attention_mask: torch.Tensor, rate: float, rng: random.Random) -> torch.Tensor:
    """Zero ``int(rate * hidden)`` randomly chosen hidden dims at every position, drawn per sentence."""
    hidden = emb.shape[-1]
    keep = _keep_mask_like(emb)
    for row in range(emb.shape[0]):
        cols = rng.sample(range(hidden), int(rate * hidden))
        keep[row, :, cols] = 0
    return emb * keep


def element_dropout(emb: torch.Tensor, attention_mask: torch.Tensor, rate: float, rng: random.Random) -> torch.Tensor:
    """Zero ``int(rate * n_real * hidden)`` random elements within the real-token rows; no 1/(1-p) rescaling."""
    hidden = emb.shape[-1]
    keep = _keep_mask_like(emb)
    for row in range(emb.shape[0]):
        real = attention_mask[row].nonzero(as_tuple=True)[0]  # (n_real,)
        n_cells = len(real) * hidden
        flat = torch.tensor(rng.sample(range(n_cells), int(rate * n_cells)), dtype=torch.long, device=emb.device)
        keep[row, real[flat // hidden], flat % hidden] = 0
    return emb * keep


_EMBEDDING_FNS = {"token_cutoff": token_cutoff, "feature_cutoff": feature_cutoff, "dropout": element_dropout}


def check_augmentation(name: str, rate: float) -> None:
    """Raise :class:`ConfigError` for an unknown augmentation or a cutoff rate outside (0, 1)."""
    if name not in AUGMENTATIONS:
        raise ConfigError(f"unknown ConSERT augmentation {name!r}; expected one of {', '.join(AUGMENTATIONS)}")
    if name in EMBEDDING_AUGMENTATIONS and not 0.0 < rate < 1.0:
        raise ConfigError(f"ConSERT augmentation {name!r} needs a rate in (0, 1), got {rate!r}")


@contextmanager
def embedding_output_hook(model: torch.nn.Module, fn) -> Iterator[None]:
    """While active, ``model.embeddings``' output is replaced by ``fn(output)`` (the reference's patch point)."""
    embeddings = getattr(model, "embeddings", None)
    if not isinstance(embeddings, torch.nn.Module):
        raise ConfigError(f"{type(model).__name__} has no `embeddings` module to augment (ConSERT needs a BERT-like "
                          "encoder)")
    handle = embeddings.register_forward_hook(lambda _module, _args, output: fn(output))
    try:
        yield
    finally:
        handle.remove()


def augmented_forward(model: torch.nn.Module, features: dict[str, torch.Tensor], name: str, rate: float,
                      rng: random.Random, **kwargs):
    """Run ``model(**features)`` with one augmentation applied where ConSERT applies it; returns the HF output."""
    check_augmentation(name, rate)
    mask = features["attention_mask"]
    if name == "shuffle":
        return model(**features, position_ids=shuffle_position_ids(mask, rng), **kwargs)
    if name == "none":
        return model(**features, **kwargs)
    fn = _EMBEDDING_FNS[name]
    with embedding_output_hook(model, lambda emb: fn(emb, mask, rate, rng)):
        return model(**features, **kwargs)


def augmentation_inputs(name: str, rate: float, attention_mask: torch.Tensor, hidden: int,
                        rng: random.Random) -> dict[str, torch.Tensor]:
    """One view's augmentation drawn ahead of the forward (in collate, on the host, off the step's critical
    path): ``{"position_ids"}`` for shuffle, ``{"keep"}`` (bsz, seq, hidden) 0/1 for a cutoff, ``{}`` for none.
    The same draws from ``rng``, in the same order, as :func:`augmented_forward` makes inside the forward."""
    check_augmentation(name, rate)
    if name == "shuffle":
        return {"position_ids": shuffle_position_ids(attention_mask, rng)}
    if name == "none":
        return {}
    # fn(ones) = the 0/1 mask it would multiply emb with, drawn at the smallest shape that broadcasts to it: a token
    # cutoff is (bsz, seq, 1), a feature cutoff (bsz, 1, hidden), element dropout (bsz, seq, hidden) as booleans,
    # not a (bsz, seq, hidden) float32 block per view and step (18.9 MB at batch 96 x 64 x 768) to copy to the GPU
    bsz, seq = attention_mask.shape
    shape = {"token_cutoff": (bsz, seq, 1), "feature_cutoff": (bsz, 1, hidden)}.get(name, (bsz, seq, hidden))
    keep = _EMBEDDING_FNS[name](torch.ones(shape), attention_mask, rate, rng)
    return {"keep": keep.to(torch.bool) if name == "dropout" else keep}


def drawn_forward(model: torch.nn.Module, features: dict[str, torch.Tensor], inputs: dict[str, torch.Tensor],
                  **kwargs):
    """``model(**features)`` with an augmentation drawn by :func:`augmentation_inputs`; the same output as
    :func:`augmented_forward` with the same draws."""
    if "position_ids" in inputs:
        return model(**features, position_ids=inputs["position_ids"], **kwargs)
    if "keep" in inputs:
        keep = inputs["keep"]
        with embedding_output_hook(model, lambda emb: emb * keep.to(emb.dtype)):
            return model(**features, **kwargs)
    return model(**features, **kwargs)
