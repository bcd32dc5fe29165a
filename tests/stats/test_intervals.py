"""usebench/stats/intervals.py and paired.py on toy data computed by hand: intervals, p-values, Holm."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from usebench.eval.items import Recipe, mean_recipes, pair_table, query_table
from usebench.stats.intervals import Measurement, NotPairableError, Resampler, measurement
from usebench.stats.paired import BOOTSTRAP_P, PERMUTATION, holm, paired, verdict


def queries(values, name="t", sha="sha", seed=0, version="1") -> Measurement:
    table = query_table({"s": ([f"q{i}" for i in range(len(values))], {"ap": values})},
                        mean_recipes({"map": ("ap", ("s",))}))
    return measurement(name, "test", sha, version, [(seed, table)])


def several(per_seed: dict[int, list[float]]) -> Measurement:
    tables = [(s, queries(v).tables[0]) for s, v in per_seed.items()]
    return measurement("t", "test", "sha", "1", tables)


def test_a_one_seed_interval_by_hand():
    # the mean of 3 draws from {0, 0, 1}: 0 w.p. 8/27, 1/3 w.p. 12/27, 2/3 w.p. 6/27, 1 w.p. 1/27 -> the 95%
    # percentile interval is [0, 1] (P(mean <= 2/3) = 26/27 < 0.975), the 80% one [0, 2/3] (10% < 8/27, 26/27 > 0.9)
    m = queries([0.0, 0.0, 1.0])
    wide = Resampler(resamples=20000).interval(m, "map")
    assert (wide.estimate, wide.low, wide.high) == (pytest.approx(1 / 3), 0.0, 1.0)
    narrow = Resampler(resamples=20000, level=0.8).interval(m, "map")
    assert (narrow.low, narrow.high) == (0.0, pytest.approx(2 / 3))
    assert wide.n_items == 3 and wide.n_seeds == 1 and wide.resamples == 20000


def test_two_level_seeds_by_hand():
    # each seed's items all equal: resampling items changes nothing, resampling seeds {0, 1} gives 0, 1/2, 1 with
    # probabilities 1/4, 1/2, 1/4: the 95% interval is [0, 1], the 40% one [1/2, 1/2]
    m = several({0: [0.0, 0.0, 0.0], 7: [1.0, 1.0, 1.0]})
    assert m.seeds == (0, 7) and m.point("map") == 0.5
    iv = Resampler(resamples=4000).interval(m, "map")
    assert (iv.low, iv.high, iv.n_seeds) == (0.0, 1.0, 2)
    mid = Resampler(resamples=4000, level=0.4).interval(m, "map")
    assert mid.low == mid.high == 0.5


def test_a_permutation_p_value_by_hand():
    # per-query differences B - A = (-1, 0, -1, -1), observed mean -0.75; under random swaps |mean| reaches 0.75
    # exactly when the three non-zero differences keep one sign: probability 2/8
    a, b = queries([1.0, 0.5, 1.0, 1.0]), queries([0.0, 0.5, 0.0, 0.0])
    result = paired(Resampler(resamples=20000), a, b, "map")
    assert result.delta == -0.75 and result.test == PERMUTATION
    assert result.p_value == pytest.approx(0.25, abs=0.01)  # 4 standard errors of 20,000 permutations
    assert result.high < 0 and result.n_items == 4


def test_an_ap_permutation_p_value_against_every_swap_enumerated():
    # 8 pairs: all 256 swap patterns, each side's AP by scikit-learn on its similarities as within-system ranks
    rng = np.random.default_rng(3)
    label = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    sa, sb = rng.random(8), rng.random(8) + 0.3 * label

    def table(score):
        return pair_table({"s": (score, label.astype(float), label)}, {"ap": Recipe("ap", ("s",))})

    ra, rb = [(np.argsort(np.argsort(s)) + 1) / 8 for s in (sa, sb)]  # no ties: ranks 1..8
    observed = average_precision_score(label, sb) - average_precision_score(label, sa)
    hits = 0
    for swap in itertools.product([False, True], repeat=8):
        swap = np.array(swap)
        x, y = np.where(swap, rb, ra), np.where(swap, ra, rb)
        hits += abs(average_precision_score(label, y) - average_precision_score(label, x)) >= abs(observed) - 1e-12
    exact = hits / 256
    a = measurement("t", "test", "sha", "1", [(0, table(sa))])
    b = measurement("t", "test", "sha", "1", [(0, table(sb))])
    result = paired(Resampler(resamples=20000), a, b, "ap")
    assert result.delta == pytest.approx(observed, abs=1e-15)
    assert result.p_value == pytest.approx(exact, abs=0.015)


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04: 3 x 0.01 = 0.03, max(0.03, 2 x 0.03) = 0.06, max(0.06, 1 x 0.04) = 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0]) and holm([]) == []


def test_only_the_same_items_pair():
    a = queries([0.1, 0.2, 0.3])
    with pytest.raises(NotPairableError, match="the data differ"):
        paired(Resampler(), a, queries([0.1, 0.2, 0.3], sha="other"), "map")
    with pytest.raises(NotPairableError, match="task versions differ"):
        paired(Resampler(), a, queries([0.1, 0.2, 0.3], version="2"), "map")
    with pytest.raises(NotPairableError, match="the items differ"):
        paired(Resampler(), a, queries([0.1, 0.2]), "map")
    with pytest.raises(NotPairableError, match="seed 1 against seed 0: the items differ"):
        measurement("t", "test", "sha", "1", [(0, a.tables[0]), (1, queries([0.1]).tables[0])])


def test_a_rank_metric_with_unequal_seed_counts_falls_back_to_the_bootstrap_test():
    label = np.array([1, 0, 1, 0, 1, 0])

    def table(shift):
        return pair_table({"s": (np.arange(6.0) * shift, label.astype(float), label)}, {"ap": Recipe("ap", ("s",))})

    a = measurement("t", "test", "sha", "1", [(0, table(1.0)), (1, table(-1.0))])
    b = measurement("t", "test", "sha", "1", [(0, table(0.5))])
    result = paired(Resampler(resamples=200), a, b, "ap")
    assert result.test == BOOTSTRAP_P and result.seeds_a == 2 and result.seeds_b == 1


def test_the_verdict_line():
    a, b = queries([1.0, 0.9, 1.0, 0.8] * 5), queries([0.0, 0.1, 0.0, 0.2] * 5)
    result = paired(Resampler(resamples=2000), a, b, "map")
    assert verdict(result).startswith("distinguishable from 0: A is higher (p = ")
    same = paired(Resampler(resamples=2000), a, queries([1.0, 0.9, 1.0, 0.8] * 5), "map")
    assert verdict(same).startswith("not distinguishable from 0 (p = 1 >= 0.05; 95% CI includes 0)")


def test_the_process_wide_memo_gives_what_a_fresh_computation_gives():
    """Resamplers share their test sets' resamples and results' replicates through a memo keyed by content (a report
    builds many): a second Resampler gets the same values without computing them, a table with other values (the
    same task, data and size) is never served the first one's, and the values equal the unmemoised computation."""
    from usebench.stats import intervals
    from usebench.stats.resample import replicates

    a, b = queries([0.1, 0.9, 0.4, 0.7]), queries([0.2, 0.9, 0.4, 0.7])  # same name, sha and size; other values
    first = Resampler(resamples=300).per_seed(a, "map")
    kept = len(intervals._REPLICATES)
    again = Resampler(resamples=300).per_seed(a, "map")
    assert len(intervals._REPLICATES) == kept and np.array_equal(first, again)  # served from the memo
    other = Resampler(resamples=300).per_seed(b, "map")
    assert len(intervals._REPLICATES) == kept + 1 and not np.array_equal(first, other)
    fresh = Resampler(resamples=300)
    assert np.array_equal(first[:, 0], replicates(a.tables[0], "map", fresh.counts(a)))
    assert np.array_equal(Resampler(resamples=300, seed=1).per_seed(a, "map")[:, 0],
                          replicates(a.tables[0], "map", Resampler(resamples=300, seed=1).counts(a)))
