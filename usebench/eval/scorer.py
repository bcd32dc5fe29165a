"""What task adapters score with: a :class:`Scorer` gives query-document scores without tasks touching models.

``DenseScorer`` turns an :class:`~usebench.eval.encoder.Encoder` into cosine scores. The engine calls
``prepare(task.texts(data))`` once, so every unique text of a task is encoded in one length-sorted pass; the
scoring calls then only look vectors up. Lexical scorers (BM25) implement the same protocol, so every task
works with them unchanged.
"""
from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from usebench.errors import NonFiniteScoreError
from usebench.eval.encoder import Encoder


class Scorer(Protocol):
    """Scores between texts. Higher is more similar."""

    name: str

    def prepare(self, texts: Sequence[str]) -> None:
        """Called once per task with every text it will score (encode them, or collect corpus statistics)."""

    def use_collection(self, name: str, texts: Sequence[str]) -> None:
        """The following ``pairs``/``rerank`` calls belong to the dataset ``name`` whose documents are ``texts``:
        lexical scorers take their corpus statistics from those texts alone (a task made of independent datasets,
        such as TwitterPara's two, indexes each separately); dense scorers ignore it."""

    def pairs(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Score of each aligned pair (a[i], b[i]) -> (n,)."""

    def rerank(self, query: str, candidates: Sequence[str]) -> np.ndarray:
        """Score of the query against each of its candidates -> (len(candidates),)."""

    def search(self, queries: Sequence[str], corpus: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k corpus indices per query, best first: (scores (nq, k), indices (nq, k))."""

    def describe(self) -> dict:
        """What a result file records about the scorer (model, pooling, backend, device...)."""


def finite_embeddings(x: np.ndarray, model: str) -> np.ndarray:
    """``x`` itself; NaN or infinite embeddings (an overflowing model, a broken checkpoint) are an error here,
    before they turn into NaN metrics or into a library's ValueError deep inside a metric."""
    bad = ~np.isfinite(x).all(axis=1) if x.size else np.zeros(0, dtype=bool)
    if bad.any():
        raise NonFiniteScoreError(f"model {model!r} produced non-finite embeddings for {int(bad.sum())} of "
                                  f"{len(x)} texts; nothing is scored or stored from them")
    return x


def l2_normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


class DenseScorer:
    """Cosine similarity between encoder embeddings, each unique text encoded once per task."""

    def __init__(self, encoder: Encoder, search_backend: str = "auto"):
        self.encoder = encoder
        self.name = encoder.name
        self.search_backend = search_backend
        self._index: dict[str, int] = {}
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._last_backend: str | None = None
        self._last_device: str | None = None

    def prepare(self, texts: Sequence[str]) -> None:
        unique = list(dict.fromkeys(texts))
        self._last_backend = self._last_device = None  # a new task: report only searches it makes
        self._index = {t: i for i, t in enumerate(unique)}
        if unique:
            self._vectors = l2_normalize(finite_embeddings(self.encoder.encode(unique), self.name))

    def use_collection(self, name: str, texts: Sequence[str]) -> None:
        """Nothing: a cosine has no collection statistics."""

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``; texts not given to ``prepare`` are encoded now."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._index]
        if missing:
            start = len(self._index)
            extra = l2_normalize(finite_embeddings(self.encoder.encode(missing), self.name))
            self._vectors = extra if start == 0 else np.concatenate([self._vectors, extra])
            self._index.update({t: start + i for i, t in enumerate(missing)})
        return self._vectors[[self._index[t] for t in texts]]

    def pairs(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        return np.einsum("nd,nd->n", self.vectors(a), self.vectors(b))

    def rerank(self, query: str, candidates: Sequence[str]) -> np.ndarray:
        return self.vectors(candidates) @ self.vectors([query])[0]

    def search(self, queries: Sequence[str], corpus: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        from usebench.eval.retrieval import search_inner_product

        device = getattr(self.encoder, "device", None)  # search where the evaluation was asked to run
        result = search_inner_product(self.vectors(queries), self.vectors(corpus), k, backend=self.search_backend,
                                      device=None if device is None else str(device))
        self._last_backend, self._last_device = result.backend, result.device
        return result.scores, result.indices

    def describe(self) -> dict:
        info = {"kind": "dense", "similarity": "cosine", **self.encoder.describe()}
        if self._last_backend:
            info["retrieval_backend"] = self._last_backend
            info["retrieval_device"] = self._last_device
        return info
