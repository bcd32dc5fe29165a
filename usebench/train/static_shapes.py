"""Static shapes for the compiled training step (the fast path, :mod:`usebench.train.step_path`).

A compiled step is specialised on its input shapes: a batch of a length it has not seen compiles a new graph. So on
the fast path every tokenized batch is padded up to a *length bucket* (powers of two from :data:`MIN_LENGTH`,
capped at the tokenizer's ``max_length``) and every labelled-position list (:func:`usebench.methods.parts.heads.
label_positions`) up to a *count bucket* (powers of two from :data:`MIN_LABELS`), so a run meets a handful of
shapes and compiles each once.

The padding is exact math: padded tokens have attention mask 0 (keys never attended; pooling skips them) and sit
after the batch's own columns (causal decoders never look ahead to them); padded labelled positions point at row 0
with the target ``-100``, which cross-entropy ignores, so the loss is the same mean over the real labels. What it
does change: dropout masks are drawn over the larger tensors, so with dropout on the draws differ from
pad-to-longest (a different sample of the same noise, not other math); noise drawn in collate (masking) is drawn
over the batch's natural width (:func:`natural_width`: its first columns), so it is the same draw either way.

The extra columns go on the right whichever side the tokenizer pads: a left-padding tokenizer's batch keeps its
own layout (its pads on the left, its tokens right-aligned in the first ``width`` columns) and the bucket's pads
follow it. Every column of the pad-to-longest batch then stays where it was, so the noise draws, [CLS] at column 0
and the position ids (BERT's count columns, not tokens) are those of the eager step. Extra pads on the left would
shift all three (the review of issue 50: 22 tokens masked eagerly, 43 on the fast path, on one batch). What this
layout cannot keep is "the last column is every row's last token", which only a reader of ``[:, -1]`` would use;
no trainer here reads it.

The policy is a context variable that ``tokenize`` and ``label_positions`` read, set by
:class:`usebench.train.batches.StepBatches` around each step's collate (also in its worker processes); anything
else that tokenizes (validation, evaluation) pads to the longest as before.
"""
from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

MIN_LENGTH = 16  # the smallest length bucket: batches of shorter sentences are padded to 16 tokens
MIN_LABELS = 64  # the smallest labelled-count bucket (an MLM batch of 8 short lines has ~10 labels)
IGNORE = -100  # torch's cross-entropy ignore_index (usebench.methods.parts.heads.IGNORE)

_ACTIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("usebench_static_shapes", default=False)


def active() -> bool:
    """Whether the collate running now pads to buckets (set by :func:`static_shapes`)."""
    return _ACTIVE.get()


@contextmanager
def static_shapes(on: bool = True) -> Iterator[None]:
    """Pad tokenized batches and labelled positions to buckets inside this block (``on``), else pad to longest."""
    token = _ACTIVE.set(bool(on))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def bucket(n: int, minimum: int, cap: int) -> int:
    """The smallest power of two >= ``max(n, minimum)``, at most ``cap`` (never below ``n``)."""
    if n > cap:
        raise ValueError(f"bucket: {n} exceeds its cap {cap}")
    size = 1 << (max(n, minimum, 1) - 1).bit_length()
    return max(n, min(size, cap))


def natural_width(attention_mask: torch.Tensor) -> int:
    """The width pad-to-longest gives a batch: its longest row's token count, the first columns of a bucket-padded
    batch (:func:`pad_tokens` adds columns on the right only). attention_mask: (bsz, L)."""
    return int(attention_mask.sum(dim=1).max()) if attention_mask.numel() else 0


def _pad_columns(t: torch.Tensor, width: int, value: Any) -> torch.Tensor:
    extra = width - t.shape[1]
    if extra <= 0:
        return t
    return torch.cat([t, torch.full((t.shape[0], extra), value, dtype=t.dtype)], dim=1)


def pad_tokens(enc: dict[str, Any], cap: int, pad_id: int) -> dict[str, Any]:
    """``enc`` (what :func:`usebench.train.tokenization.tokenize` returns) with columns added on the right up to the
    length bucket of its width, for a tokenizer padding on either side (module docstring): ids ``pad_id``, attention
    mask 0, special-tokens mask True, word ids None."""
    width = enc["input_ids"].shape[1]
    target = bucket(width, MIN_LENGTH, max(cap, width))
    if target == width:
        return enc
    out = dict(enc)
    out["input_ids"] = _pad_columns(enc["input_ids"], target, pad_id)
    out["attention_mask"] = _pad_columns(enc["attention_mask"], target, 0)
    if "special_tokens_mask" in enc:
        out["special_tokens_mask"] = _pad_columns(enc["special_tokens_mask"], target, True)
    if "word_ids" in enc:
        out["word_ids"] = [list(w) + [None] * (target - width) for w in enc["word_ids"]]
    return out


def pad_labelled(positions: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(positions, targets) padded up to the count bucket of their length with (0, ``IGNORE``) entries: position 0
    is a valid row of any batch (repeated as often as needed, so the bucket is not capped by the batch's size),
    and cross-entropy ignores the target. No labels stay no labels (the heads' zero loss; a batch without a single
    label is rare enough to compile its own shape)."""
    n = positions.numel()
    if n == 0:
        return positions, targets
    size = bucket(n, MIN_LABELS, max(n, MIN_LABELS) * 2)
    if size == n:
        return positions, targets
    pad = size - n
    return (torch.cat([positions, positions.new_zeros(pad)]),
            torch.cat([targets, targets.new_full((pad,), IGNORE)]))
