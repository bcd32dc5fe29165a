"""B - A on the same test items: the difference, its interval, a paired test, and Holm's correction.

Interval: the paired bootstrap. Each replicate draws one resample of the test items, used by A and B alike (the
pairing), and the seeds of each side with replacement (independently: seed k of A has nothing to do with seed k of
B); the replicate's difference is B's mean over its drawn seeds minus A's. Percentile interval.

Test: a paired permutation test over items (approximate randomisation; Noreen 1989, as in Smucker et al. 2007 for
retrieval). Under the null hypothesis A's and B's outcomes of an item are exchangeable, so each permutation swaps
them on a random half of the items and recomputes the metric of both sides. For a per-query measure (AP, RR,
nDCG...) the outcome is the query's value, averaged over each side's seeds (the metric is linear in it). For a
pair task's AP and Spearman, the outcome is the pair's similarity as a rank within its own system (average ranks
over the test set; both metrics depend on the ranks alone, so each side's value is unchanged, and the two systems'
scales need not agree); with several seeds on both sides the swap is made within seed pairs (the k-th seed of A
against the k-th of B, seeds sorted), one swap per item shared by all pairs. Two-sided
p = (1 + #{|d*| >= |d|}) / (1 + permutations). Where the permutation does not apply (a rank metric with a different
number of seeds per side), the p-value comes from the paired bootstrap instead (twice the smaller tail share of
the bootstrap differences at 0), and the result names it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from usebench.eval.items import UNLABELLED, ItemTable, Recipe, recipe_groups, recipe_of
from usebench.stats.intervals import Measurement, NotPairableError, Resampler
from usebench.stats.resample import CHUNK, columns, percentile_interval, rng_for

PERMUTATION = "paired permutation test over items"
BOOTSTRAP_P = "paired bootstrap test (two-level)"


@dataclass(frozen=True)
class Paired:
    """B - A of one metric (0-1 units) with its interval and two-sided p-value."""

    metric: str
    delta: float
    low: float
    high: float
    p_value: float
    test: str
    level: float
    n_items: int
    seeds_a: int
    seeds_b: int
    resamples: int

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def paired(resampler: Resampler, a: Measurement, b: Measurement, metric: str) -> Paired:
    """B - A of ``metric`` on the same items; :class:`NotPairableError` (with the reason) when they are not."""
    why = a.same_items(b)
    if why:
        raise NotPairableError(f"{a.task}/{a.split}: cannot pair A and B: {why}")
    deltas = (resampler.over_seeds(resampler.per_seed(b, metric), b.seeds, "B")
              - resampler.over_seeds(resampler.per_seed(a, metric), a.seeds, "A"))
    low, high = percentile_interval(deltas, resampler.level)
    observed = b.point(metric) - a.point(metric)
    p, test = permutation_p(resampler, a, b, metric, observed)
    if p is None:
        p, test = bootstrap_p(deltas), BOOTSTRAP_P
    return Paired(metric, observed, low, high, p, test, resampler.level, a.items_for(metric), len(a.seeds),
                  len(b.seeds), resampler.resamples)


def bootstrap_p(deltas: np.ndarray) -> float:
    """Two-sided p-value of 0 under the bootstrap distribution of the difference: twice the smaller tail share."""
    d = deltas[np.isfinite(deltas)]
    below, above = (1 + (d <= 0).sum()) / (1 + d.size), (1 + (d >= 0).sum()) / (1 + d.size)
    return float(min(1.0, 2 * min(below, above)))


def permutation_p(resampler: Resampler, a: Measurement, b: Measurement, metric: str,
                  observed: float) -> tuple[float | None, str]:
    """(p, test name) of the paired permutation test, or (None, why not) where it does not apply."""
    recipe = recipe_of(a.tables[0], metric)
    rng = rng_for(resampler.seed, "permutation", a.task, a.split, a.data_sha256, metric)
    if recipe.stat == "mean":
        null = _mean_null(a, b, recipe, resampler.resamples, rng)
    elif len(a.seeds) == len(b.seeds):
        null = _rank_null(a, b, recipe, resampler.resamples, rng)
    else:
        return None, "the seed counts differ"
    if null is None:
        return None, "undefined items differ between A and B"
    hits = (np.abs(null) >= abs(observed) - 1e-12 * max(1.0, abs(observed))).sum()
    return float((1 + hits) / (1 + len(null))), PERMUTATION


def _mean_null(a: Measurement, b: Measurement, recipe: Recipe, n: int, rng: np.random.Generator) -> np.ndarray | None:
    """Differences under random swaps of each query's (seed-averaged) values: linear, so one matrix product."""
    va = np.mean([t.columns[recipe.column] for t in a.tables], axis=0)
    vb = np.mean([t.columns[recipe.column] for t in b.tables], axis=0)
    if not np.array_equal(np.isnan(va), np.isnan(vb)):
        return None
    weights = _mean_weights(a.tables[0], recipe, ~np.isnan(va))
    d = np.where(weights > 0, np.nan_to_num(vb - va), 0.0) * weights
    out = np.empty(n)
    for start in range(0, n, CHUNK):
        signs = rng.integers(0, 2, size=(min(CHUNK, n - start), len(d))) * 2.0 - 1.0
        out[start:start + len(signs)] = signs @ d
    return out


