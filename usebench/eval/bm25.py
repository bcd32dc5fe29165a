"""BM25 as a :class:`~usebench.eval.scorer.Scorer`, built on ``bm25s`` (sparse BM25 weights, numpy/scipy only).

Presets:
- ``elasticsearch`` — the TSDAE paper's BM25 row (Elasticsearch, default settings): Lucene's BM25 with k1=1.2,
  b=0.75; the ``standard`` analyzer: Unicode word split + lowercase, no stopwords (ES >= 5), no stemming.
- ``anserini`` — Pyserini/Anserini defaults: k1=0.9, b=0.4; ``DefaultEnglishAnalyzer``: word split, English
  possessive removal, lowercase, Lucene's 33 English stopwords, Porter stemming as Lucene's ``PorterStemFilter``:
  Martin Porter's C/Java version, whose departures from the published algorithm (words of <= 2 letters are left
  alone, -bli -> -ble, -logi -> -log) nltk's ``PorterStemmer`` reproduces in ``MARTIN_EXTENSIONS`` mode.
  (PyStemmer's ``porter`` is the published algorithm: it turns "us" into "u" and "s" into "".)

Both score with Lucene's BM25 (bm25s ``method="lucene"``): per query term t in document d,
``idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))`` with ``idf = log(1 + (N - df + 0.5) / (df + 0.5))``, the
form of Lucene >= 8 (it dropped the constant factor k1 + 1, which changes no ranking). A repeated query term
counts once per occurrence, as a Lucene boolean query of the analysed terms does. As in Lucene, N and avgdl
count only documents with at least one indexed term. Known differences from a real Lucene index: the word split
is a regex approximation of the UAX#29 ``StandardTokenizer`` (words join across ``'`` and ``.``, e.g. ``can't``,
``u.s``, ``3.14``; emoji are single tokens), and Lucene stores document lengths lossily in one byte (exact up to
~40 tokens), which bm25s does not emulate.

Corpus statistics: ``rerank`` and ``pairs`` use the unique texts given to ``prepare`` (every text of the task
split), or those given to ``use_collection`` where a task scores independent datasets (TwitterPara's Twitter URL
and PIT-2015, each indexed separately); ``search`` indexes the corpus it searches, as a search engine would.
``describe()`` says which, with the size of each collection.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp

from usebench.errors import ConfigError
from usebench.eval.bm25_corpus import CorpusStatistics
from usebench.eval.retrieval import topk_rows

Preset = Literal["elasticsearch", "anserini"]

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (Anserini's default stopword list); bm25s ships the same 33.
LUCENE_ENGLISH_STOPWORDS: tuple[str, ...] = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with",
)
# Words are runs of \w joined across an inner apostrophe or dot (UAX#29 MidLetter/MidNumLet); emoji stand alone.
TOKEN_RE = re.compile(r"\w+(?:['’.]\w+)*|[\U0001F300-\U0001FAFF\u2600-\u27BF]")
POSSESSIVE_RE = re.compile(r"['’]s$")


# bm25s imports JAX at import time when it is installed and runs one top-k with it. On a GPU host JAX then claims
# ~75% of the GPU's memory per process (starving torch in the same process and every other process) or fails in
# subprocesses without a usable device. This module only builds the index with bm25s (scores and top-k are our own
# scipy/numpy code), so bm25s never needs JAX: it is imported with JAX blocked, and these JAX settings are given
# defaults (a user's own values win) so that any JAX a later import brings up stays on the CPU and lazy.
JAX_CPU_ENV: dict[str, str] = {"JAX_PLATFORMS": "cpu", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
BM25S_BACKEND = "numpy"  # bm25s's retrieval/CSC backend: numpy (no numba JIT, no JAX)


def import_bm25s():
    """``bm25s``, imported without initialising JAX on any device (see :data:`JAX_CPU_ENV`)."""
    if "bm25s" in sys.modules:
        return sys.modules["bm25s"]
    for name, value in JAX_CPU_ENV.items():
        os.environ.setdefault(name, value)
    if "jax" in sys.modules:  # the user's JAX is already up: leave it as they configured it
        import bm25s

        return bm25s
    blocked = {name: sys.modules.get(name) for name in ("jax", "jax.lax")}
    sys.modules.update({name: None for name in blocked})  # `import jax.lax` raises ImportError in bm25s
    try:
        import bm25s
    finally:
        for name, module in blocked.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return bm25s


@dataclass(frozen=True)
class BM25Config:
    """One BM25 setting: the scoring parameters and the analyzer."""

    preset: str
    k1: float
    b: float
    method: Literal["lucene", "robertson", "atire"] = "lucene"  # bm25s's tf/idf variant
    stopwords: tuple[str, ...] = ()
    stemmer: Literal["porter"] | None = None
    possessive: bool = False  # strip a trailing 's (Lucene's EnglishPossessiveFilter)


PRESETS: dict[str, BM25Config] = {
    # Elasticsearch's default similarity (BM25, k1 1.2, b 0.75) and `standard` analyzer
    "elasticsearch": BM25Config("elasticsearch", k1=1.2, b=0.75),
    # Pyserini's LuceneSearcher defaults (k1 0.9, b 0.4) and Anserini's DefaultEnglishAnalyzer
    "anserini": BM25Config("anserini", k1=0.9, b=0.4, stopwords=LUCENE_ENGLISH_STOPWORDS, stemmer="porter",
                           possessive=True),
}
# `bench eval --model NAME` values that mean BM25, and the preset each selects ("pyserini": a real Lucene index
# through Pyserini, usebench/eval/lucene.py, the reference for "anserini"; needs the `pyserini` extra).
MODEL_NAMES: dict[str, str] = {"bm25": "elasticsearch", "bm25-elasticsearch": "elasticsearch",
                               "bm25-anserini": "anserini", "bm25-pyserini": "pyserini"}
LUCENE_PRESET = "pyserini"


# What a run config records about where the statistics come from (part of the run id: a change re-runs BM25).
STATISTICS = ("rerank/pairs: the unique texts of the task split, each dataset separately where a task has "
              "independent datasets (TwitterPara); search: the searched corpus")


def get_preset(name: str) -> BM25Config:
    """The preset called ``name``; an unknown name is a :class:`ConfigError` listing the known ones."""
    if name not in PRESETS:
        hint = " (Lucene through Pyserini: LuceneScorer / make_bm25_scorer)" if name == LUCENE_PRESET else ""
        raise ConfigError(f"unknown BM25 preset {name!r} (known: {', '.join(PRESETS)}){hint}")
    return PRESETS[name]


class Analyzer:
    """Text -> index terms, as the preset's Lucene analyzer would produce them (see the module docstring)."""

    def __init__(self, config: BM25Config):
        self.config = config
        self._stop = frozenset(config.stopwords)
        self._stemmer = None
        self._stems: dict[str, str] = {}  # the stemmer is pure Python: each distinct word is stemmed once
        if config.stemmer == "porter":
            from nltk.stem.porter import PorterStemmer

            self._stemmer = PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)

    def __call__(self, text: str) -> list[str]:
        tokens = TOKEN_RE.findall(text.lower())
        if self.config.possessive:
            tokens = [POSSESSIVE_RE.sub("", t) for t in tokens]
        if self._stop:
            tokens = [t for t in tokens if t not in self._stop]
        if self._stemmer is not None:
            tokens = [self._stem(t) for t in tokens]
        return tokens

    def _stem(self, word: str) -> str:
        stem = self._stems.get(word)
        if stem is None:
            stem = self._stems[word] = self._stemmer.stem(word, to_lowercase=False)
        return stem

    def describe(self) -> str:
        parts = ["unicode word split", "lowercase"]
        if self.config.possessive:
            parts.append("english possessive")
        parts.append(f"lucene english stopwords ({len(self._stop)})" if self._stop else "no stopwords")
        parts.append(f"{self.config.stemmer} stemmer" if self._stemmer else "no stemming")
        return ", ".join(parts)


