"""A deterministic stand-in for a dense scorer over hand-made vectors, for the ranking-task tests.

Each text the test names gets a hand-chosen vector (others get ``default``, or an error when none is set);
scores are cosines, so a test can compute the expected ranking and metrics by hand.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


class VectorScorer:
    """Scorer protocol: cosine of hand-made vectors; ``search`` breaks ties by the lower corpus index."""

    name = "vector-fake"

    def __init__(self, vectors: Mapping[str, Sequence[float]], default: Sequence[float] | None = None):
        self.vectors = {t: np.asarray(v, dtype=np.float64) for t, v in vectors.items()}
        self.default = None if default is None else np.asarray(default, dtype=np.float64)
        self.prepared: list[str] = []
        self.searches: list[tuple[list[str], list[str], int]] = []

    def vector(self, text: str) -> np.ndarray:
        if text in self.vectors:
            v = self.vectors[text]
        elif self.default is not None:
            v = self.default
        else:
            raise KeyError(f"the test gave no vector for {text!r}")
        return v / np.linalg.norm(v)

    def prepare(self, texts: Sequence[str]) -> None:
        self.prepared = list(texts)

    def pairs(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        return np.array([self.vector(x) @ self.vector(y) for x, y in zip(a, b)])

    def rerank(self, query: str, candidates: Sequence[str]) -> np.ndarray:
        return np.array([self.vector(query) @ self.vector(c) for c in candidates])

    def search(self, queries: Sequence[str], corpus: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        self.searches.append((list(queries), list(corpus), k))
        sims = np.array([[self.vector(q) @ self.vector(c) for c in corpus] for q in queries])
        order = np.argsort(-sims, axis=1, kind="stable")[:, : min(k, len(corpus))]
        return np.take_along_axis(sims, order, axis=1), order

    def describe(self) -> dict:
        return {"kind": "fake", "similarity": "cosine of hand-made vectors"}
