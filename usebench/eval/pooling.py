"""Mask-aware pooling of transformer outputs into one vector per sentence.

Definitions follow ``METHODS.md`` §0: ``cls`` is the raw token-0 state (no BERT pooler), ``first_last_avg``
averages the *embedding-layer output* (HF ``hidden_states[0]``) with the last layer as the BERT-flow port
does, ``last2avg`` averages the last two layers (ConSERT's evaluation pooling).

A method whose pooling needs state of its own (BERT-flow's Glow, DenoSent's [MASK] id from the tokenizer) names
a pooler factory in its checkpoint's ``method.json`` (``"pooler": "usebench.methods.bertflow:flow_pooler"``), the way a
sentence-transformers ``modules.json`` names its module classes: the checkpoint says which code pools it, so
nothing has to be imported or registered beforehand, and this module never imports the method plugins.
"""
from __future__ import annotations

import difflib
from typing import Callable, Literal, Sequence, get_args

import torch

from usebench.errors import BenchError
from usebench.registry import Registry, UnknownNameError

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


# A pooler factory: (model_dir, device) -> PoolFn, named in method.json as "module:function".
PoolerFactory = Callable[[str, torch.device], PoolFn]
# Pooler factories are looked up only inside the suite's own packages (a results folder is not a code source).
FACTORY_PACKAGES = ("usebench.",)
# method.json files written before the one `usebench` root name their pooler by the old top-level packages.
LEGACY_PREFIXES = (("methods.", "usebench.methods."), ("benchmark.", "usebench."))
# Checkpoints exported before method.json named its pooler: the factories of the poolings they could declare.
LEGACY_FACTORIES = {"flow": "usebench.methods.bertflow:flow_pooler",
                    "mask_token": "usebench.methods.denosent:mask_token_pooler"}


def build_pooler(name: str, model_dir: str, device: torch.device, factory: str | None = None) -> PoolFn:
    """The pooling function ``name`` for the checkpoint in ``model_dir``: a registered stateless pooling, or the
    checkpoint's own ``factory`` (``"module:function"`` from its method.json) when ``name`` is not registered."""
    if name in POOLERS:
        return POOLERS.get(name)
    factory = factory or LEGACY_FACTORIES.get(name)
    if factory:
        return load_factory(factory, name)(model_dir, device)
    known = POOLERS.names()
    close = ", ".join(repr(c) for c in difflib.get_close_matches(name, known, n=3, cutoff=0.5))
    raise UnknownNameError(f"unknown pooling {name!r}{'; did you mean ' + close + '?' if close else ''} "
                           f"(known: {', '.join(known)}; a method's own pooling, such as BERT-flow's 'flow', is "
                           f"read from its checkpoint's method.json)")


def load_factory(spec: str, pooling: str) -> PoolerFactory:
    """Import ``"module:function"`` (only from the suite's packages) and return the function."""
    import importlib

    module_name, sep, attr = spec.partition(":")
    for old, new in LEGACY_PREFIXES:
        if module_name.startswith(old):
            module_name = new + module_name[len(old):]
    if not sep or not module_name.startswith(FACTORY_PACKAGES):
        raise BenchError(f"pooling {pooling!r}: pooler {spec!r} must be 'module:function' inside "
                         f"{' or '.join(p.rstrip('.') for p in FACTORY_PACKAGES)}")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise BenchError(f"pooling {pooling!r}: cannot load its pooler {spec!r} ({e})") from None


def needs_all_layers(pooling: str) -> bool:
    """Whether the pooling reads layers other than the last (so the model must return all hidden states)."""
    return pooling not in ("cls", "mean", "max")
