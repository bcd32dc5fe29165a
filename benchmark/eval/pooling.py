"""Mask-aware pooling of transformer outputs into one vector per sentence.

Definitions follow ``METHODS.md`` §0: ``cls`` is the raw token-0 state (no BERT pooler), ``first_last_avg``
averages the *embedding-layer output* (HF ``hidden_states[0]``) with the last layer as the BERT-flow port
does, ``last2avg`` averages the last two layers (ConSERT's evaluation pooling).

Methods that need another pooling register it: a stateless one (a prompt's [MASK] token) in ``POOLERS``, one
with weights of its own (BERT-flow's ``flow``) in ``POOLER_FACTORIES``, built per checkpoint directory.
"""
from __future__ import annotations

import difflib
from typing import Callable, Literal, Sequence, get_args

import torch

from benchmark.registry import Registry, UnknownNameError

Pooling = Literal["cls", "mean", "max", "first_last_avg", "last2avg"]
BUILTIN_POOLINGS: tuple[str, ...] = get_args(Pooling)

# A pooler takes (hidden_states: all layers incl. embeddings, attention_mask, input_ids) -> (bsz, dim).
PoolFn = Callable[[Sequence[torch.Tensor], torch.Tensor, torch.Tensor], torch.Tensor]
POOLERS: Registry[PoolFn] = Registry("pooling")


def masked_mean(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean over real tokens only. hidden: (bsz, seq, dim), attention_mask: (bsz, seq) -> (bsz, dim)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (bsz, seq, 1)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


@POOLERS.register("cls")
def pool_cls(hidden_states, attention_mask, input_ids):
    return hidden_states[-1][:, 0]


@POOLERS.register("mean")
def pool_mean(hidden_states, attention_mask, input_ids):
    return masked_mean(hidden_states[-1], attention_mask)


@POOLERS.register("max")
def pool_max(hidden_states, attention_mask, input_ids):
    last = hidden_states[-1]
    pad = ~attention_mask.bool().unsqueeze(-1)  # (bsz, seq, 1)
    return last.masked_fill(pad, torch.finfo(last.dtype).min).max(dim=1).values


@POOLERS.register("first_last_avg")
def pool_first_last_avg(hidden_states, attention_mask, input_ids):
    # "first" = embedding-layer output, as in UKPLab/pytorch-bertflow (needed for the TSDAE paper's numbers).
    return masked_mean((hidden_states[0] + hidden_states[-1]) / 2, attention_mask)


@POOLERS.register("last2avg")
def pool_last2avg(hidden_states, attention_mask, input_ids):
    return masked_mean((hidden_states[-2] + hidden_states[-1]) / 2, attention_mask)


# A pooling with weights of its own (BERT-flow's Glow) is built per checkpoint: factory(model_dir, device) -> PoolFn.
PoolerFactory = Callable[[str, torch.device], PoolFn]
POOLER_FACTORIES: Registry[PoolerFactory] = Registry("pooling")


def build_pooler(name: str, model_dir: str, device: torch.device) -> PoolFn:
    """The pooling function ``name`` for the checkpoint in ``model_dir`` (unknown names: did-you-mean error)."""
    if name not in POOLERS and name not in POOLER_FACTORIES:
        import methods  # noqa: F401  (method plugins register their own poolings, e.g. `flow`)
    if name in POOLER_FACTORIES:
        return POOLER_FACTORIES.get(name)(model_dir, device)
    if name not in POOLERS:
        known = sorted(set(POOLERS.names()) | set(POOLER_FACTORIES.names()))
        close = ", ".join(repr(c) for c in difflib.get_close_matches(name, known, n=3, cutoff=0.5))
        raise UnknownNameError(f"unknown pooling {name!r}{'; did you mean ' + close + '?' if close else ''} "
                               f"(known: {', '.join(known)})")
    return POOLERS.get(name)


def needs_all_layers(pooling: str) -> bool:
    """Whether the pooling reads layers other than the last (so the model must return all hidden states)."""
    return pooling not in ("cls", "mean", "max")
