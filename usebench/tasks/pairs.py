"""The sentence-pair protocol shared by TwitterPara and the STS tasks.

A pair task holds one or more :class:`PairSet` (aligned sentence pairs with a graded gold score and, for
paraphrase tasks, a binary label). Scoring is the same everywhere: the scorer's similarity of each aligned
pair (cosine for dense encoders). The metrics are pure functions of (gold, predicted):
Spearman/Pearson against the graded score, and average precision against the binary label over the labelled
pairs only (TwitterPara drops the undecided middle grade from AP but keeps it for Spearman, as useb does).
"""
from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from usebench.errors import DataFormatError
from usebench.eval.items import ItemTable, Recipe, pair_table
from usebench.eval.metrics import binary_average_precision, pearson, spearman
from usebench.eval.scorer import Scorer
from usebench.eval.subsample import Limit, picked
from usebench.tasks.base import Family, Task

UNLABELLED = -1  # binary label of a pair that AP ignores (e.g. 3 of 6 annotators said "paraphrase")


@dataclass(frozen=True, eq=False)
class PairSet:
    """Aligned pairs of one subset: ``s1[i]`` vs ``s2[i]`` with gold ``gold[i]`` (and ``label[i]`` in {0, 1, -1})."""

    name: str
    s1: tuple[str, ...]
    s2: tuple[str, ...]
    gold: np.ndarray  # (n,) float64 graded score
    label: np.ndarray | None = None  # (n,) int64: 1 positive, 0 negative, UNLABELLED dropped from AP
    positions: np.ndarray | None = None  # (n,) each pair's position in its file's pairs; None: 0..n-1 (all of them)

    def __len__(self) -> int:
        return len(self.s1)

    @property
    def n_labelled(self) -> int:
        """Pairs that carry a binary label (the ones average precision is computed over)."""
        return 0 if self.label is None else int((self.label != UNLABELLED).sum())

    @property
    def ids(self) -> np.ndarray:
        """Each pair's position among its file's pairs: its item id, also in a subsample."""
        return np.arange(len(self), dtype=np.int64) if self.positions is None else self.positions

    def take(self, rows: np.ndarray) -> PairSet:
        """The pairs at ``rows`` (sorted positions in this set), each keeping its id."""
        label = None if self.label is None else self.label[rows]
        return PairSet(self.name, picked(self.s1, rows), picked(self.s2, rows), self.gold[rows], label,
                       self.ids[rows])


def make_pairset(name: str, rows: Sequence[tuple[str, str, float]], labels: Sequence[int] | None = None) -> PairSet:
    """A :class:`PairSet` from ``(s1, s2, gold)`` rows (and one binary label per row, if given)."""
    s1, s2, gold = zip(*rows) if rows else ((), (), ())
    label = None if labels is None else np.asarray(labels, dtype=np.int64)
    return PairSet(name, tuple(s1), tuple(s2), np.asarray(gold, dtype=np.float64), label)


def require_pairs(pairset: PairSet, path: object) -> PairSet:
    """``pairset`` itself, or a :class:`DataFormatError` when a file yielded no scored pair at all."""
    if len(pairset) == 0:
        raise DataFormatError(str(path), None, "at least one scored sentence pair", "none")
    return pairset


def check_aligned(input_path: object, n_input: int, gold_path: object, n_gold: int) -> None:
    """Input and gold files must have one line per pair each; a mismatch means misaligned scores."""
    if n_input != n_gold:
        raise DataFormatError(
            str(gold_path), None, f"one gold line per input line of {input_path} ({n_input} lines)", f"{n_gold} lines"
        )


def pair_texts(sets: Mapping[str, PairSet]) -> list[str]:
    """Every sentence of every pair (duplicates kept; the scorer encodes each unique text once)."""
    return [t for ps in sets.values() for t in (*ps.s1, *ps.s2)]


def score_pairs(sets: Mapping[str, PairSet], scorer: Scorer, separate_collections: bool = False
                ) -> dict[str, np.ndarray]:
    """The scorer's similarity of every aligned pair, per subset -> {subset key: (n,) float64}.

    ``separate_collections``: each subset is a dataset of its own, so a lexical scorer takes its corpus statistics
    from that subset's sentences only (``Scorer.use_collection``); otherwise from every text of the task split.
    """
    out = {}
    for key, ps in sets.items():
        if separate_collections:
            scorer.use_collection(key, pair_texts({key: ps}))
        out[key] = np.asarray(scorer.pairs(ps.s1, ps.s2), dtype=np.float64)
    return out


def correlations(gold: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Spearman and Pearson of the predicted similarity against the graded gold score."""
    return {"spearman": spearman(predicted, gold), "pearson": pearson(predicted, gold)}


def labelled_ap(pairset: PairSet, predicted: np.ndarray) -> float:
    """Average precision of the predicted similarity against the binary label, over the labelled pairs."""
    if pairset.label is None:
        raise ValueError(f"pair set {pairset.name!r} has no binary labels")
    keep = pairset.label != UNLABELLED
    return binary_average_precision(pairset.label[keep], predicted[keep])


class PairTask(Task):
    """Base of pair tasks: ``load`` returns ``{subset name: PairSet}``; scoring and texts are shared."""

    family: ClassVar[Family] = "pairs"
    limit_unit: ClassVar[str | None] = "pairs"
    # True where the subsets are independent datasets (TwitterPara: Twitter URL and PIT-2015), each with its own
    # BM25 statistics; False where they are parts of one evaluation (STS12-16 "all": one pooled Spearman).
    separate_collections: ClassVar[bool] = False

    def texts(self, data: Mapping[str, PairSet]) -> list[str]:
        return pair_texts(data)

    def score(self, data: Mapping[str, PairSet], scorer: Scorer) -> dict[str, np.ndarray]:
        return score_pairs(data, scorer, self.separate_collections)

    def n_queries(self, data: Mapping[str, PairSet]) -> int:
        return sum(len(ps) for ps in data.values())

    def n_items(self, data: Mapping[str, PairSet]) -> int:
        return sum(len(ps) for ps in data.values())

    def limited(self, data: Mapping[str, PairSet], limit: Limit) -> dict[str, PairSet]:
        """At most ``limit.n`` pairs of each subset (labelled or not: AP is over the labelled ones among them)."""
        return {name: ps.take(limit.pick(self.name, name, len(ps))) for name, ps in data.items()}

    @abstractmethod
    def item_recipes(self, data: Mapping[str, PairSet]) -> dict[str, Recipe]:
        """How each metric is computed from the pairs (:class:`usebench.eval.items.Recipe`)."""

    def items(self, data: Mapping[str, PairSet], scores: Mapping[str, np.ndarray]) -> ItemTable:
        """Each pair's similarity, graded gold score and binary label (if any), by subset, in file order; a pair's
        id is its position in its file (also in a subsample)."""
        return pair_table({name: (scores[name], ps.gold, ps.label) for name, ps in data.items()},
                          self.item_recipes(data), ids={name: ps.ids for name, ps in data.items()})
