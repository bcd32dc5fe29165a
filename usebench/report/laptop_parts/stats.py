"""The laptop page's effects with intervals: one row minus another on a column, in points, with a 95% interval and a
p-value, and the wording rule every sentence of the page follows (:func:`reading`).

Two sources of an interval, the better one first:

1. over seeds *and* test items: :func:`items_effect`, the adapter to the store's per-item outcomes and the suite's
   bootstrap and paired tests (issue 54: ``usebench/stats/``, outcomes stored beside each record). Where that module
   is not installed it returns None, and so does it for a store without per-item outcomes (the first laptop run);
2. over seeds only: :func:`seed_effect`, a t interval of the per-seed differences (paired by seed where both rows
   have the same seeds, against the value of a deterministic row otherwise; Welch's where the seeds differ). Two
   deterministic rows (one value each) have no seed interval: only the test items could give one.

Every :class:`Effect` says which of the two it is (``over``), and the page says it beside the numbers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from usebench.stats.table_rows import ResultIndex, RowKey
from usebench.stats.seeds import SeedStats
from usebench.stats.table_specs import COLUMNS

LEVEL = 0.95
OVER_ITEMS = "seeds and test items"
OVER_SEEDS = "seeds only"
SAME_ROW = "the same row"  # a row against itself (a method that evaluates with the start model's own pooling)
NOT_DISTINGUISHABLE = "not distinguishable from 0 at this budget"


@dataclass(frozen=True)
class Effect:
    """``ours`` minus ``theirs`` on one column, in points (x100): the mean difference, its 95% interval (None where
    no interval can be had from what the store holds), the p-value of the test that it is 0, and what the
    interval is over."""

    delta: float
    low: float | None
    high: float | None
    p: float | None
    n: int  # the trained side's seeds (pairs, when paired)
    over: str  # OVER_ITEMS | OVER_SEEDS

    @property
    def excludes_zero(self) -> bool:
        """A claim stands: the interval lies on one side of 0."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)

    def cell(self) -> str:
        """``+1.31 [+0.40, +2.22]``, ``-0.05 [-1.9, +1.8]``, or ``+2.19 (no interval)``; a star marks an interval that
        excludes 0."""
        if self.over == SAME_ROW:
            return "0 (the same row)"
        if self.low is None or self.high is None:
            return f"{self.delta:+.2f} (no interval)"
        star = "*" if self.excludes_zero else ""
        return f"{self.delta:+.2f} [{self.low:+.2f}, {self.high:+.2f}]{star}"


def items_effect(index: ResultIndex, ours: RowKey, theirs: RowKey, column: str, split: str = "test"
                 ) -> Effect | None:
    """ADAPTER to issue 54's ``usebench/stats/`` (branch ``items``): ``ours`` minus ``theirs`` on ``column`` with the
    paired bootstrap interval over seeds and test items, in points, from the per-item outcomes stored beside each
    record; None where that module is not installed or a result has no outcomes (the first laptop store), and the
    page then falls back to :func:`seed_effect` and says so.

    A column on one task (TwitterPara's ``ap_avg``) is that module's own two-row comparison (``paired``: B - A with a
    permutation test over items). A column that averages tasks (``sts.avg``: 7 test sets) takes, per task, the
    replicates of the same paired bootstrap (one resample of a test set's items shared by both rows, each row's
    seeds drawn on their own) and averages them over the tasks: the tasks' test sets are resampled independently,
    as they are independent samples; its p-value is the bootstrap's (``bootstrap_p``). Any other failure is loud."""
    try:
        from usebench.stats.intervals import NotPairableError, Resampler
        from usebench.stats.loading import NoItemsError, measurement_of
    except ImportError:  # issue 54's module is not in this installation: seed intervals only
        return None
    col = COLUMNS[column]
    parts = [COLUMNS[c] for c in col.mean_of] if col.mean_of else [col]
    cells = [(index.rows[ours].get((p.task, split)), index.rows[theirs].get((p.task, split)), p.metric)
             for p in parts]
    if any(not a or not b for a, b, _ in cells):
        return None
    try:
        pairs = [(measurement_of(a), measurement_of(b), metric) for a, b, metric in cells]
    except (NoItemsError, NotPairableError):
        return None
    return _paired_mean(Resampler(), pairs, len({r.record["seed"] for r in cells[0][0]}))


