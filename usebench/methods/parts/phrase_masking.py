"""PaSeR's training examples (Wu & Zhao 2022, §3.1): duplicate-and-mask plus synonym replacement.

RAKE (:mod:`usebench.methods.parts.rake`) ranks a sentence's phrases; the second view is the sentence with every word
of the top-k phrases replaced by ``[MASK]`` (one per word, as the paper's Table 7), and the decoder's target is the
masked words in text order. Both views get WordNet synonym replacement (:mod:`usebench.methods.parts.synonyms`; paper
Table 4 "+SR"), independently, never touching a masked word; drawn once per sentence (a static augmented corpus, as the
released ``data/augmented.csv``) unless an RNG is given, optionally on EDA's cleaned text.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from usebench.methods.parts.rake import Token, rank_phrases, word_spans
from usebench.methods.parts.synonyms import EDA_STOPWORDS, SynonymFn, eda_words, render, synonym_replacements


@dataclass(frozen=True)
class PhraseExample:
    """One training example: the two encoder views and the decoder target (the masked words)."""

    view0: str  # s, synonym-replaced
    view1: str  # s~: s with the top-k phrases masked, synonym-replaced elsewhere
    target: str  # the masked words in text order ("" when the sentence has no candidate phrase)


def masked_word_indices(tokens: Sequence[Token], top_k: int, stop: frozenset[str]) -> list[int]:
    """Token indices of every occurrence of the ``top_k`` best RAKE phrases, in text order."""
    phrases = rank_phrases(tokens, stop)[:top_k]
    return sorted({i for p in phrases for occurrence in p.occurrences for i in occurrence})


def make_example(text: str, top_k: int, mask_token: str, stop: frozenset[str], synonym_ratio: float,
                 rng: random.Random | None, synonyms: SynonymFn | None, eda_clean: bool = False,
                 sr_stop: frozenset[str] = EDA_STOPWORDS) -> PhraseExample:
    """Duplicate-and-mask (paper §3.1.2) plus synonym replacement on both copies (§3.1.3). ``rng`` None: the
    replacement is drawn from the sentence itself (a static augmented corpus, as the released data file)."""
    tokens = word_spans(text)  # RAKE runs on the sentence as written (punctuation delimits phrases)
    masked = masked_word_indices(tokens, top_k, stop)
    target = " ".join(tokens[i].text for i in masked)
    rngs = (rng, rng) if rng is not None else tuple(random.Random(f"paser-sr-{k}|{text}") for k in (0, 1))
    if eda_clean:  # EDA's view of each token: lower-case letters only ("89" and punctuation vanish)
        tokens = [Token(" ".join(eda_words(t.text)), t.start, t.end, bool(eda_words(t.text))) for t in tokens]
    sr0 = synonym_replacements(tokens, synonym_ratio, rngs[0], synonyms, stop=sr_stop) if synonyms else {}
    sr1 = synonym_replacements(tokens, synonym_ratio, rngs[1], synonyms, skip=set(masked), stop=sr_stop) \
        if synonyms else {}
    masks = {i: mask_token for i in masked}
    if eda_clean:
        return PhraseExample(_joined(tokens, sr0), _joined(tokens, {**sr1, **masks}), target)
    return PhraseExample(render(text, tokens, sr0), render(text, tokens, {**sr1, **masks}), target)


def _joined(tokens: Sequence[Token], replace: dict[int, str]) -> str:
    """EDA's output: the cleaned words (replacements and mask tokens in place) joined by single spaces."""
    return " ".join(w for i, t in enumerate(tokens) if (w := replace.get(i, t.text)))