@dataclass(frozen=True, eq=False)
class BM25Index:
    """BM25 weight of every (document, term): ``weights[d, t]``, so a query's score is a sparse dot product."""

    weights: sp.csr_matrix  # (n_rows, n_vocab) float64; all-zero rows for documents without terms
    vocab: dict[str, int]
    n_docs: int  # documents with at least one term (Lucene's docCount: the N of idf)
    avgdl: float

    @classmethod
    def build(cls, docs: Sequence[list[str]], config: BM25Config) -> BM25Index:
        """Index analysed documents with bm25s; empty documents keep a row but count in no statistic."""
        bm25s = import_bm25s()

        keep = [i for i, tokens in enumerate(docs) if tokens]
        if not keep:
            return cls(sp.csr_matrix((len(docs), 0), dtype=np.float64), {}, 0, 0.0)
        model = bm25s.BM25(k1=config.k1, b=config.b, method=config.method, dtype="float64",
                           backend=BM25S_BACKEND, csc_backend=BM25S_BACKEND)
        # Our own vocabulary, in sorted term order: bm25s would number terms in the iteration order of a Python
        # set, which changes with PYTHONHASHSEED, and a query's score sums its terms in column order, so the
        # last bits of a score (and the ranks of near-ties) would change from run to run.
        vocab_in_order = {t: i for i, t in enumerate(sorted({t for i in keep for t in docs[i]}))}
        ids = [[vocab_in_order[t] for t in docs[i]] for i in keep]
        model.index((ids, vocab_in_order), show_progress=False)
        data, indices, indptr = model.scores["data"], model.scores["indices"], model.scores["indptr"]
        n_vocab = len(indptr) - 1
        # bm25s stores (doc, term) as a CSC matrix: one column per term
        dense_rows = sp.csc_matrix((data, indices, indptr), shape=(len(keep), n_vocab)).tocsr()
        place = sp.csr_matrix((np.ones(len(keep)), (keep, np.arange(len(keep)))),
                              shape=(len(docs), len(keep)))
        vocab = {t: i for t, i in model.vocab_dict.items() if isinstance(t, str) and t and i < n_vocab}
        avgdl = float(np.mean([len(docs[i]) for i in keep]))
        return cls((place @ dense_rows).tocsr(), vocab, len(keep), avgdl)

    def query_matrix(self, queries: Sequence[list[str]]) -> sp.csr_matrix:
        """Term counts of analysed queries over the vocabulary (terms not in the index dropped) -> (nq, V)."""
        rows, cols = [], []
        for r, tokens in enumerate(queries):
            ids = [self.vocab[t] for t in tokens if t in self.vocab]
            rows.extend([r] * len(ids))
            cols.extend(ids)
        data = np.ones(len(rows), np.float64)
        return sp.csr_matrix((data, (rows, cols)), shape=(len(queries), self.weights.shape[1]))  # sums repeats

    def stats(self) -> dict:
        """Size of the collection behind the statistics: documents (N), rows, avgdl, vocabulary."""
        return {"n_docs": self.n_docs, "n_rows": int(self.weights.shape[0]), "avgdl": self.avgdl,
                "vocab": len(self.vocab)}


