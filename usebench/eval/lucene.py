"""BM25 on a real Lucene index through Pyserini (``bench eval --model bm25-pyserini``): the reference for the
``anserini`` preset of :mod:`usebench.eval.bm25`.

Texts are indexed with Anserini's ``SimpleIndexer`` (``DefaultEnglishAnalyzer``: Lucene's ``StandardTokenizer``,
English possessive removal, lowercase, Lucene's 33 English stopwords, ``PorterStemFilter``) in a temporary
directory that is deleted with the scorer, one index per collection, and scored with Lucene's ``BM25Similarity``
at Pyserini's defaults (k1 0.9, b 0.4). Everything a task needs goes through Pyserini's public API:

- ``pairs``/``rerank``: ``LuceneIndexReader.compute_query_document_score`` (the query analysed and turned into a
  bag-of-words query as ``LuceneSearcher.search`` does, scored against one document; Lucene's float32 score);
- ``search``: ``LuceneSearcher.batch_search``, Lucene's ranking (score, then index order), with Anserini's score
  post-processing (rounded to 1e-4, ties perturbed by 1e-6 so the scores keep Lucene's order). Past the documents
  that match, rows are filled with score-0 documents in corpus order, as :class:`~usebench.eval.bm25.BM25Scorer`.

Corpus statistics follow the same rules as ``BM25Scorer``: the task's texts (``prepare``), each dataset separately
(``use_collection``), or the searched corpus. Lucene stores document lengths in one byte (exact up to ~40 tokens)
and scores in float32; those are the expected differences from ``bm25-anserini``.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from usebench.eval.bm25_corpus import CorpusStatistics
from usebench.eval.pyserini_compat import load_pyserini

K1, B = 0.9, 0.4  # Pyserini's LuceneSearcher.set_bm25 defaults (Anserini's BM25 defaults)
ANALYZER = ("Anserini DefaultEnglishAnalyzer: Lucene StandardTokenizer, english possessive, lowercase, "
            "lucene english stopwords (33), porter stemmer")


@dataclass
class _Index:
    """One Lucene index of a collection: row i of the collection is document id ``str(i)``."""

    path: str
    n_rows: int
    reader: object
    searcher: object | None = None

    def stats(self) -> dict:
        s = self.reader.stats()
        return {"n_docs": int(s["non_empty_documents"]), "n_rows": self.n_rows,
                "avgdl": float(s["total_terms"]) / max(1, int(s["non_empty_documents"])),
                "vocab": int(s["unique_terms"])}


class LuceneScorer(CorpusStatistics):
    """Lucene BM25 through Pyserini, behind the :class:`~usebench.eval.scorer.Scorer` protocol."""

    def __init__(self, k1: float = K1, b: float = B, threads: int | None = None):
        super().__init__()
        self.pyserini = load_pyserini()  # fails here, with what to install, when the extra is missing
        self.name = "bm25-pyserini"
        self.k1, self.b = float(k1), float(b)
        self.threads = threads or max(1, min(4, os.cpu_count() or 1))
        self._similarity = self.pyserini.autoclass("org.apache.lucene.search.similarities.BM25Similarity")(
            self.k1, self.b)
        self._root = tempfile.mkdtemp(prefix="usebench-lucene-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._root, True)
        self._n_indexes = 0

    def close(self) -> None:
        """Delete the temporary indexes now (otherwise when the scorer is garbage-collected)."""
        self._cleanup()

    # --- indexing ----------------------------------------------------------------------------------------------
    def _build(self, texts: Sequence[str]) -> _Index:
        """A fresh Lucene index of ``texts`` (document id = position), one indexing thread so ids follow order."""
        path = os.path.join(self._root, f"index{self._n_indexes}")
        self._n_indexes += 1
        indexer = self.pyserini.LuceneIndexer(path, threads=1)
        batch = 10_000
        for s in range(0, len(texts), batch):
            indexer.add_batch_raw([json.dumps({"id": str(s + i), "contents": t})
                                   for i, t in enumerate(texts[s : s + batch])])
        indexer.close()
        return _Index(path, len(texts), self.pyserini.LuceneIndexReader(path))

    _index_collection = _build  # rerank/pairs score against the collection's index

    def _index_corpus(self, corpus: list[str]) -> _Index:
        index = self._build(corpus)
        index.searcher = self.pyserini.LuceneSearcher(index.path)
        index.searcher.set_bm25(self.k1, self.b)
        return index

    def _doc_ids(self, texts: Sequence[str]) -> list[str]:
        """Lucene document ids of ``texts``; texts not in the collection join it (and its statistics)."""
        return [str(row) for row in self._collection_rows(texts)]

    def _score(self, query: str, doc_id: str) -> float:
        return float(self._index.reader.compute_query_document_score(doc_id, query, similarity=self._similarity))

    def pairs(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """BM25 of each document ``b[i]`` for the query ``a[i]`` -> (n,)."""
        if len(a) != len(b):
            raise ValueError(f"pairs need aligned lists, got {len(a)} and {len(b)} texts")
        ids = self._doc_ids(b)
        return np.array([self._score(q, d) for q, d in zip(a, ids)], dtype=np.float64)

    def rerank(self, query: str, candidates: Sequence[str]) -> np.ndarray:
        """BM25 of each candidate document for ``query`` -> (m,)."""
        ids = self._doc_ids(candidates)
        return np.array([self._score(query, d) for d in ids], dtype=np.float64)

    # --- retrieval over the searched corpus: Lucene's ranking ------------------------------------------------
    def search_with_matches(self, queries: Sequence[str], corpus: Sequence[str], k: int):
        """Top-k as :meth:`search`, plus how many documents each query matched within the top k (nq,)."""
        index = self._corpus_index(corpus)
        k = min(k, len(corpus))
        qids = [str(i) for i in range(len(queries))]
        hits = index.searcher.batch_search(list(queries), qids, k=k, threads=self.threads)
        scores = np.zeros((len(queries), k), np.float64)
        indices = np.zeros((len(queries), k), np.int64)
        matches = np.zeros(len(queries), np.int64)
        for row, qid in enumerate(qids):
            found = hits.get(qid, [])[:k]
            ids = [int(h.docid) for h in found]
            taken = np.asarray(ids, np.int64)
            fill = np.setdiff1d(np.arange(min(len(corpus), k + len(ids))), taken, assume_unique=True)[: k - len(ids)]
            indices[row] = np.concatenate([taken, fill])
            scores[row, : len(found)] = [h.score for h in found]
            matches[row] = len(found)
        return scores, indices, matches

    def describe(self) -> dict:
        """Implementation, parameters, analyzer and the corpus statistics used since the last ``prepare``."""
        p = self.pyserini
        info = {"kind": "lexical", "method": "bm25", "preset": "pyserini",
                "implementation": f"pyserini {p.version} ({p.anserini_jar}, Lucene BM25Similarity), java {p.java_version}",
                "k1": self.k1, "b": self.b, "analyzer": ANALYZER,
                "search_scores": "Anserini's: rounded to 1e-4, ties perturbed by 1e-6 in Lucene's order"}
        info["corpus_statistics"] = self.corpus_statistics()
        return info



def compare_rankings(ours, lucene: LuceneScorer, queries: Sequence[str], corpus: Sequence[str], k: int = 10) -> dict:
    """How often ``ours`` (a bm25s scorer) returns Lucene's top-k for the same queries over the same corpus.

    ``identical``: the same documents in the same order. ``identical_up_to_ties``: the same list of scores under
    ``ours`` (relative 1e-6), i.e. the lists differ only in the order, or the choice at the cut, of documents
    whose scores tie; Lucene's own order among tied documents follows float32 summation noise, not the doc id.
    """
    _, mine = ours.search(queries, corpus, k)
    _, theirs = lucene.search(queries, corpus, k)
    ours.prepare(corpus)
    identical = tied = 0
    for q, a, b in zip(queries, mine, theirs):
        identical += a.tolist() == b.tolist()
        sa = ours.rerank(q, [corpus[i] for i in a])
        sb = ours.rerank(q, [corpus[i] for i in b])
        tied += bool(np.allclose(sa, sb, rtol=1e-6, atol=1e-9))
    n = max(1, len(queries))
    return {"queries": len(queries), "k": k, "identical": identical / n, "identical_up_to_ties": tied / n}
