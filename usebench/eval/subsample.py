"""A quick evaluation's subsample (`bench eval --limit N`, ``usebench.evaluate(limit=N)``): a fixed, seeded choice
of at most N items *per subset* of a task split, as lm-eval's ``--limit`` for a dev loop, with the whole protocol
kept around it.

An item is what a task's per-item outcomes hold (usebench/eval/items.py): a sentence pair of a pair task (each of
TwitterPara's two corpora, each STS subset) or a query of a ranking task with all its candidates (AskUbuntu;
each SciDocs subtask; each CQADupStack forum, whose retrieval pool stays whole). A subset with at most N items is
taken whole. The choice is a rank by sha256 of (seed, task, subset, the item's position in its subset), so it
depends on nothing but these (no library's random stream), the same N and seed give the same items on the same
data, and a larger N with the same seed holds every item of a smaller one.

What such a result may do is decided by content (its record's ``task.limit``, usebench/store/validity.py): it is never
reused as a full result nor a full one as it, never paired with a published number, and shown with its interval.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from usebench.errors import BenchValueError

RULE = "sha256-rank/1"  # the selection rule's name and version: another rule is another subsample


@dataclass(frozen=True)
class Limit:
    """At most ``n`` items per subset, chosen by ``seed`` (checked on creation: a bad value never reaches a model)."""

    n: int
    seed: int = 0

    def __post_init__(self) -> None:
        for value, what, low in ((self.n, "limit", 1), (self.seed, "limit seed", 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise BenchValueError(f"{what} must be an integer >= {low}, got {value!r}")

    def config(self) -> dict[str, Any]:
        """What a run's configuration (hence its run id) and its records say of the subsample."""
        return {"n": int(self.n), "seed": int(self.seed), "per": "subset", "rule": RULE}

    def pick(self, task: str, subset: str, size: int) -> np.ndarray:
        """Sorted positions of the items kept of a subset of ``size`` items (all of them when size <= n)."""
        if size <= self.n:
            return np.arange(size, dtype=np.int64)
        prefix = f"{self.seed}\0{task}\0{subset}\0".encode()
        ranks = [hashlib.sha256(prefix + str(i).encode()).digest() for i in range(size)]
        chosen = sorted(range(size), key=ranks.__getitem__)[: self.n]
        return np.asarray(sorted(chosen), dtype=np.int64)

    def label(self) -> str:
        """The subsample in words, as reports and logs say it."""
        return f"limit {self.n}" + (f" seed {self.seed}" if self.seed else "")


def limit_of(config: Any) -> Limit | None:
    """The :class:`Limit` a record's ``task.limit`` block (or a config's ``limit``) describes; None: none."""
    if not isinstance(config, dict) or "n" not in config:
        return None
    return Limit(int(config["n"]), int(config.get("seed", 0)))


def ids_sha256(keys: Iterable[tuple[str, str]]) -> str:
    """sha256 of the (subset, item id) keys of a subsample, in order: which items a limited result holds."""
    digest = hashlib.sha256()
    for subset, item in keys:
        digest.update(f"{subset}\t{item}\n".encode())
    return digest.hexdigest()


def picked(values: tuple[Any, ...], positions: np.ndarray) -> tuple[Any, ...]:
    """The entries of ``values`` at ``positions``, in order."""
    return tuple(values[i] for i in positions.tolist())
