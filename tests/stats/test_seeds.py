"""Seed statistics: golden numbers by hand (and the t distribution's closed form for df = 2)."""
from __future__ import annotations

import math

import pytest

from usebench.store import iter_results
from usebench.stats.seeds import (
    MixedRunsError,
    SeedStats,
    aggregate,
    beats_all_in_every_seed,
    check_comparable,
    config_identity,
    paired_comparison,
    per_seed_average,
)
from tests.report.synthetic_results import add_result
from tests.report.conftest import synthetic_releases  # noqa: F401  (tests/report's autouse pin of the synthetic
# records' releases, which this file ran under in tests/report)


def test_mean_sample_std_n():
    s = SeedStats({0: 0.5, 1: 0.7, 2: 0.6})
    # deviations -0.1, +0.1, 0 -> sample variance 0.02 / 2 = 0.01
    assert s.n == 3 and s.mean == pytest.approx(0.6) and s.std == pytest.approx(0.1)
    assert s.scaled(100).mean == pytest.approx(60.0) and s.scaled(100).std == pytest.approx(10.0)
    assert s.to_dict()["per_seed"] == {"0": 0.5, "1": 0.7, "2": 0.6}


def test_one_seed_has_no_std_and_empty_has_no_mean():
    assert math.isnan(SeedStats({3: 0.4}).std) and SeedStats({3: 0.4}).to_dict()["std"] is None
    assert math.isnan(SeedStats({}).mean) and SeedStats({}).n == 0


def test_per_seed_average_before_seed_averaging():
    a, b = SeedStats({0: 0.50, 1: 0.60, 2: 0.90}), SeedStats({0: 0.70, 1: 0.50})
    avg = per_seed_average([a, b])
    # only seeds 0 and 1 have both tasks: per-seed means 0.60 and 0.55
    assert avg.values == pytest.approx({0: 0.60, 1: 0.55})
    assert avg.mean == pytest.approx(0.575)
    assert avg.std == pytest.approx(0.05 / math.sqrt(2))  # not the mean of the two tasks' stds
    assert per_seed_average([a, SeedStats({})]).n == 0


def test_paired_comparison_wins_and_t_test():
    a = SeedStats({0: 0.11, 1: 0.22, 2: 0.33})
    b = SeedStats({0: 0.10, 1: 0.20, 2: 0.30, 9: 0.5})  # seed 9 has no partner
    pc = paired_comparison(a, b)
    assert pc.seeds == (0, 1, 2) and (pc.wins_a, pc.wins_b, pc.ties) == (3, 0, 0)
    # diffs 0.01, 0.02, 0.03: mean 0.02, sd 0.01 -> t = 0.02 / (0.01 / sqrt 3) = 2 sqrt 3
    t = 2 * math.sqrt(3)
    assert pc.statistic == pytest.approx(t)
    # Student t with 2 df: F(t) = 1/2 + t / (2 sqrt(t^2 + 2)); two-sided p = 2 (1 - F)
    assert pc.p_value == pytest.approx(2 * (0.5 - t / (2 * math.sqrt(t * t + 2))))
    assert "A wins 3" in pc.summary()


def test_paired_comparison_small_n_and_constant_differences():
    pc = paired_comparison(SeedStats({0: 0.2, 1: 0.1}), SeedStats({0: 0.1, 1: 0.2}))
    assert pc.test is None and (pc.wins_a, pc.wins_b) == (1, 1) and "no paired test" in pc.summary()
    const = paired_comparison(SeedStats({0: 0.2, 1: 0.3, 2: 0.4}), SeedStats({0: 0.1, 1: 0.2, 2: 0.3}))
    assert const.test == "paired t-test" and const.p_value is None and const.wins_a == 3


def test_dagger_needs_every_seed_and_matching_seeds():
    a = SeedStats({0: 0.6, 1: 0.6})
    assert beats_all_in_every_seed(a, [SeedStats({0: 0.5, 1: 0.5}), SeedStats({0: 0.4, 1: 0.59})])
    assert not beats_all_in_every_seed(a, [SeedStats({0: 0.5, 1: 0.6})])  # a tie is not a win
    assert not beats_all_in_every_seed(a, [SeedStats({0: 0.5})])  # unpaired seed
    assert not beats_all_in_every_seed(a, [])


def test_config_identity_ignores_only_the_seed():
    assert config_identity({"lr": 1, "seed": 1}) == config_identity({"seed": 2, "lr": 1})
    assert config_identity({"a": {"seed": 1, "b": 2}}) == config_identity({"a": {"seed": 5, "b": 2}})
    assert config_identity({"lr": 1}) != config_identity({"lr": 2})


def test_aggregate_seeds_of_one_experiment(tmp_path):
    for seed, v in ((0, 0.5), (1, 0.7)):
        add_result(tmp_path, "tsdae", seed, "askubuntu", {"map": v})
    stats = aggregate(list(iter_results(tmp_path)), "map")
    assert stats.values == {0: 0.5, 1: 0.7}


def test_aggregation_refuses_mixed_data_hashes(tmp_path):
    add_result(tmp_path, "tsdae", 0, "askubuntu", {"map": 0.5}, sha="aaaa")
    add_result(tmp_path, "tsdae", 1, "askubuntu", {"map": 0.6}, sha="bbbb")
    with pytest.raises(MixedRunsError, match=r"data differ \(sha256 aaaa in .* vs bbbb in"):
        aggregate(list(iter_results(tmp_path)), "map")


def test_aggregation_refuses_mixed_configs_and_says_which_key(tmp_path):
    add_result(tmp_path, "tsdae", 0, "askubuntu", {"map": 0.5}, config={"lr": 3e-5})
    add_result(tmp_path, "tsdae", 1, "askubuntu", {"map": 0.6}, config={"lr": 5e-5})
    with pytest.raises(MixedRunsError, match=r"configs differ beyond the seed .*lr \(3e-05 vs 5e-05\)"):
        check_comparable(list(iter_results(tmp_path)))


def test_aggregation_refuses_a_seed_twice(tmp_path):
    add_result(tmp_path / "a", "tsdae", 0, "askubuntu", {"map": 0.5})
    add_result(tmp_path / "b", "tsdae", 0, "askubuntu", {"map": 0.6})
    results = list(iter_results(tmp_path / "a")) + list(iter_results(tmp_path / "b"))
    with pytest.raises(MixedRunsError, match="seed 0 appears twice"):
        aggregate(results, "map")
