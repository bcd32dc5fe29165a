"""A metric measured over seeds and test items, and its bootstrap interval.

One seed: the percentile bootstrap over the test items (each subset resampled within itself; the metric recomputed
on every resample as its recipe composes it). Several seeds: a two-level bootstrap: each replicate draws the seeds
with replacement and one resample of the test items, shared by every seed drawn (the seeds were scored on one and
the same test set, so its sampling is common to all of them), and averages the drawn seeds' values. With one seed
this is the item bootstrap. The interval is the percentile interval (Efron's), not BCa: the metrics here are
bounded and mostly far from their bounds, and the percentile interval needs no jackknife over 10K items.

Resamples are seeded by (seed, task, split, data sha256): every cell, row and comparison on one test set uses the
same resamples, whichever others are computed beside it.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from usebench.errors import BenchError
from usebench.eval.items import ItemTable, items_used, metric_value
from usebench.stats.resample import item_counts, percentile_interval, replicates, rng_for, seed_counts

RESAMPLES = 1000  # bootstrap resamples and permutations by default
LEVEL = 0.95
SEED = 0


class NotPairableError(BenchError):
    """Two measurements that are not on the same test items (data, task version or item ids differ)."""


@dataclass(frozen=True, eq=False)
class Measurement:
    """One row's results on one task split: a per-item table per seed, all on the same items."""

    task: str
    split: str
    data_sha256: str
    version: str
    seeds: tuple[int, ...]
    tables: tuple[ItemTable, ...]

    @property
    def n_items(self) -> int:
        """Items of the test set (all subsets)."""
        return len(self.tables[0])

    def items_for(self, metric: str) -> int:
        """Items ``metric`` is computed over (e.g. TwitterPara PIT's 838 labelled pairs)."""
        return items_used(self.tables[0], metric)

    def point(self, metric: str) -> float:
        """The metric's mean over the seeds, each recomputed exactly from its items."""
        return float(np.mean([metric_value(t, metric) for t in self.tables]))

    def same_items(self, other: Measurement) -> str | None:
        """Why ``other`` is not on the same test items, or None."""
        if (self.task, self.split) != (other.task, other.split):
            return f"{self.task}/{self.split} against {other.task}/{other.split}"
        if self.data_sha256 != other.data_sha256:
            return (f"the data differ (sha256 {self.data_sha256[:12]}... vs {other.data_sha256[:12]}...): not the same "
                    "test items")
        if self.version != other.version:
            return f"the task versions differ ({self.version} vs {other.version})"
        return same_keys(self.tables[0], other.tables[0])


def same_keys(a: ItemTable, b: ItemTable) -> str | None:
    """Why two item tables do not hold the same items in the same order, or None."""
    if a.subsets != b.subsets or len(a) != len(b):
        return f"the items differ ({len(a)} items in {list(a.subsets)} vs {len(b)} in {list(b.subsets)})"
    if not (np.array_equal(a.subset, b.subset) and np.array_equal(a.ids.astype(str), b.ids.astype(str))):
        return "the item ids differ (not the same items in the same order)"
    return None


def measurement(task: str, split: str, data_sha256: str, version: str,
                per_seed: Sequence[tuple[int, ItemTable]]) -> Measurement:
    """A :class:`Measurement`; its seeds' tables must hold the same items (else :class:`NotPairableError`)."""
    if not per_seed:
        raise BenchError(f"{task}/{split}: no per-item outcomes to measure")
    ordered = sorted(per_seed, key=lambda p: p[0])
    for seed, table in ordered[1:]:
        why = same_keys(ordered[0][1], table)
        if why:
            raise NotPairableError(f"{task}/{split}: seed {seed} against seed {ordered[0][0]}: {why}")
    return Measurement(task, split, data_sha256, version, tuple(s for s, _ in ordered), tuple(t for _, t in ordered))


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap interval (0-1 units, as the scores)."""

    estimate: float
    low: float
    high: float
    level: float
    n_items: int
    n_seeds: int
    resamples: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def scaled(self, factor: float) -> Interval:
        return Interval(self.estimate * factor, self.low * factor, self.high * factor, self.level, self.n_items,
                        self.n_seeds, self.resamples)


# Process-wide memos, bounded (least recently used out): a report builds many Resamplers (one per table, comparison
# and effect), and each asked again for the same test set's resamples and the same result's replicates: on the laptop
# store (29 units, 8 tasks) `bench report --table laptop-adapt` spent 160 s, most of it recomputing them. Both are
# keyed by what determines them (the resampler's seed and size, the test set's identity, a digest of the table's
# contents), so a hit is the value the call would compute.
_COUNTS: OrderedDict[tuple, np.ndarray] = OrderedDict()
_REPLICATES: OrderedDict[tuple, np.ndarray] = OrderedDict()
COUNTS_KEPT, REPLICATES_KEPT = 16, 4096  # (resamples, n items) uint16 arrays, ~20 MB for TwitterPara; (resamples,)


def _remember(memo: OrderedDict, key: tuple, value: np.ndarray, kept: int) -> np.ndarray:
    memo[key] = value
    if len(memo) > kept:
        memo.popitem(last=False)
    return value


def table_digest(table: ItemTable) -> str:
    """A digest of everything a metric on ``table`` reads: its subsets, items' subsets, columns and recipes."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((table.kind, table.subsets, sorted((m, repr(r)) for m, r in table.recipes.items()))).encode())
    h.update(np.ascontiguousarray(table.subset).tobytes())
    for name in sorted(table.columns):
        values = np.ascontiguousarray(table.columns[name])
        h.update(name.encode() + str(values.dtype).encode() + values.tobytes())
    return h.hexdigest()


