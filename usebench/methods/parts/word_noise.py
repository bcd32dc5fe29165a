"""The five word-level noise types of the TSDAE paper's configuration search (App. A, Table 5).

The paper names the types (delete, swap, mask, replace, add) and says a ratio of 0.3 means "30% tokens are
influenced"; its reference code (sentence-transformers ``DenoisingAutoEncoderDataset``) defines only deletion.
Every type here works on the same NLTK Treebank words as deletion (:func:`usebench.methods.parts.noise.word_tokenize`),
re-joined by the Treebank detokenizer, and influences each word independently with probability ``ratio``:

- ``delete``: :func:`usebench.methods.parts.noise.delete_words` (the reference: keep iff ``u > ratio``, at least one word
  kept).
- ``swap``: the sequential denoising auto-encoder's word-order noise that the paper builds on (Hill, Cho,
  Korhonen 2016, SDAE): every non-overlapping bigram (words 0-1, 2-3, ...) is swapped with probability
  ``ratio``; a swap influences both of its words, so the influenced fraction is ``ratio`` (an odd last word
  never moves).
- ``mask``: the word becomes the tokenizer's mask token (``[MASK]``, ``<mask>``), whole words as TSDAE's noise
  acts on words, not word pieces.
- ``replace``: the word becomes a word drawn uniformly from the backbone's vocabulary words
  (:func:`vocabulary_words`).
- ``add``: a vocabulary word drawn the same way is inserted after the word (``ratio * n`` words added on
  average).

Draw order (fixed, so tests can recompute it): one ``rng.random(k)`` for the k words (k bigrams for swap), then,
for replace and add, one ``rng.integers(len(vocab), size=m)`` for the m influenced words in order.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

import numpy as np

from usebench.errors import ConfigError
from usebench.methods.parts.noise import _word_tools, delete_words, word_tokenize

NoiseType = Literal["delete", "swap", "mask", "replace", "add"]
NOISE_TYPES: tuple[str, ...] = get_args(NoiseType)


def _join(words: Sequence[str]) -> str:
    return _word_tools()[1].detokenize(list(words))


def swap_bigrams(text: str, ratio: float, rng: np.random.Generator) -> str:
    """``text`` with each non-overlapping word bigram swapped with probability ``ratio``."""
    words = word_tokenize(text)
    n_pairs = len(words) // 2
    if n_pairs == 0:
        return text
    swap = rng.random(n_pairs) < ratio
    for i in np.flatnonzero(swap):
        words[2 * i], words[2 * i + 1] = words[2 * i + 1], words[2 * i]
    return _join(words)


def mask_words(text: str, ratio: float, rng: np.random.Generator, mask_token: str) -> str:
    """``text`` with each word replaced by ``mask_token`` with probability ``ratio``."""
    words = word_tokenize(text)
    if not words:
        return text
    hit = rng.random(len(words)) < ratio
    return _join([mask_token if h else w for w, h in zip(words, hit)])


def replace_words(text: str, ratio: float, rng: np.random.Generator, vocab: Sequence[str]) -> str:
    """``text`` with each word replaced, with probability ``ratio``, by a uniformly drawn word of ``vocab``."""
    words = word_tokenize(text)
    if not words:
        return text
    hit = np.flatnonzero(rng.random(len(words)) < ratio)
    for i, j in zip(hit, rng.integers(len(vocab), size=len(hit))):
        words[i] = vocab[j]
    return _join(words)


def add_words(text: str, ratio: float, rng: np.random.Generator, vocab: Sequence[str]) -> str:
    """``text`` with a uniformly drawn word of ``vocab`` inserted after each word with probability ``ratio``."""
    words = word_tokenize(text)
    if not words:
        return text
    hit = rng.random(len(words)) < ratio
    new = iter(rng.integers(len(vocab), size=int(hit.sum())))
    out: list[str] = []
    for w, h in zip(words, hit):
        out.append(w)
        if h:
            out.append(vocab[next(new)])
    return _join(out)


def add_noise(kind: str, text: str, ratio: float, rng: np.random.Generator, *, mask_token: str | None = None,
              vocab: Sequence[str] = ()) -> str:
    """Apply noise ``kind`` (one of :data:`NOISE_TYPES`) at ``ratio`` to one sentence."""
    if kind == "delete":
        return delete_words(text, ratio, rng)
    if kind == "swap":
        return swap_bigrams(text, ratio, rng)
    if kind == "mask":
        if not mask_token:
            raise ConfigError("mask noise needs the tokenizer's mask token; this tokenizer has none")
        return mask_words(text, ratio, rng, mask_token)
    if kind in ("replace", "add"):
        if not vocab:
            raise ConfigError(f"{kind} noise needs a non-empty vocabulary of words to draw from")
        return (replace_words if kind == "replace" else add_words)(text, ratio, rng, vocab)
    raise ConfigError(f"unknown noise type {kind!r} (known: {', '.join(NOISE_TYPES)})")


def vocabulary_words(tokenizer: Any) -> list[str]:
    """The tokenizer's whole-word, alphabetic vocabulary entries, sorted (what replace/add noise draws from).

    Each entry is decoded as it would appear in text (WordPiece ``##ing`` continuations and special tokens drop
    out; BPE's ``Ġword`` and SentencePiece's ``▁word`` become ``word``); only letters-only words of two or more
    characters are kept, so a drawn word is a real word piece of the backbone's own vocabulary."""
    special = set(getattr(tokenizer, "all_special_tokens", []))
    words = set()
    for token in tokenizer.get_vocab():
        if token in special or token.startswith("##"):
            continue
        word = tokenizer.convert_tokens_to_string([token]).strip()
        if len(word) >= 2 and word.isalpha() and word.isascii():
            words.add(word)
    return sorted(words)
