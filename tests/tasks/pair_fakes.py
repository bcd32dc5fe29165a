"""A deterministic stand-in for a dense scorer: every text is a 2-d unit vector at a hand-chosen angle.

The cosine of two texts is then cos(angle_a - angle_b), which the tests compute on their own with numpy, so
the expected metrics never go through the code under test.
"""
from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

import numpy as np


def hashed_angle(text: str) -> float:
    """A fixed pseudo-random angle in degrees for texts the test did not place by hand."""
    return float(zlib.crc32(text.encode("utf-8")) % 3600) / 10.0


class AngleScorer:
    """Scorer protocol over 2-d vectors: ``angles`` (degrees) by text, else :func:`hashed_angle`."""

    name = "angle-fake"

    def __init__(self, angles: Mapping[str, float] | None = None, strict: bool = False):
        self.angles = dict(angles or {})
        self.strict = strict  # every text must have a hand-placed angle (catches text normalisation errors)
        self.prepared: list[str] = []

    def angle(self, text: str) -> float:
        if self.strict and text not in self.angles:
            raise KeyError(f"the test gave no angle for {text!r}")
        return self.angles.get(text, hashed_angle(text))

    def vector(self, text: str) -> np.ndarray:
        theta = np.radians(self.angle(text))
        return np.array([np.cos(theta), np.sin(theta)])

    def prepare(self, texts: Sequence[str]) -> None:
        self.prepared = list(texts)

    def use_collection(self, name: str, texts: Sequence[str]) -> None:
        self.collections = {**getattr(self, "collections", {}), name: list(texts)}

    def pairs(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        return np.array([self.vector(x) @ self.vector(y) for x, y in zip(a, b)])

    def rerank(self, query: str, candidates: Sequence[str]) -> np.ndarray:
        return np.array([self.vector(query) @ self.vector(c) for c in candidates])

    def describe(self) -> dict:
        return {"kind": "fake", "similarity": "cosine of hand-placed 2-d vectors"}


def expected_cosine(scorer: AngleScorer, a: str, b: str) -> float:
    """The cosine the test expects, from the angles alone."""
    return float(np.cos(np.radians(scorer.angle(a) - scorer.angle(b))))
