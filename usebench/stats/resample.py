"""Resampled test sets and a metric's value on each, vectorised over the resamples.

A bootstrap resample of a test set is held as item *counts*: ``counts[b, i]`` is how often item ``i`` was drawn in
resample ``b`` (a multiset; drawing within each subset, so every subset keeps its size). A metric on a resample is
the metric on the test set with each item repeated that often, computed from the counts without building the
repeated set:

- ``ap``: sklearn's average precision (tied scores one threshold): with the items sorted once by score,
  ``AP = sum_i w_i y_i P(end of i's tie group) / sum_i w_i y_i``, ``P`` the weighted precision at that cut;
- ``spearman``: Pearson's correlation of the average ranks (a tie group of total weight ``w`` after ``c`` items
  ranks ``c + (w + 1) / 2``), weighted by the counts;
- ``pearson``: the weighted Pearson correlation; ``mean``: the weighted mean of a per-query column.

A metric over subsets is composed as its recipe says, on every resample: the mean of the per-subset values, or one
value over the subsets pooled. Non-additive metrics are recomputed on each resample, never averaged per item.
Resamples run in chunks (``CHUNK``), so memory stays bounded on large test sets.
"""
from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from usebench.eval.items import UNLABELLED, ItemTable, Recipe, recipe_of

CHUNK = 256  # resamples per block: (CHUNK, n items) float64 arrays, ~20 MB for 10K items


def rng_for(seed: int, *key: str) -> np.random.Generator:
    """A generator seeded by ``seed`` and ``key`` (e.g. the task and split): the same resamples of one test set in
    every cell, row and comparison that uses it, whichever others are computed beside it."""
    return np.random.default_rng([seed, *(zlib.crc32(k.encode()) for k in key)])


def item_counts(subset: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, n) draw counts, each subset's items drawn with replacement as many times as it has items."""
    n = len(subset)
    counts = np.zeros((n_resamples, n), dtype=np.float64)
    for code in np.unique(subset):
        rows = np.flatnonzero(subset == code)
        draws = rng.integers(0, len(rows), size=(n_resamples, len(rows)))
        offsets = (np.arange(n_resamples) * len(rows))[:, None]
        block = np.bincount((draws + offsets).ravel(), minlength=n_resamples * len(rows))
        counts[:, rows] = block.reshape(n_resamples, len(rows))
    return counts


def seed_counts(n_seeds: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, n_seeds) draw counts of the seeds, drawn with replacement (the outer level of the bootstrap)."""
    draws = rng.integers(0, n_seeds, size=(n_resamples, n_seeds))
    offsets = (np.arange(n_resamples) * n_seeds)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=n_resamples * n_seeds).reshape(n_resamples, n_seeds) \
        .astype(np.float64)


# --- weighted statistics: one value per row of ``w`` ----------------------------------------------------------

def _group_ends(sorted_values: np.ndarray) -> np.ndarray:
    """For sorted values, the index of the last member of each position's tie group."""
    n = len(sorted_values)
    is_end = np.r_[sorted_values[1:] != sorted_values[:-1], True] if n else np.zeros(0, bool)
    ends = np.where(is_end, np.arange(n), n)
    return np.minimum.accumulate(ends[::-1])[::-1]


