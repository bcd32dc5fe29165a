"""A quick evaluation's subsample (issue 56, item 3; usebench/eval/subsample.py): fixed by (seed, task, subset) alone,
at most N items per subset, nested in N, and its values checked before any work."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from usebench.errors import BenchValueError
from usebench.eval.subsample import Limit, ids_sha256, limit_of


def _by_hand(seed: int, task: str, subset: str, size: int, n: int) -> list[int]:
    """The rule as the module's docstring states it: rank each position by sha256 of (seed, task, subset, position),
    keep the n lowest, in file order."""
    def rank(i: int) -> bytes:
        return hashlib.sha256(f"{seed}\0{task}\0{subset}\0{i}".encode()).digest()

    return sorted(sorted(range(size), key=rank)[:n])


def test_the_pick_is_the_stated_rule_and_the_same_every_time():
    limit = Limit(25, seed=3)
    first = limit.pick("twitterpara", "pit", 972)
    assert first.tolist() == _by_hand(3, "twitterpara", "pit", 972, 25)
    assert np.array_equal(first, Limit(25, seed=3).pick("twitterpara", "pit", 972))
    assert len(set(first.tolist())) == 25 and first.min() >= 0 and first.max() < 972
    assert np.all(np.diff(first) > 0)  # file order


def test_each_subset_and_seed_has_its_own_sample_and_a_small_subset_is_whole():
    limit = Limit(50)
    url, pit = limit.pick("twitterpara", "twitterurl", 1000), limit.pick("twitterpara", "pit", 1000)
    assert not np.array_equal(url, pit)  # two subsets of the same size: independent picks
    assert not np.array_equal(limit.pick("sts12", "headlines", 1000), limit.pick("sts13", "headlines", 1000))
    assert not np.array_equal(url, Limit(50, seed=1).pick("twitterpara", "twitterurl", 1000))
    assert Limit(50).pick("t", "s", 50).tolist() == list(range(50))
    assert Limit(50).pick("t", "s", 7).tolist() == list(range(7))


def test_a_larger_limit_holds_every_item_of_a_smaller_one():
    small, large = Limit(20, seed=2).pick("t", "s", 500), Limit(80, seed=2).pick("t", "s", 500)
    assert set(small.tolist()) <= set(large.tolist())


@pytest.mark.parametrize("n, seed", [(0, 0), (-3, 0), (True, 0), (2.5, 0), ("10", 0), (10, -1), (10, 1.0)])
def test_a_bad_limit_is_refused_at_creation(n, seed):
    with pytest.raises(BenchValueError, match="limit"):
        Limit(n, seed)


def test_the_record_block_reads_back_and_ids_hash_the_keys_in_order():
    limit = Limit(200, seed=4)
    assert limit_of({**limit.config(), "items": 3}) == limit and limit_of(None) is None and limit_of({}) is None
    assert limit.label() == "limit 200 seed 4" and Limit(200).label() == "limit 200"
    keys = [("pit", "3"), ("twitterurl", "10")]
    assert ids_sha256(keys) == hashlib.sha256(b"pit\t3\ntwitterurl\t10\n").hexdigest() != ids_sha256(keys[::-1])
