"""Batch tokenisation every method's collate uses: pad to the longest, truncate to ``max_length``, no token type ids."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from usebench.train import static_shapes


def tokenize(tokenizer: Any, texts: Sequence[str], max_length: int, *, special_tokens_mask: bool = False,
             word_ids: bool = False) -> dict[str, Any]:
    """Pad-to-longest, truncate-to-``max_length`` ids and attention mask (no token_type_ids: all zeros): every
    method's batch tokenization. ``special_tokens_mask=True`` adds ``special_tokens_mask`` (bsz, L), True at
    [CLS]/[SEP]/padding (what masked-LM corruption must never touch); ``word_ids=True`` adds ``word_ids`` (per
    row, each token's word index or None, for whole-word masking). Inside a step's collate on the fast path the
    width is then padded up to a length bucket (:mod:`usebench.train.static_shapes`)."""
    enc = tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt",
                    return_token_type_ids=False, return_special_tokens_mask=special_tokens_mask)
    out: dict[str, Any] = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
    if special_tokens_mask:
        out["special_tokens_mask"] = enc["special_tokens_mask"].bool() | (enc["attention_mask"] == 0)
    if word_ids:
        out["word_ids"] = [enc.word_ids(i) for i in range(len(texts))]
    if static_shapes.active():
        out = static_shapes.pad_tokens(out, max_length, int(tokenizer.pad_token_id))  # on the right, either side
    return out
