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

import hashlib
import zlib
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from usebench.eval.items import UNLABELLED, ItemTable, Recipe, recipe_groups, recipe_of

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

def columns(a: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``a[:, index]`` (an index array or a boolean mask) in row-major order. numpy's fancy indexing returns such a
    gather in column-major order, where a cumulative sum along each row is 20x slower."""
    return np.take(a, np.flatnonzero(index) if index.dtype == bool else index, axis=1)


def _group_ends(sorted_values: np.ndarray) -> np.ndarray:
    """For sorted values, the index of the last member of each position's tie group."""
    n = len(sorted_values)
    is_end = np.r_[sorted_values[1:] != sorted_values[:-1], True] if n else np.zeros(0, bool)
    ends = np.where(is_end, np.arange(n), n)
    return np.minimum.accumulate(ends[::-1])[::-1]


def _running_total(w: np.ndarray) -> np.ndarray:
    """Cumulative sums along each row: in int64 for integer counts (exact, and 8x faster than in float64)."""
    return np.cumsum(w, axis=1, dtype=np.int64 if w.dtype.kind in "ui" else np.float64)


def weighted_ap(score: np.ndarray, label: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average precision (sklearn's, ties grouped) of each row of weights ``w`` (B, n); labels in {0, 1}.

    Only the positives' terms are non-zero, so the true positives are summed over the positives' columns alone and
    the items seen only at the positives' tie-group ends: one cumulative sum over all items, not two."""
    order = np.argsort(-score, kind="mergesort")
    pos = np.flatnonzero(label[order] == 1)  # sorted positions of the positives
    if not pos.size:
        return np.full(len(w), np.nan)  # AP is undefined without a positive
    ends = _group_ends(score[order])[pos]  # where each positive's tie group ends (the precision's cut)
    w = columns(w, order)
    seen = columns(_running_total(w), ends)
    w_pos = columns(w, pos)
    tps = _running_total(w_pos)
    tp_end = columns(tps, np.searchsorted(pos, ends, side="right") - 1)  # the positives at or before each cut
    precision = np.divide(tp_end, seen, out=np.zeros(seen.shape), where=seen > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w_pos * precision).sum(axis=1) / tps[:, -1]


def _weighted_ranks(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average ranks (1-based) of ``values`` in each row's repeated sample (B, n); ties share their mean rank.

    A tie group's weight is the difference of the cumulative weights at its last member and the group before's."""
    order = np.argsort(values, kind="mergesort")
    v, wo = values[order], columns(w, order)
    if not len(v):
        return np.zeros(wo.shape)
    new_group = v[1:] != v[:-1]
    last = np.flatnonzero(np.r_[new_group, True])  # the last sorted position of each tie group
    group = np.r_[0, np.cumsum(new_group)]  # tie group of each sorted position
    through = columns(_running_total(wo), last)  # the weight up to and including each group
    group_w = np.diff(through, axis=1, prepend=0)
    ranks_sorted = columns((through - group_w) + (group_w + 1.0) / 2.0, group)
    unsort = np.empty_like(order)
    unsort[order] = np.arange(len(order))
    return columns(ranks_sorted, unsort)


def weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson's r of each row's repeated sample; ``x`` and ``y`` are (n,) or (B, n)."""
    w = w.astype(np.float64, copy=False)  # integer counts: one conversion, not one per product
    total = w.sum(axis=1, keepdims=True)
    mx = (w * x).sum(axis=1, keepdims=True) / total
    my = (w * y).sum(axis=1, keepdims=True) / total
    dx, dy = x - mx, y - my
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w * dx * dy).sum(axis=1) / np.sqrt((w * dx * dx).sum(axis=1) * (w * dy * dy).sum(axis=1))


def weighted_spearman(x: np.ndarray, y: np.ndarray, w: np.ndarray, y_ranks: np.ndarray | None = None) -> np.ndarray:
    """Spearman's rho (average ranks for ties, as scipy) of each row's repeated sample; ``y_ranks``: ``y``'s ranks
    under ``w`` where the caller has them."""
    return weighted_pearson(_weighted_ranks(x, w), _weighted_ranks(y, w) if y_ranks is None else y_ranks, w)


# The gold scores' ranks under one block of resamples are the same for every system scored on that test set (a
# report's STS cells: every model, seed and step), so they are kept, bounded by size, keyed by the resamples' identity
# (the caller's key and the block) and a digest of the gold scores.
_GOLD_RANKS: OrderedDict[tuple, np.ndarray] = OrderedDict()
GOLD_RANKS_BYTES = 256 * 2**20


def _gold_ranks(gold: np.ndarray, w: np.ndarray, key: tuple) -> np.ndarray:
    key = (*key, hashlib.blake2b(np.ascontiguousarray(gold).tobytes(), digest_size=16).hexdigest())
    if key in _GOLD_RANKS:
        _GOLD_RANKS.move_to_end(key)
        return _GOLD_RANKS[key]
    ranks = _weighted_ranks(gold, w)
    _GOLD_RANKS[key] = ranks
    while sum(r.nbytes for r in _GOLD_RANKS.values()) > GOLD_RANKS_BYTES and len(_GOLD_RANKS) > 1:
        _GOLD_RANKS.popitem(last=False)
    return ranks


def weighted_mean(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Mean of each row's repeated sample, NaN values (a measure undefined for a query) left out."""
    ok = ~np.isnan(values)
    wv = columns(w, ok)
    with np.errstate(invalid="ignore", divide="ignore"):
        return wv @ values[ok] / wv.sum(axis=1)


def statistic(table: ItemTable, recipe: Recipe, rows: np.ndarray, w: np.ndarray,
              weights_key: tuple | None = None) -> np.ndarray:
    """``recipe.stat`` over the items at ``rows`` under each row of weights ``w`` (B, len(rows)); ``weights_key``
    names ``w`` (the same key, the same weights), so that the gold scores' ranks are computed once per test set."""
    if recipe.stat == "mean":
        return weighted_mean(table.columns[recipe.column][rows], w.astype(np.float64))
    score, gold = table.columns["score"][rows], table.columns["gold"][rows]
    if recipe.stat == "ap":
        label = table.columns["label"][rows]
        keep = label != UNLABELLED
        return weighted_ap(score[keep], label[keep], columns(w, keep))
    if recipe.stat == "spearman":
        gold_ranks = None if weights_key is None else _gold_ranks(gold, w, (*weights_key, rows.tobytes()))
        return weighted_spearman(score, gold, w, gold_ranks)
    return weighted_pearson(score, gold, w)


def replicates(table: ItemTable, metric: str, counts: np.ndarray, counts_key: tuple | None = None) -> np.ndarray:
    """``metric`` of ``table`` under each resample's item counts (B, n) -> (B,), composed over subsets as the
    metric's recipe says (the mean of the subsets' values, or one value over them pooled). ``counts_key``: what
    identifies ``counts`` (the same key, the same counts), where the caller has it."""
    recipe = recipe_of(table, metric)
    groups = recipe_groups(table, recipe)
    out = np.empty(len(counts))
    for start in range(0, len(counts), CHUNK):
        w = counts[start:start + CHUNK]  # integers (uint16): gathers move a quarter of float64's bytes
        key = None if counts_key is None else (*counts_key, start)
        out[start:start + CHUNK] = np.mean([statistic(table, recipe, rows, columns(w, rows), key) for rows in groups],
                                           axis=0)
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
