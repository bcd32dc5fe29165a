"""Exact top-k inner-product search over L2-normalised vectors.

Backends: ``numpy`` (chunked exact search, always available); FAISS and GPU backends plug in here.
Ties are broken deterministically by the lower corpus index, so every backend returns the same top-k.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SearchResult:
    scores: np.ndarray  # (nq, k) float32, best first
    indices: np.ndarray  # (nq, k) int64
    backend: str


def topk_numpy(queries: np.ndarray, corpus: np.ndarray, k: int, chunk: int = 1024) -> SearchResult:
    """Brute-force exact search, chunked over queries so memory stays at chunk x n_corpus floats."""
    k = min(k, corpus.shape[0])
    scores = np.empty((queries.shape[0], k), dtype=np.float32)
    indices = np.empty((queries.shape[0], k), dtype=np.int64)
    for start in range(0, queries.shape[0], chunk):
        sims = queries[start : start + chunk] @ corpus.T  # (chunk, n_corpus)
        # Stable sort on the negated scores: equal scores keep ascending corpus index.
        order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        indices[start : start + chunk] = order
        scores[start : start + chunk] = np.take_along_axis(sims, order, axis=1)
    return SearchResult(scores, indices, "numpy")


def search_inner_product(queries: np.ndarray, corpus: np.ndarray, k: int, backend: str = "auto") -> SearchResult:
    """Top-k by inner product. ``backend``: auto | numpy (more registered by the retrieval module)."""
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    corpus = np.ascontiguousarray(corpus, dtype=np.float32)
    return topk_numpy(queries, corpus, k)