def weighted_ap(score: np.ndarray, label: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average precision (sklearn's, ties grouped) of each row of weights ``w`` (B, n); labels in {0, 1}."""
    order = np.argsort(-score, kind="mergesort")
    s, y, w = score[order], label[order].astype(np.float64), w[:, order]
    ends = _group_ends(s)
    tps, seen = np.cumsum(w * y, axis=1), np.cumsum(w, axis=1)
    tp_end, seen_end = tps[:, ends], seen[:, ends]
    precision = np.divide(tp_end, seen_end, out=np.zeros_like(tp_end), where=seen_end > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w * y * precision).sum(axis=1) / tps[:, -1]


def _weighted_ranks(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average ranks (1-based) of ``values`` in each row's repeated sample (B, n); ties share their mean rank."""
    order = np.argsort(values, kind="mergesort")
    v, wo = values[order], w[:, order]
    n = len(v)
    starts = np.r_[True, v[1:] != v[:-1]] if n else np.zeros(0, bool)
    group = np.cumsum(starts) - 1  # tie group of each sorted position
    first = np.flatnonzero(starts)
    group_w = np.add.reduceat(wo, first, axis=1) if n else wo
    before = np.cumsum(group_w, axis=1) - group_w
    ranks_sorted = (before + (group_w + 1.0) / 2.0)[:, group]
    ranks = np.empty_like(ranks_sorted)
    ranks[:, order] = ranks_sorted
    return ranks


def weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson's r of each row's repeated sample; ``x`` and ``y`` are (n,) or (B, n)."""
    total = w.sum(axis=1, keepdims=True)
    mx = (w * x).sum(axis=1, keepdims=True) / total
    my = (w * y).sum(axis=1, keepdims=True) / total
    dx, dy = x - mx, y - my
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w * dx * dy).sum(axis=1) / np.sqrt((w * dx * dx).sum(axis=1) * (w * dy * dy).sum(axis=1))


def weighted_spearman(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Spearman's rho (average ranks for ties, as scipy) of each row's repeated sample."""
    return weighted_pearson(_weighted_ranks(x, w), _weighted_ranks(y, w), w)


def weighted_mean(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Mean of each row's repeated sample, NaN values (a measure undefined for a query) left out."""
    ok = ~np.isnan(values)
    wv = w[:, ok]
    with np.errstate(invalid="ignore", divide="ignore"):
        return wv @ values[ok] / wv.sum(axis=1)


def statistic(table: ItemTable, recipe: Recipe, rows: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``recipe.stat`` over the items at ``rows`` under each row of weights ``w`` (B, len(rows))."""
    if recipe.stat == "mean":
        return weighted_mean(table.columns[recipe.column][rows], w)
    score, gold = table.columns["score"][rows], table.columns["gold"][rows]
    if recipe.stat == "ap":
        label = table.columns["label"][rows]
        keep = label != UNLABELLED
        return weighted_ap(score[keep], label[keep], w[:, keep])
    if recipe.stat == "spearman":
        return weighted_spearman(score, gold, w)
    return weighted_pearson(score, gold, w)


def replicates(table: ItemTable, metric: str, counts: np.ndarray) -> np.ndarray:
    """``metric`` of ``table`` under each resample's item counts (B, n) -> (B,), composed over subsets as the
    metric's recipe says (the mean of the subsets' values, or one value over them pooled)."""
    recipe = recipe_of(table, metric)
    out = np.empty(len(counts))
    for start in range(0, len(counts), CHUNK):
        w = counts[start:start + CHUNK].astype(np.float64)
        if recipe.combine == "pool":
            rows = np.concatenate([table.rows(s) for s in recipe.subsets])
            out[start:start + CHUNK] = statistic(table, recipe, rows, w[:, rows])
        else:
            parts = [statistic(table, recipe, rows, w[:, rows]) for rows in (table.rows(s) for s in recipe.subsets)]
            out[start:start + CHUNK] = np.mean(parts, axis=0)
    return out


def percentile_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval of bootstrap values at ``level`` (resamples where the metric is undefined, e.g. a
    resample without a positive pair, left out)."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return float("nan"), float("nan")
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def subsets_used(tables: Sequence[ItemTable], metric: str) -> tuple[str, ...]:
    """The subsets ``metric`` is computed over (its recipe's), the same in every table or an error."""
    found = {recipe_of(t, metric).subsets for t in tables}
    if len(found) != 1:
        raise ValueError(f"{metric} is computed over different subsets in these results: {sorted(found)}")
    return found.pop()
