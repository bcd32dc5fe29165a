"""RAKE key-phrase extraction, as PaSeR uses it to pick the phrases it masks.

Rose, Engel, Cramer, Cowley 2010, "Automatic Keyword Extraction from Individual Documents" (in *Text Mining:
Applications and Theory*). PaSeR (Wu & Zhao 2022, §3.1.1) ranks a sentence's phrases with it and masks the top k.

The algorithm, for one text:

1. Tokenise into words and punctuation marks.
2. Candidate phrases are the maximal runs of consecutive words that are neither stop words nor punctuation
   (stop words and punctuation *delimit* phrases and are never part of one).
3. Build the word co-occurrence graph over the candidates: two words co-occur when they are in the same
   candidate, and a word co-occurs with itself. ``freq(w)`` = occurrences of w in candidates;
   ``deg(w)`` = sum over the candidates containing w (once per occurrence) of the candidate's length in words.
4. ``word_score(w) = deg(w) / freq(w)``; ``phrase_score = sum of its words' scores``.
5. Rank the distinct phrases by score, highest first.

Words are compared lower-cased. Ties are broken by the phrase's first position in the text (earlier first), so
the ranking is deterministic (rake-nltk breaks ties by comparing the phrase strings, which is arbitrary).

Stop words: by default NLTK's English list (179 words), the list rake-nltk (the common Python RAKE) and EDA's
augmentation code (used by PaSeR's released data) both use; it is written out below because NLTK's data
downloader cannot be reached offline. ``"sklearn"`` selects scikit-learn's 318-word ``ENGLISH_STOP_WORDS``.
RAKE's original SMART list (571 words) treats e.g. "least" and "two" as stop words; PaSeR's examples
("At *least 89 dead* in china earthquakes", "There are *two options* for you", Table 7) mask them, which
matches the NLTK list.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

StopList = Literal["nltk", "sklearn"]

# NLTK's English stop-word list (nltk_data `corpora/stopwords/english`, 179 entries).
NLTK_ENGLISH_STOPWORDS: frozenset[str] = frozenset(["i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "you're", "you've", "you'll", "you'd", "your", "yours", "yourself", "yourselves", "he", "him", "his", "himself", "she", "she's", "her", "hers", "herself", "it", "it's", "its", "itself", "they", "them", "their", "theirs", "themselves", "what", "which", "who", "whom", "this", "that", "that'll", "these", "those", "am", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "having", "do", "does", "did", "doing", "a", "an", "the", "and", "but", "if", "or", "because", "as", "until", "while", "of", "at", "by", "for", "with", "about", "against", "between", "into", "through", "during", "before", "after", "above", "below", "to", "from", "up", "down", "in", "out", "on", "off", "over", "under", "again", "further", "then", "once", "here", "there", "when", "where", "why", "how", "all", "any", "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor", "not", "only", "own", "same", "so", "than", "too", "very", "s", "t", "can", "will", "just", "don", "don't", "should", "should've", "now", "d", "ll", "m", "o", "re", "ve", "y", "ain", "aren", "aren't", "couldn", "couldn't", "didn", "didn't", "doesn", "doesn't", "hadn", "hadn't", "hasn", "hasn't", "haven", "haven't", "isn", "isn't", "ma", "mightn", "mightn't", "mustn", "mustn't", "needn", "needn't", "shan", "shan't", "shouldn", "shouldn't", "wasn", "wasn't", "weren", "weren't", "won", "won't", "wouldn", "wouldn't"])

# A word: letters/digits, optionally joined by apostrophes ("don't", "o'clock"); everything else that is not
# white space is a one-character punctuation token (hyphens and slashes split words, as rake-nltk's tokenizer).
_TOKEN_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|[^\w\s]|_")


def stopwords(name: StopList = "nltk") -> frozenset[str]:
    """The stop-word list ``name`` (lower-case words)."""
    if name == "nltk":
        return NLTK_ENGLISH_STOPWORDS
    if name == "sklearn":
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        return frozenset(ENGLISH_STOP_WORDS)
    raise ValueError(f"unknown stop-word list {name!r}; expected 'nltk' or 'sklearn'")


@dataclass(frozen=True)
class Token:
    """One token of the text: its characters, span ``[start, end)`` and whether it is a word."""

    text: str
    start: int
    end: int
    is_word: bool


@dataclass(frozen=True)
class RakePhrase:
    """A distinct candidate phrase: lower-cased words, RAKE score and every occurrence (token indices)."""

    words: tuple[str, ...]
    score: float
    occurrences: tuple[tuple[int, ...], ...]

    @property
    def text(self) -> str:
        return " ".join(self.words)


def word_spans(text: str) -> list[Token]:
    """Words and punctuation marks of ``text`` with their character spans. Not TSDAE's NLTK Treebank words
    (:func:`usebench.methods.parts.noise.word_tokenize`): RAKE needs spans to mask in place, and splits hyphens and slashes
    as rake-nltk's tokenizer does, while Treebank rules would split "don't" and re-quote."""
    return [Token(m.group(), m.start(), m.end(), not _is_punct(m.group())) for m in _TOKEN_RE.finditer(text)]


def _is_punct(tok: str) -> bool:
    return len(tok) == 1 and not tok.isalnum()


def candidate_runs(tokens: Sequence[Token], stop: frozenset[str]) -> list[tuple[int, ...]]:
    """Maximal runs of token indices that are words and not stop words, in text order."""
    runs: list[tuple[int, ...]] = []
    current: list[int] = []
    for i, tok in enumerate(tokens):
        if tok.is_word and _norm(tok.text) not in stop:
            current.append(i)
            continue
        if current:
            runs.append(tuple(current))
            current = []
    if current:
        runs.append(tuple(current))
    return runs


def _norm(word: str) -> str:
    return word.lower().replace("’", "'")


def word_scores(phrases: Sequence[Sequence[str]]) -> dict[str, float]:
    """RAKE's deg(w)/freq(w) for every word of the candidate ``phrases`` (each a list of lower-cased words)."""
    freq: dict[str, int] = defaultdict(int)
    deg: dict[str, int] = defaultdict(int)
    for words in phrases:
        for w in words:
            freq[w] += 1
            deg[w] += len(words)  # co-occurs with every word of the phrase, itself included
    return {w: deg[w] / freq[w] for w in freq}


def rake(text: str, stop: StopList | frozenset[str] = "nltk") -> list[RakePhrase]:
    """The distinct candidate phrases of ``text``, highest RAKE score first (ties: earlier in the text first)."""
    return rank_phrases(word_spans(text), stopwords(stop) if isinstance(stop, str) else stop)


def rank_phrases(tokens: Sequence[Token], stop: frozenset[str]) -> list[RakePhrase]:
    """:func:`rake` on an already tokenized text (token indices in the result refer to ``tokens``)."""
    runs = candidate_runs(tokens, stop)
    run_words = [tuple(_norm(tokens[i].text) for i in run) for run in runs]
    scores = word_scores(run_words)
    occurrences: dict[tuple[str, ...], list[tuple[int, ...]]] = {}
    for words, run in zip(run_words, runs):
        occurrences.setdefault(words, []).append(run)  # dict keeps first-occurrence order
    phrases = [RakePhrase(words, sum(scores[w] for w in words), tuple(occ)) for words, occ in occurrences.items()]
    order = {p.words: i for i, p in enumerate(phrases)}
    return sorted(phrases, key=lambda p: (-p.score, order[p.words]))
