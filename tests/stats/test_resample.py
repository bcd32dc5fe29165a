"""usebench/stats/resample.py: a metric on a resample given as item counts equals the metric on the resample
written out (each item repeated), computed by scikit-learn and scipy; resamples stay within subsets."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import average_precision_score

from usebench.eval.items import Recipe, mean_recipes, pair_table, query_table
from usebench.stats.resample import (columns, item_counts, percentile_interval, replicates, rng_for, weighted_ap,
                                     weighted_mean, weighted_pearson, weighted_spearman)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 300
    score = np.round(rng.normal(size=n), 1)  # rounded: many ties
    return score, rng.integers(0, 2, n), np.round(rng.normal(size=n) + score, 1), rng


@pytest.mark.parametrize("dtype", [np.float64, np.uint16])  # replicates pass uint16 counts: integer running sums
def test_weighted_statistics_equal_the_libraries_on_the_repeated_sample(data, dtype):
    score, label, gold, rng = data
    counts = item_counts(np.zeros(len(score), int), 25, rng).astype(dtype)
    ap, rho = weighted_ap(score, label, counts), weighted_spearman(score, gold, counts)
    r, mean = weighted_pearson(score, gold, counts), weighted_mean(gold, counts)
    for b in range(len(counts)):
        idx = np.repeat(np.arange(len(score)), counts[b].astype(int))
        assert ap[b] == pytest.approx(average_precision_score(label[idx], score[idx]), abs=1e-12)
        assert rho[b] == pytest.approx(stats.spearmanr(score[idx], gold[idx]).statistic, abs=1e-12)
        assert r[b] == pytest.approx(stats.pearsonr(score[idx], gold[idx]).statistic, abs=1e-12)
        assert mean[b] == pytest.approx(gold[idx].mean(), abs=1e-12)


def test_each_subset_is_resampled_within_itself_and_the_draws_are_seeded():
    subset = np.array([0] * 5 + [1] * 3 + [2] * 7)
    counts = item_counts(subset, 200, rng_for(0, "task", "test"))
    for code, size in ((0, 5), (1, 3), (2, 7)):
        assert (counts[:, subset == code].sum(axis=1) == size).all()
    assert np.array_equal(counts, item_counts(subset, 200, rng_for(0, "task", "test")))
    assert not np.array_equal(counts, item_counts(subset, 200, rng_for(1, "task", "test")))


def test_a_metric_is_composed_over_subsets_as_its_recipe_says_on_every_resample(data):
    score, label, gold, rng = data
    sets = {"a": (score[:200], gold[:200], label[:200]), "b": (score[200:], gold[200:], label[200:])}
    recipes = {"ap_avg": Recipe("ap", ("a", "b")), "spearman": Recipe("spearman", ("a", "b"), "pool")}
    table = pair_table(sets, recipes)
    counts = item_counts(table.subset, 10, rng)
    avg, pooled = replicates(table, "ap_avg", counts), replicates(table, "spearman", counts)
    for b in range(10):
        idx = np.repeat(np.arange(len(score)), counts[b].astype(int))
        a_idx, b_idx = idx[idx < 200], idx[idx >= 200]
        want = (average_precision_score(label[a_idx], score[a_idx]) + average_precision_score(label[b_idx],
                                                                                              score[b_idx])) / 2
        assert avg[b] == pytest.approx(want, abs=1e-12)  # AP recomputed per subset, never per-item values averaged
        assert pooled[b] == pytest.approx(stats.spearmanr(score[idx], gold[idx]).statistic, abs=1e-12)


def test_per_query_means_leave_undefined_values_out():
    t = query_table({"f": (["a", "b", "c"], {"ndcg": [1.0, float("nan"), 0.0]})},
                    mean_recipes({"ndcg": ("ndcg", ("f",))}))
    counts = np.array([[3.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 2.0, 1.0]])
    assert replicates(t, "ndcg", counts).tolist() == [1.0, 0.5, 0.0]


def test_the_percentile_interval_ignores_undefined_resamples():
    values = np.r_[np.arange(1000) / 999, np.nan]
    low, high = percentile_interval(values, 0.9)
    assert low == pytest.approx(0.05) and high == pytest.approx(0.95)


def test_columns_is_fancy_indexing_in_row_major_order():
    a = np.arange(24).reshape(4, 6)
    for index in (np.array([5, 0, 3]), np.array([True, False, True, True, False, False])):
        got = columns(a, index)
        assert np.array_equal(got, a[:, index]) and got.flags["C_CONTIGUOUS"]


def test_the_gold_ranks_kept_for_a_key_are_what_the_ranks_computed_afresh_give(data):
    """The STS cells of a report share their gold ranks under a block of resamples (keyed by the resamples and a
    digest of the gold scores): a second table with other gold scores under the same key is never served the
    first one's."""
    score, _, gold, rng = data
    recipes = {"spearman": Recipe("spearman", ("a", "b"))}
    table = pair_table({"a": (score[:200], gold[:200], None), "b": (score[200:], gold[200:], None)}, recipes)
    other = pair_table({"a": (score[:200], -gold[:200], None), "b": (score[200:], gold[200:], None)}, recipes)
    counts = item_counts(table.subset, 600, rng).astype(np.uint16)  # three blocks of resamples
    key = ("task", "test", "sha")
    fresh, kept = replicates(table, "spearman", counts), replicates(table, "spearman", counts, key)
    assert np.array_equal(fresh, kept) and np.array_equal(kept, replicates(table, "spearman", counts, key))
    assert np.array_equal(replicates(other, "spearman", counts, key), replicates(other, "spearman", counts))
    assert not np.array_equal(replicates(other, "spearman", counts, key), kept)


def test_the_permutations_integer_ranks_give_the_float_ranks_ap_and_spearman(data):
    """The permutation test swaps each system's ranks as doubled integers (uint16, radix-sorted): every row's AP and
    Spearman equal those of the ranks as floats (ties included), and sklearn's and scipy's on the row."""
    from usebench.stats.paired import _doubled_ranks, rowwise

    score, label, gold, rng = data
    other = np.round(score + rng.normal(size=len(score)), 1)
    swap = rng.integers(0, 2, size=(20, len(score))).astype(bool)
    floats = np.where(swap, stats.rankdata(score) / len(score), stats.rankdata(other) / len(score))
    doubled = np.where(swap, _doubled_ranks(stats.rankdata(score)), _doubled_ranks(stats.rankdata(other)))
    assert doubled.dtype == np.uint16
    table = pair_table({"a": (score, gold, label)}, {"ap": Recipe("ap", ("a",))})
    rows = np.arange(len(score))
    for stat in ("ap", "spearman"):
        assert np.array_equal(rowwise(stat, doubled, table, rows), rowwise(stat, floats, table, rows))
    for r in range(len(swap)):
        assert rowwise("ap", doubled, table, rows)[r] == pytest.approx(average_precision_score(label, floats[r]),
                                                                       abs=1e-12)
        assert rowwise("spearman", doubled, table, rows)[r] == pytest.approx(
            stats.spearmanr(floats[r], gold).statistic, abs=1e-12)
