"""RAKE on hand-worked sentences: deg(w)/freq(w) word scores and summed phrase scores computed by hand below,
plus Rose et al. 2010's own worked example (their Table 1.2 scores)."""
from __future__ import annotations

import pytest

from usebench.methods.parts.rake import NLTK_ENGLISH_STOPWORDS, rake, word_scores, word_spans

ROSE_ABSTRACT = ("Compatibility of systems of linear constraints over the set of natural numbers. Criteria of "
                 "compatibility of a system of linear Diophantine equations, strict inequations, and nonstrict "
                 "inequations are considered.")


def test_nltk_stop_list_is_complete():
    assert len(NLTK_ENGLISH_STOPWORDS) == 179
    assert {"the", "of", "don't", "wouldn't", "ourselves"} <= NLTK_ENGLISH_STOPWORDS
    assert not {"least", "two", "dead"} & NLTK_ENGLISH_STOPWORDS


def test_single_sentence_by_hand():
    # "at", "in" are stop words -> candidates [least 89 dead], [china earthquakes].
    # freq = 1 for every word; deg(least) = deg(89) = deg(dead) = 3, deg(china) = deg(earthquakes) = 2.
    # Phrase scores: 3 + 3 + 3 = 9 and 2 + 2 = 4.
    phrases = rake("At least 89 dead in china earthquakes")
    assert [(p.text, p.score) for p in phrases] == [("least 89 dead", 9.0), ("china earthquakes", 4.0)]
    assert phrases[0].occurrences == ((1, 2, 3),)  # token indices: At=0 least=1 89=2 dead=3 in=4 ...


def test_repeated_words_by_hand():
    # Candidates [deep learning], [deep learning models]: freq(deep) = freq(learning) = 2, freq(models) = 1;
    # deg(deep) = deg(learning) = 2 + 3 = 5, deg(models) = 3 -> scores 2.5, 2.5, 3.
    # "deep learning models" = 8.0, "deep learning" = 5.0.
    assert word_scores([("deep", "learning"), ("deep", "learning", "models")]) == {
        "deep": 2.5, "learning": 2.5, "models": 3.0}
    phrases = rake("Deep learning and deep learning models")
    assert [(p.text, p.score) for p in phrases] == [("deep learning models", 8.0), ("deep learning", 5.0)]


def test_rose_et_al_worked_example():
    # Rose et al. 2010, Table 1.2 (their stop list differs only on words that do not matter here):
    # linear diophantine equations 8.5, linear constraints 4.5, natural numbers / strict inequations /
    # nonstrict inequations 4; by hand: deg(linear) = 2 + 3, freq 2 -> 2.5; deg(inequations) = 2 + 2, freq 2 -> 2.
    scores = {p.text: p.score for p in rake(ROSE_ABSTRACT)}
    assert scores["linear diophantine equations"] == 8.5
    assert scores["linear constraints"] == 4.5
    assert scores["natural numbers"] == scores["strict inequations"] == scores["nonstrict inequations"] == 4.0
    assert scores["compatibility"] == 1.0  # two one-word occurrences: deg 2 / freq 2
    ranked = [p.text for p in rake(ROSE_ABSTRACT)][:5]
    # Ties at 4.0 keep text order.
    assert ranked == ["linear diophantine equations", "linear constraints", "natural numbers", "strict inequations",
                      "nonstrict inequations"]


def test_punctuation_splits_phrases_and_spans_are_kept():
    text = "Fast-moving, red cars!"
    tokens = word_spans(text)
    assert [t.text for t in tokens] == ["Fast", "-", "moving", ",", "red", "cars", "!"]
    assert all(text[t.start:t.end] == t.text for t in tokens)
    # "fast" | "moving" | "red cars" -> 1, 1, 2 + 2
    assert [(p.text, p.score) for p in rake(text)] == [("red cars", 4.0), ("fast", 1.0), ("moving", 1.0)]


def test_stop_words_are_case_insensitive_and_contractions_stay_whole():
    assert [p.text for p in rake("The Cat DON'T sleep")] == ["cat", "sleep"]


def test_sklearn_stop_list_option():
    # scikit-learn's list has "least": the first phrase shrinks to [89 dead] (deg 2 each -> 4).
    assert [(p.text, p.score) for p in rake("At least 89 dead in china earthquakes", "sklearn")] == [
        ("89 dead", 4.0), ("china earthquakes", 4.0)]
    with pytest.raises(ValueError, match="stop-word list"):
        rake("x", "smart")  # type: ignore[arg-type]


def test_no_candidates():
    assert rake("it is what it is.") == []
