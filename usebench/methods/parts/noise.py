"""Noise functions shared by method plugins; pure functions of their input and an explicit RNG.

- :func:`delete_words`: TSDAE's deletion noise (``[ST]sentence_transformers/datasets/DenoisingAutoEncoderDataset
  .delete``): each word is dropped independently with probability ``ratio`` (keep iff ``u > ratio``), at least one
  word is kept, and the rest is re-joined by the Treebank detokenizer.
- :func:`mask_tokens`: BERT's masked-LM corruption: select each non-special, non-padding token with probability
  ``prob`` (or, whole-word, a fixed budget of words as transformers 4.x's ``DataCollatorForWholeWordMask``); of
  the selected, 80% become [MASK], 10% a random token, 10% stay; labels are -100 everywhere else (MLM; PaSeR's
  auxiliary loss).

NLTK's ``word_tokenize`` first splits sentences with the ``punkt`` model, a data download that is impossible
offline; a corpus line is one sentence, so :func:`word_tokenize` applies the same word tokenizer
(``NLTKWordTokenizer``, no data files) to the whole line. Lines holding several sentences therefore keep
sentence-internal periods attached to their word; the deletion ratio is unaffected.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import torch


@lru_cache(maxsize=1)
def _word_tools():
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.tokenize.treebank import TreebankWordDetokenizer

    return NLTKWordTokenizer(), TreebankWordDetokenizer()


def word_tokenize(text: str) -> list[str]:
    """NLTK's Treebank-style word tokens of one sentence (no punkt data needed)."""
    return _word_tools()[0].tokenize(text)


def delete_words(text: str, ratio: float, rng: np.random.Generator) -> str:
    """``text`` with each word deleted with probability ``ratio`` (at least one word survives)."""
    words = word_tokenize(text)
    n = len(words)
    if n == 0:
        return text
    keep = rng.random(n) > ratio
    if not keep.any():
        keep[rng.integers(n)] = True
    return _word_tools()[1].detokenize([w for w, k in zip(words, keep) if k])


def mask_tokens(input_ids: torch.Tensor, special_mask: torch.Tensor, rng: np.random.Generator, *, mask_id: int,
                vocab_size: int, prob: float = 0.15, mask_frac: float = 0.8, random_frac: float = 0.1,
                word_ids: Sequence[Sequence[int | None]] | None = None,
                lengths: Sequence[int] | None = None, width: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(corrupted ids, labels) for masked-LM training. ``special_mask`` (bsz, L) is True at [CLS]/[SEP]/padding,
    which are never selected. Token-level: each eligible token with probability ``prob`` (BERT). With
    ``word_ids`` (per row, the word index of each token or None) and ``lengths`` (per row, its tokens with the
    special ones, without padding): whole-word masking as :func:`select_whole_words`. The 80/10/10 split is
    drawn per selected token either way, as HF's collators do.

    ``width``: the batch's pad-to-longest width when it was padded further (static shapes,
    :func:`usebench.train.static_shapes.natural_width`): the draws are made over the first ``width`` columns, so
    the extra padding does not change which tokens are masked.
    """
    if width is not None and width < input_ids.shape[1]:
        ids, labels = mask_tokens(input_ids[:, :width], special_mask[:, :width], rng, mask_id=mask_id,
                                  vocab_size=vocab_size, prob=prob, mask_frac=mask_frac, random_frac=random_frac,
                                  word_ids=None if word_ids is None else [w[:width] for w in word_ids],
                                  lengths=lengths)
        rest = input_ids[:, width:]
        return torch.cat([ids, rest], dim=1), torch.cat([labels, torch.full_like(rest, -100)], dim=1)
    ids = input_ids.clone()
    eligible = ~special_mask.numpy().astype(bool)  # (bsz, L)
    if word_ids is None:
        selected = (rng.random(ids.shape) < prob) & eligible
    elif lengths is None:
        raise ValueError("whole-word masking needs the rows' token counts (lengths)")
    else:
        selected = select_whole_words(word_ids, eligible, lengths, prob, rng)
    labels = torch.full_like(ids, -100)
    sel = torch.from_numpy(selected)
    labels[sel] = input_ids[sel]
    u = rng.random(ids.shape)
    to_mask = selected & (u < mask_frac)
    to_random = selected & (u >= mask_frac) & (u < mask_frac + random_frac)
    ids[torch.from_numpy(to_mask)] = mask_id
    n_random = int(to_random.sum())
    if n_random:
        ids[torch.from_numpy(to_random)] = torch.from_numpy(rng.integers(0, vocab_size, n_random)).to(ids.dtype)
    return ids, labels


def select_whole_words(word_ids: Sequence[Sequence[int | None]], eligible: np.ndarray, lengths: Sequence[int],
                       prob: float, rng: np.random.Generator, max_predictions: int = 512) -> np.ndarray:
    """Whole-word selection as transformers 4.x ``DataCollatorForWholeWordMask._whole_word_mask``: per row a
    budget of ``min(512, max(1, round(prob * tokens)))`` tokens (special tokens counted, padding not), filled by
    visiting the row's words in random order and taking each word whose pieces still fit (a word that would
    overflow the budget is skipped, a later shorter one may still fit). Returns selected (bsz, L) booleans."""
    selected = np.zeros_like(eligible)
    for row, wids in enumerate(word_ids):
        words: dict[int, list[int]] = {}
        for col, w in enumerate(wids):
            if w is not None and eligible[row, col]:
                words.setdefault(w, []).append(col)
        budget = min(max_predictions, max(1, int(round(lengths[row] * prob))))
        covered = 0
        for w in rng.permutation(sorted(words)):
            if covered >= budget:
                break
            if covered + len(words[int(w)]) > budget:
                continue
            selected[row, words[int(w)]] = True
            covered += len(words[int(w)])
    return selected