@dataclass
class Resampler:
    """Seeded resamples of test items and seeds, each test set's drawn once (``cache``, and the process-wide memo)."""

    resamples: int = RESAMPLES
    seed: int = SEED
    level: float = LEVEL
    cache: dict[tuple, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.resamples < 1 or not 0 < self.level < 1:
            raise BenchError(f"resamples must be >= 1 and the level in (0, 1) (got {self.resamples}, {self.level})")

    def counts(self, m: Measurement) -> np.ndarray:
        """(resamples, n items) item counts of ``m``'s test set."""
        key = ("items", m.task, m.split, m.data_sha256, m.n_items)
        if key not in self.cache:
            memo_key = (self.seed, self.resamples, key, hashlib.blake2b(
                np.ascontiguousarray(m.tables[0].subset).tobytes(), digest_size=16).hexdigest())
            if memo_key in _COUNTS:
                _COUNTS.move_to_end(memo_key)
                self.cache[key] = _COUNTS[memo_key]
            else:
                counts = item_counts(m.tables[0].subset, self.resamples, rng_for(self.seed, *map(str, key)))
                counts = counts.astype(np.uint16 if counts.max(initial=0) < 2**16 else np.int64)
                self.cache[key] = _remember(_COUNTS, memo_key, counts, COUNTS_KEPT)
        return self.cache[key]

    def seed_weights(self, seeds: Sequence[int], side: str = "") -> np.ndarray:
        """(resamples, n seeds) draw counts of the seeds (one draw of each when there is a single seed)."""
        if len(seeds) == 1:
            return np.ones((self.resamples, 1))
        return seed_counts(len(seeds), self.resamples, rng_for(self.seed, "seeds", side, ",".join(map(str, seeds))))

    def per_seed(self, m: Measurement, metric: str) -> np.ndarray:
        """(resamples, n seeds): the metric of each seed on each resample of the items (shared by the seeds)."""
        counts = self.counts(m)
        counts_key = (self.seed, self.resamples, m.task, m.split, m.data_sha256, m.n_items)
        return np.stack([self._replicates(t, metric, counts, counts_key) for t in m.tables], axis=1)

    @staticmethod
    def _replicates(table: ItemTable, metric: str, counts: np.ndarray, counts_key: tuple) -> np.ndarray:
        """:func:`replicates`, memoised by the resamples' key, the metric and the table's contents."""
        key = (counts_key, metric, table_digest(table))
        if key in _REPLICATES:
            _REPLICATES.move_to_end(key)
            return _REPLICATES[key]
        values = replicates(table, metric, counts, counts_key)
        values.setflags(write=False)  # shared by every caller: nobody may change it in place
        return _remember(_REPLICATES, key, values, REPLICATES_KEPT)

    def over_seeds(self, per_seed: np.ndarray, seeds: Sequence[int], side: str = "") -> np.ndarray:
        """(resamples,): each replicate's mean over its drawn seeds."""
        w = self.seed_weights(seeds, side)
        return (w * per_seed).sum(axis=1) / w.sum(axis=1)

    def interval(self, m: Measurement, metric: str) -> Interval:
        """The metric's point estimate (mean over seeds) and its two-level bootstrap interval."""
        values = self.over_seeds(self.per_seed(m, metric), m.seeds)
        low, high = percentile_interval(values, self.level)
        return Interval(m.point(metric), low, high, self.level, m.items_for(metric), len(m.seeds), self.resamples)

    def describe(self, several_seeds: bool) -> str:
        """The method in words, for a table's notes or a comparison's output."""
        text = (f"{self.level:.0%} percentile bootstrap interval over the test items ({self.resamples:,} resamples "
                f"within each subset, seed {self.seed}")
        return text + ("; with several seeds, two-level: seeds drawn with replacement, then one resample of the items "
                       "shared by the drawn seeds)" if several_seeds else ")")