def _paired_mean(resampler: Any, pairs: list[tuple[Any, Any, str]], n: int) -> Effect | None:
    """ours - theirs averaged over ``pairs`` (measurements of ours, of theirs, and the metric), in points."""
    import numpy as np

    from usebench.stats.paired import bootstrap_p, paired
    from usebench.stats.resample import percentile_interval

    if any(b.same_items(a) for a, b, _ in pairs):
        return None  # not on the same test items: no paired interval (the seed interval says what it can)
    if len(pairs) == 1:
        a, b, metric = pairs[0]
        found = paired(resampler, b, a, metric)  # B - A: ours - theirs
        return Effect(100 * found.delta, 100 * found.low, 100 * found.high, found.p_value, n, OVER_ITEMS)
    deltas = np.mean([resampler.over_seeds(resampler.per_seed(a, m), a.seeds, "B")
                      - resampler.over_seeds(resampler.per_seed(b, m), b.seeds, "A") for a, b, m in pairs], axis=0)
    low, high = percentile_interval(deltas, resampler.level)
    delta = float(np.mean([a.point(m) - b.point(m) for a, b, m in pairs]))
    return Effect(100 * delta, 100 * low, 100 * high, bootstrap_p(deltas), n, OVER_ITEMS)


def effect(index: ResultIndex, ours: RowKey, theirs: RowKey, column: str, split: str = "test") -> Effect | None:
    """The best interval the store allows (items and seeds, else seeds); None when a row has no value there; a row
    against itself is 0 by construction, no measurement."""
    if ours == theirs:
        return Effect(0.0, None, None, None, 0, SAME_ROW)
    found = items_effect(index, ours, theirs, column, split)
    if found is not None:
        return found
    a, b = (index.held_cell(k, COLUMNS[column], split) for k in (ours, theirs))
    if not a.n or not b.n:
        return None
    return seed_effect(a, b)


def seed_effect(ours: SeedStats, theirs: SeedStats) -> Effect:
    """``ours`` minus ``theirs`` in points with a t interval over seeds: paired differences where both have the
    same seeds (two or more), each seed against a deterministic row's one value, else Welch's two-sample interval;
    no interval when there is a single difference."""
    a, b = ours.scaled(100).values, theirs.scaled(100).values
    if theirs.n == 1 or (set(a) == set(b) and len(a) >= 2):
        diffs = [a[s] - (b[s] if theirs.n > 1 else next(iter(b.values()))) for s in sorted(a)]
        return _one_sample(diffs)
    return _welch(list(a.values()), list(b.values()))


def _one_sample(diffs: list[float]) -> Effect:
    from scipy import stats

    n, mean = len(diffs), sum(diffs) / len(diffs)
    if n < 2:
        return Effect(mean, None, None, None, n, OVER_SEEDS)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    if sd == 0.0:  # every seed the same: the interval is a point, the test undefined
        return Effect(mean, mean, mean, None, n, OVER_SEEDS)
    se = sd / math.sqrt(n)
    half = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * se
    p = float(2 * stats.t.sf(abs(mean) / se, n - 1))
    return Effect(mean, mean - half, mean + half, p, n, OVER_SEEDS)


def _welch(a: list[float], b: list[float]) -> Effect:
    from scipy import stats

    mean = sum(a) / len(a) - sum(b) / len(b)
    if len(a) < 2 or len(b) < 2:
        return Effect(mean, None, None, None, len(a), OVER_SEEDS)
    va, vb = (float(sum((x - sum(v) / len(v)) ** 2 for x in v) / (len(v) - 1)) for v in (a, b))
    se2 = va / len(a) + vb / len(b)
    if se2 == 0.0:
        return Effect(mean, mean, mean, None, len(a), OVER_SEEDS)
    df = se2 ** 2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, df)) * math.sqrt(se2)
    p = float(2 * stats.t.sf(abs(mean) / math.sqrt(se2), df))
    return Effect(mean, mean - half, mean + half, p, len(a), OVER_SEEDS)


def reading(what: str, found: Effect | None, unit: str = "points") -> str:
    """The page's one wording rule: a claim stands only where its interval excludes 0 ("training, TwitterPara AP
    +1.31 points [+0.40, +2.22] (3 seeds; seeds and test items)"); otherwise the effect is "not distinguishable from 0
    at this budget", with its interval; without an interval it says what is missing and claims nothing."""
    if found is None:
        return f"{what}: no value to compare"
    if found.over == SAME_ROW:
        return f"{what} 0 (the start model's own pooling)"
    numbers = f"{found.delta:+.2f} {unit}"
    if found.low is None or found.high is None:
        return f"{what} {numbers}: no interval (one value on each side: only the test items could give one), no claim"
    interval = f"[{found.low:+.2f}, {found.high:+.2f}] ({found.n} seed{'s' if found.n != 1 else ''}; {found.over})"
    if not found.excludes_zero:
        return f"{what} {numbers} {interval}: {NOT_DISTINGUISHABLE}"
    if found.over == OVER_SEEDS:  # a claim over seeds alone leaves out the test set's sampling: say so
        return f"{what} {numbers} {interval}: excludes 0 over the seeds (the test items' sampling is not in it)"
    return f"{what} {numbers} {interval}"


def describe(found: Effect | None) -> dict[str, Any]:
    """An effect as plain data (tests, CSV)."""
    if found is None:
        return {}
    return {"delta": found.delta, "low": found.low, "high": found.high, "p": found.p, "n": found.n,
            "over": found.over}
