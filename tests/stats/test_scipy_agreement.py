"""Our bootstrap intervals and permutation p-values against scipy's own (``scipy.stats.bootstrap`` paired and
vectorised, ``scipy.stats.permutation_test`` over paired samples) on the same per-item data, the metric computed by
scikit-learn and scipy inside their statistic: the two agree within Monte Carlo error."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import average_precision_score

from usebench.eval.items import Recipe, mean_recipes, pair_table, query_table
from usebench.stats.intervals import Resampler, measurement
from usebench.stats.paired import paired

N, RESAMPLES = 300, 4000


@pytest.fixture(scope="module")
def pairs():
    rng = np.random.default_rng(11)
    label = rng.integers(0, 2, N)
    gold = label * 2.0 + rng.normal(size=N)
    sa = label + rng.normal(scale=1.6, size=N)
    sb = label + rng.normal(scale=1.45, size=N)  # B a little better: p well inside (0, 1)
    return label, gold, sa, sb


def _ap_rows(label, axis=-1):
    def statistic(x, y, axis=axis):
        x, y = np.atleast_2d(x), np.atleast_2d(y)
        out = [average_precision_score(label, b) - average_precision_score(label, a) for a, b in zip(x, y)]
        return np.array(out) if len(out) > 1 else np.float64(out[0])
    return statistic


def _measure(score, label, gold):
    table = pair_table({"s": (score, gold, label)}, {"ap": Recipe("ap", ("s",)), "rho": Recipe("spearman", ("s",))})
    return measurement("t", "test", "sha", "1", [(0, table)])


def _tolerance(low, high):
    return 0.06 * (high - low)  # endpoints of two independent 4,000-resample bootstraps (seen: within 0.02)


def test_the_paired_interval_of_an_ap_difference_agrees_with_scipy_bootstrap(pairs):
    label, gold, sa, sb = pairs

    def statistic(x, y, lab, axis=-1):  # the items resampled together: the labels travel with their pairs
        x, y, lab = np.atleast_2d(x), np.atleast_2d(y), np.atleast_2d(lab)
        out = np.array([average_precision_score(l_, b) - average_precision_score(l_, a) for a, b, l_ in zip(x, y, lab)])
        return out if len(out) > 1 else np.float64(out[0])

    theirs = stats.bootstrap((sa, sb, label), statistic, paired=True, vectorized=True, n_resamples=RESAMPLES,
                             method="percentile", rng=np.random.default_rng(5)).confidence_interval
    ours = paired(Resampler(resamples=RESAMPLES), _measure(sa, label, gold), _measure(sb, label, gold), "ap")
    tol = _tolerance(theirs.low, theirs.high)
    assert ours.low == pytest.approx(theirs.low, abs=tol) and ours.high == pytest.approx(theirs.high, abs=tol)


def test_a_spearman_interval_agrees_with_scipy_bootstrap(pairs):
    label, gold, sa, _ = pairs

    def statistic(x, y, axis=-1):
        return stats.spearmanr(x, y, axis=axis).statistic if np.ndim(x) == 1 else np.array(
            [stats.spearmanr(a, b).statistic for a, b in zip(x, y)])

    theirs = stats.bootstrap((sa, gold), statistic, paired=True, vectorized=True, n_resamples=RESAMPLES,
                             method="percentile", rng=np.random.default_rng(6)).confidence_interval
    ours = Resampler(resamples=RESAMPLES).interval(_measure(sa, label, gold), "rho")
    tol = _tolerance(theirs.low, theirs.high)
    assert ours.low == pytest.approx(theirs.low, abs=tol) and ours.high == pytest.approx(theirs.high, abs=tol)


def test_the_ap_permutation_p_value_agrees_with_scipy_permutation_test(pairs):
    label, gold, sa, sb = pairs
    ra, rb = stats.rankdata(sa) / N, stats.rankdata(sb) / N  # what is swapped: each system's ranks
    theirs = stats.permutation_test((ra, rb), _ap_rows(label), permutation_type="samples", vectorized=True,
                                    n_resamples=RESAMPLES, alternative="two-sided", rng=np.random.default_rng(7))
    ours = paired(Resampler(resamples=RESAMPLES), _measure(sa, label, gold), _measure(sb, label, gold), "ap")
    assert theirs.statistic == pytest.approx(ours.delta, abs=1e-12)
    assert 0.02 < theirs.pvalue < 0.9  # a p-value that says something about the agreement
    assert ours.p_value == pytest.approx(theirs.pvalue, abs=0.025)  # ~4 standard errors of the two together


def test_a_per_query_mean_agrees_with_both(pairs):
    rng = np.random.default_rng(12)
    va = rng.random(N)
    vb = np.clip(va + rng.normal(0.02, 0.15, N), 0, 1)

    def table(v):
        return query_table({"s": ([str(i) for i in range(N)], {"ap": v})}, mean_recipes({"map": ("ap", ("s",))}))

    a, b = (measurement("t", "test", "sha", "1", [(0, table(v))]) for v in (va, vb))
    ours = paired(Resampler(resamples=RESAMPLES), a, b, "map")

    def diff(x, y, axis=-1):
        return np.mean(y, axis=axis) - np.mean(x, axis=axis)

    boot = stats.bootstrap((va, vb), diff, paired=True, vectorized=True, n_resamples=RESAMPLES, method="percentile",
                           rng=np.random.default_rng(8)).confidence_interval
    perm = stats.permutation_test((va, vb), diff, permutation_type="samples", vectorized=True, n_resamples=RESAMPLES,
                                  rng=np.random.default_rng(9))
    tol = _tolerance(boot.low, boot.high)
    assert ours.low == pytest.approx(boot.low, abs=tol) and ours.high == pytest.approx(boot.high, abs=tol)
    assert ours.p_value == pytest.approx(perm.pvalue, abs=0.025)
