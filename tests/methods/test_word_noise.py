"""The TSDAE paper's five noise types (App. A) on a fixed sentence and seed, and their ratios.

Expected strings are worked out by hand from the seed's draws: ``np.random.default_rng(3).random(9)`` is
[0.086 0.237 0.801 0.582 0.094 0.433 0.479 0.160 0.735], so at ratio 0.3 words 0, 1, 4 and 7 are influenced
(u < 0.3; deletion keeps u > 0.3, the reference's rule); the first four values decide swap's four bigrams
(0.086 and 0.237 < 0.3: bigrams 0 and 1 swap); replace/add then draw ``integers(5, size=4)`` = [0 0 2 1].
"""
from __future__ import annotations

import numpy as np
import pytest

from usebench.errors import ConfigError

from usebench.methods.parts.word_noise import NOISE_TYPES, add_noise, vocabulary_words

SENTENCE = "the quick brown fox jumps over the lazy dog"
VOCAB = ["alpha", "beta", "gamma", "delta", "epsilon"]
EXPECTED = {
    "delete": "brown fox over the dog",
    "swap": "quick the fox brown jumps over the lazy dog",
    "mask": "[MASK] [MASK] brown fox [MASK] over the [MASK] dog",
    "replace": "alpha alpha brown fox gamma over the beta dog",
    "add": "the alpha quick alpha brown fox jumps gamma over the lazy beta dog",
}


def _noise(kind: str, text: str, ratio: float, seed: int = 3) -> str:
    return add_noise(kind, text, ratio, np.random.default_rng(seed), mask_token="[MASK]", vocab=VOCAB)


def test_seed_draws_are_the_ones_the_expectations_were_worked_out_from():
    u = np.random.default_rng(3).random(9)
    assert list(np.flatnonzero(u < 0.3)) == [0, 1, 4, 7]


@pytest.mark.parametrize("kind", NOISE_TYPES)
def test_each_noise_on_a_fixed_sentence_and_seed(kind):
    assert _noise(kind, SENTENCE, 0.3) == EXPECTED[kind]


@pytest.mark.parametrize("kind", NOISE_TYPES)
def test_ratio_zero_leaves_the_sentence_alone(kind):
    assert _noise(kind, SENTENCE, 0.0) == SENTENCE


def test_ratio_one_swaps_every_bigram_and_masks_every_word():
    assert _noise("swap", SENTENCE, 1.0) == "quick the fox brown over jumps lazy the dog"  # the odd last word stays
    assert _noise("mask", "a b c", 1.0) == "[MASK] [MASK] [MASK]"
    assert _noise("delete", "a b c", 0.999).count(" ") == 0  # at least one word survives (the reference's rule)


@pytest.mark.parametrize("kind", NOISE_TYPES)
def test_influenced_fraction_is_the_ratio(kind):
    """Over many sentences the share of influenced words is the ratio ("0.3 = 30% tokens influenced")."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(20)]
    text = " ".join(words)
    influenced = total = 0
    for _ in range(500):
        out = add_noise(kind, text, 0.3, rng, mask_token="[MASK]", vocab=VOCAB).split()
        total += len(words)
        if kind == "delete":
            influenced += len(words) - len(out)
        elif kind == "add":
            influenced += len(out) - len(words)
        else:  # swap / mask / replace keep the length; count words not at their place
            influenced += sum(a != b for a, b in zip(out, words))
    assert abs(influenced / total - 0.3) < 0.015, influenced / total


def test_mask_needs_a_mask_token_and_replace_a_vocabulary():
    with pytest.raises(ConfigError, match="mask token"):
        add_noise("mask", SENTENCE, 0.3, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="vocabulary"):
        add_noise("replace", SENTENCE, 0.3, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="unknown noise type"):
        add_noise("shuffle", SENTENCE, 0.3, np.random.default_rng(0))


def test_vocabulary_words_are_whole_alphabetic_words(tiny_bert_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    words = vocabulary_words(tok)
    assert len(words) > 1000 and words == sorted(set(words))
    assert "river" in words and "[MASK]" not in words and not any(w.startswith("##") for w in words)
    assert all(w.isalpha() and len(w) > 1 for w in words)