class BM25Scorer(CorpusStatistics):
    """BM25 through the Scorer protocol: ``pairs`` = BM25(query=a[i], doc=b[i]); higher is more similar."""

    def __init__(self, preset: str | BM25Config = "elasticsearch", memory_mb: int = 256):
        super().__init__()
        self.config = get_preset(preset) if isinstance(preset, str) else preset
        self.name = f"bm25-{self.config.preset}"
        self.analyzer = Analyzer(self.config)
        self.memory_mb = memory_mb
        self._tokens: list[list[str]] = []  # analysed texts of the collection, by row
        self._search_columns: sp.csc_matrix | None = None

    def _set_collection(self, texts: Sequence[str]) -> None:
        super()._set_collection(texts)
        self._tokens = []

    def _index_collection(self, texts: list[str]) -> BM25Index:
        self._tokens.extend(self.analyzer(t) for t in texts[len(self._tokens) :])  # each text analysed once
        return BM25Index.build(self._tokens, self.config)

    def _doc_rows(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._collection_rows(texts), dtype=np.int64)

    def pairs(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """BM25 of each document ``b[i]`` for the query ``a[i]`` -> (n,)."""
        if len(a) != len(b):
            raise ValueError(f"pairs need aligned lists, got {len(a)} and {len(b)} texts")
        rows = self._doc_rows(b)
        q = self._index.query_matrix([self.analyzer(t) for t in a])
        return np.asarray(q.multiply(self._index.weights[rows]).sum(axis=1), dtype=np.float64).ravel()

    def rerank(self, query: str, candidates: Sequence[str]) -> np.ndarray:
        """BM25 of each candidate document for ``query`` -> (m,)."""
        rows = self._doc_rows(candidates)
        q = self._index.query_matrix([self.analyzer(query)])
        return np.asarray((self._index.weights[rows] @ q.T).todense(), dtype=np.float64).ravel()

    # --- retrieval over the searched corpus (ties to the lower index) ----------------------------------------
    def search_with_matches(self, queries: Sequence[str], corpus: Sequence[str], k: int):
        """Top-k as :meth:`search`, plus how many documents each query matches at all (nq,).

        Past the matching documents the list is filled with score-0 documents in corpus order, so every row
        has ``min(k, len(corpus))`` entries as the Scorer protocol promises; callers that want only true
        matches (a search engine's answer) cut each row at its match count.
        """
        index = self._corpus_index(corpus)
        weights = self._search_columns  # (n_docs, V) CSC: a query chunk's terms are a cheap column slice
        q = index.query_matrix([self.analyzer(t) for t in queries])
        k = min(k, len(corpus))
        scores = np.zeros((len(queries), k), np.float64)
        indices = np.zeros((len(queries), k), np.int64)
        matches = np.zeros(len(queries), np.int64)
        chunk = max(1, self.memory_mb * 2**20 // (8 * max(1, len(corpus))))
        for s in range(0, len(queries), chunk):
            rows = q[s : s + chunk]
            terms = np.unique(rows.indices)
            # sparse (n_docs, T) @ dense (T, chunk): BM25 scores of the chunk against every document
            block = np.ascontiguousarray((weights[:, terms] @ rows[:, terms].toarray().T).T)  # (chunk, n_docs)
            matches[s : s + chunk] = (block > 0).sum(axis=1)
            scores[s : s + chunk], indices[s : s + chunk] = topk_rows(block, k)
        return scores, indices, matches

    def _index_corpus(self, corpus: list[str]) -> BM25Index:
        index = BM25Index.build([self.analyzer(t) for t in corpus], self.config)
        self._search_columns = index.weights.tocsc()
        return index

    def describe(self) -> dict:
        """Preset, formula, analyzer and the corpus statistics used since the last ``prepare``."""
        bm25s = import_bm25s()

        config = {k: v for k, v in asdict(self.config).items() if k not in ("stopwords", "method")}
        info = {"kind": "lexical", "method": "bm25", "implementation": f"bm25s {bm25s.__version__}",
                "bm25_variant": self.config.method, **config, "analyzer": self.analyzer.describe()}
        if self.config.method == "lucene":
            info["formula"] = "idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)), idf = log(1 + (N - df + 0.5) / (df + 0.5))"
        info["corpus_statistics"] = self.corpus_statistics()
        return info


def make_bm25_scorer(preset: str):
    """A BM25 scorer for ``preset``: bm25s for the ``PRESETS``, Lucene through Pyserini for ``pyserini``."""
    if preset == LUCENE_PRESET:
        from usebench.eval.lucene import LuceneScorer

        return LuceneScorer()
    return BM25Scorer(preset)


def bm25_method(model: str) -> tuple[BM25Scorer, dict, dict]:
    """Scorer, method record and config for ``bench eval --model <model>`` where ``model`` names BM25."""
    if MODEL_NAMES[model] == LUCENE_PRESET:
        from usebench.eval.lucene import ANALYZER, LuceneScorer

        lucene = LuceneScorer()
        method = {"name": "bm25", "base_model": model, "preset": LUCENE_PRESET}
        return lucene, method, {**method, "k1": lucene.k1, "b": lucene.b, "analyzer": ANALYZER,
                                "implementation": "pyserini", "corpus_statistics": STATISTICS}
    scorer = BM25Scorer(MODEL_NAMES[model])
    params = {k: v for k, v in asdict(scorer.config).items() if k != "stopwords"}
    method = {"name": "bm25", "base_model": model, "preset": scorer.config.preset}
    config = {**method, **params, "analyzer": scorer.analyzer.describe(), "corpus_statistics": STATISTICS}
    return scorer, method, config