def _mean_weights(table: ItemTable, recipe: Recipe, valid: np.ndarray) -> np.ndarray:
    """Each item's weight in the metric (a linear function of the per-query values)."""
    weights = np.zeros(len(table))
    groups = recipe_groups(table, recipe)
    for rows in groups:
        rows = rows[valid[rows]]
        if rows.size:
            weights[rows] = 1.0 / (rows.size * len(groups))
    return weights


def _rank_null(a: Measurement, b: Measurement, recipe: Recipe, n: int, rng: np.random.Generator) -> np.ndarray:
    """Differences under random swaps of the pairs' within-system ranks, within seed pairs."""
    from scipy.stats import rankdata

    def ranks(t: ItemTable) -> np.ndarray:
        score = t.columns["score"]
        return _doubled_ranks(rankdata(score)) if recipe.stat != "pearson" else score

    ra, rb = [ranks(t) for t in a.tables], [ranks(t) for t in b.tables]
    table = a.tables[0]
    out = np.empty(n)
    for start in range(0, n, CHUNK):
        swap = rng.integers(0, 2, size=(min(CHUNK, n - start), len(table))).astype(bool)
        da = np.mean([composed(table, recipe, np.where(swap, y, x)) for x, y in zip(ra, rb)], axis=0)
        db = np.mean([composed(table, recipe, np.where(swap, x, y)) for x, y in zip(ra, rb)], axis=0)
        out[start:start + len(swap)] = db - da
    return out


def _doubled_ranks(ranks: np.ndarray) -> np.ndarray:
    """Average ranks times 2: integers (an average rank is a multiple of 1/2), as uint16 where they fit, so that
    the permutations' rows sort by radix (7x numpy's float sort). Only the order and the ties of a row matter to AP
    and Spearman, so any scale gives the same values."""
    doubled = 2 * ranks
    return doubled.astype(np.uint16) if doubled.size and doubled.max() <= np.iinfo(np.uint16).max else doubled


def composed(table: ItemTable, recipe: Recipe, scores: np.ndarray) -> np.ndarray:
    """The recipe's metric of each row of ``scores`` (P, n), the table's gold and labels fixed."""
    groups = recipe_groups(table, recipe)
    parts = [rowwise(recipe.stat, columns(scores, rows), table, rows) for rows in groups]
    return np.mean(parts, axis=0)


def rowwise(stat: str, scores: np.ndarray, table: ItemTable, rows: np.ndarray) -> np.ndarray:
    """AP, Spearman or Pearson of each row of ``scores`` against the items' labels or gold scores."""
    if stat == "ap":
        label = table.columns["label"][rows]
        keep = label != UNLABELLED
        return rowwise_ap(columns(scores, keep), label[keep])
    gold = table.columns["gold"][rows]
    if stat == "spearman":
        from scipy.stats import rankdata

        scores, gold = rankdata(scores, axis=1), rankdata(gold)
    x = scores - scores.mean(axis=1, keepdims=True)
    y = gold - gold.mean()
    return (x @ y) / np.sqrt((x * x).sum(axis=1) * (y @ y))


def rowwise_ap(scores: np.ndarray, label: np.ndarray) -> np.ndarray:
    """sklearn's average precision (ties grouped) of each row of ``scores`` against one set of 0/1 labels."""
    if scores.dtype == np.uint16:  # descending and stable (ties keep their item order), as the float sort below
        order = np.argsort(np.iinfo(np.uint16).max - scores, axis=1, kind="stable")
    else:
        order = np.argsort(-scores, axis=1, kind="mergesort")
    s = np.take_along_axis(scores, order, axis=1)
    y = label.astype(np.int64)[order]  # 0/1: integer cumulative sums, exact and 8x faster than float ones
    n = scores.shape[1]
    is_end = np.concatenate([s[:, 1:] != s[:, :-1], np.ones((len(s), 1), bool)], axis=1)
    ends = np.minimum.accumulate(np.where(is_end, np.arange(n), n)[:, ::-1], axis=1)[:, ::-1]
    tps = np.cumsum(y, axis=1)
    precision = np.take_along_axis(tps, ends, axis=1) / (ends + 1)
    return (y * precision).sum(axis=1) / tps[:, -1]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the input order."""
    m = len(p_values)
    order = np.argsort(p_values, kind="mergesort")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted.tolist()


def verdict(result: Paired, p_adjusted: float | None = None, alpha: float | None = None) -> str:
    """One line: whether B - A is distinguishable from 0 (the test at ``alpha`` and the interval must agree)."""
    alpha = 1 - result.level if alpha is None else alpha
    p = result.p_value if p_adjusted is None else p_adjusted
    p_text = f"p = {p:.3g}" + (" (Holm-adjusted)" if p_adjusted is not None else "")
    ci = f"{result.level:.0%} CI {'excludes' if result.excludes_zero else 'includes'} 0"
    if p < alpha and result.excludes_zero:
        side = "B is higher" if result.delta > 0 else "A is higher"
        return f"distinguishable from 0: {side} ({p_text} < {alpha:g}; {ci})"
    if p < alpha or result.excludes_zero:
        return (f"not clearly distinguishable from 0: the test and the interval disagree ({p_text}, alpha {alpha:g}; "
                f"{ci})")
    return f"not distinguishable from 0 ({p_text} >= {alpha:g}; {ci})"


__all__ = ["BOOTSTRAP_P", "NotPairableError", "PERMUTATION", "Paired", "holm", "paired", "verdict"]
