"""What the two BM25 scorers share (:class:`~usebench.eval.bm25.BM25Scorer` on bm25s,
:class:`~usebench.eval.lucene.LuceneScorer` on a Lucene index): where their corpus statistics come from, the
cache of the searched corpus' index, and how ``describe()`` reports both. Each scorer says only how it indexes
texts (:meth:`_index_collection`, :meth:`_index_corpus`) and how it searches (``search_with_matches``)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np


class CorpusStatistics(ABC):
    """A scorer's collections: the task's texts (``prepare``), each dataset separately (``use_collection``) for
    ``rerank``/``pairs``, and the searched corpus for ``search``. Indexes are built lazily, by the subclass."""

    def __init__(self) -> None:
        self._rows: dict[str, int] = {}  # text -> row of the collection index (insertion order = row order)
        self._index: Any = None
        self._added_after_prepare = 0
        self._collection_name: str | None = None  # set by use_collection: the dataset being scored
        self._collections: dict[str, dict] = {}  # statistics of each named collection since prepare
        self._single: dict | None = None  # statistics of the task's one collection since prepare
        self._search_key: tuple | None = None
        self._search_index: Any = None
        self._search_stats: list[dict] = []

    # --- what a scorer provides ------------------------------------------------------------------------------
    @abstractmethod
    def _index_collection(self, texts: list[str]) -> Any:
        """An index of ``texts`` (row i = texts[i]) with ``stats()``: for ``rerank``/``pairs``."""

    @abstractmethod
    def _index_corpus(self, corpus: list[str]) -> Any:
        """A searchable index of ``corpus`` (every row, duplicates included) with ``stats()``."""

    @abstractmethod
    def search_with_matches(self, queries: Sequence[str], corpus: Sequence[str],
                            k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Top-``k`` (scores, corpus rows) of ``corpus`` per query, and how many documents each query matches."""

    # --- statistics from the task's texts (rerank, pairs) ---------------------------------------------------
    def prepare(self, texts: Sequence[str]) -> None:
        """Take the task's texts as the collection for ``rerank``/``pairs`` (indexed on first use: a retrieval
        task only searches, with statistics from its corpus)."""
        self._collection_name, self._collections, self._single = None, {}, None
        self._set_collection(texts)
        self._search_stats = []

    def use_collection(self, name: str, texts: Sequence[str]) -> None:
        """Statistics for the following ``rerank``/``pairs`` calls from ``texts`` alone (one dataset of a task
        made of several, each indexed separately); recorded under ``name`` in ``describe()``."""
        self._collection_name = name
        self._set_collection(texts)

    def _set_collection(self, texts: Sequence[str]) -> None:
        self._rows = {t: i for i, t in enumerate(dict.fromkeys(texts))}
        self._index = None
        self._added_after_prepare = 0

    def _collection_rows(self, texts: Sequence[str]) -> list[int]:
        """Index rows of ``texts``; texts not in the collection join it (and its statistics)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._rows]
        for t in missing:
            self._rows[t] = len(self._rows)
        self._added_after_prepare += len(missing)
        if missing or self._index is None:
            self._index = self._index_collection(list(self._rows))
            stats = {"added_after_prepare": self._added_after_prepare, **self._index.stats()}
            if self._collection_name is not None:
                self._collections[self._collection_name] = stats
            else:
                self._single = stats
        return [self._rows[t] for t in texts]

    # --- retrieval over the searched corpus ------------------------------------------------------------------
    def search(self, queries: Sequence[str], corpus: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k corpus documents per query (statistics from ``corpus``); see ``search_with_matches``."""
        scores, indices, _ = self.search_with_matches(queries, corpus, k)
        return scores, indices

    def _corpus_index(self, corpus: Sequence[str]) -> Any:
        """The index of ``corpus``, rebuilt only when the corpus changes."""
        key = (len(corpus), hash(tuple(corpus)))
        if key != self._search_key or self._search_index is None:
            self._search_index = self._index_corpus(list(corpus))
            self._search_key = key
            self._search_stats.append(self._search_index.stats())
        return self._search_index

    def corpus_statistics(self) -> dict:
        """``describe()``'s record of the collections used since the last ``prepare``."""
        stats: dict = {}
        if self._collections:
            stats["rerank_pairs"] = {"source": "each dataset of the task split indexed separately (its unique texts)",
                                     "collections": dict(self._collections)}
        elif self._single is not None:
            stats["rerank_pairs"] = {"source": "unique texts of the task split (prepare)", **self._single}
        if self._search_stats:
            stats["search"] = {"source": "the searched corpus", "n_corpora": len(self._search_stats),
                               "n_docs": sum(s["n_docs"] for s in self._search_stats)}
        return stats
