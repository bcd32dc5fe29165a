"""Per-item outcomes (usebench/eval/items.py): the file, its exactness, and metrics recomputed from it by hand."""
from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from usebench.eval.items import (ItemsError, ItemTable, Recipe, check_reproduces, distinct_ids, mean_recipes,
                                 metric_value, pair_table, query_table)


def toy_pairs() -> ItemTable:
    # subset "a": AP by hand: ranks 1 (hit, P=1), 2 (miss), 3 (hit, P=2/3) -> (1 + 2/3) / 2 = 5/6;
    # subset "b": 0.9 and 0.9 tie (one threshold: P=1/2 at recall 1/2), then 0.5 (P=2/3 at recall 1) ->
    # 0.5 * 1/2 + 0.5 * 2/3 = 7/12; the pair labelled -1 is no part of AP
    sets = {"a": (np.array([0.9, 0.8, 0.7, 0.1]), np.array([5.0, 1.0, 4.0, 0.0]), np.array([1, 0, 1, 0])),
            "b": (np.array([0.9, 0.9, 0.5, 0.1, 0.3]), np.array([5.0, 2.0, 4.0, 1.0, 3.0]), np.array([1, 0, 1, 0, -1]))}
    recipes = {"ap_a": Recipe("ap", ("a",)), "ap_b": Recipe("ap", ("b",)), "ap_avg": Recipe("ap", ("a", "b")),
               "spearman_all": Recipe("spearman", ("a", "b"), "pool")}
    return pair_table(sets, recipes)


def test_metrics_recomputed_from_toy_pairs_equal_a_hand_computation():
    t = toy_pairs()
    assert metric_value(t, "ap_a") == pytest.approx(5 / 6, abs=1e-15)
    assert metric_value(t, "ap_b") == pytest.approx(7 / 12, abs=1e-15)
    assert metric_value(t, "ap_avg") == pytest.approx((5 / 6 + 7 / 12) / 2, abs=1e-15)
    # pooled Spearman: the 9 pairs together, scipy's average ranks
    from scipy.stats import spearmanr

    score = np.array([0.9, 0.8, 0.7, 0.1, 0.9, 0.9, 0.5, 0.1, 0.3])
    gold = np.array([5.0, 1.0, 4.0, 0.0, 5.0, 2.0, 4.0, 1.0, 3.0])
    assert metric_value(t, "spearman_all") == spearmanr(score, gold).statistic


def test_the_file_round_trips_bit_for_bit_and_the_same_items_give_the_same_bytes():
    t = toy_pairs()
    data = t.to_bytes()
    assert data == toy_pairs().to_bytes()  # fixed zip timestamps: same content, same sha256
    back = ItemTable.from_bytes(data)
    assert back.kind == "pairs" and back.subsets == ("a", "b") and back.keys() == t.keys()
    for name in t.columns:
        assert np.array_equal(back.columns[name], t.columns[name])
    assert back.recipes == t.recipes


def test_values_are_stored_in_the_smallest_exact_dtype_and_read_back_as_float64():
    exact32 = np.float32(np.random.default_rng(0).random(50)).astype(np.float64)  # a float32 cosine
    not32 = exact32 + 1e-12
    t = pair_table({"s": (exact32, np.arange(50.0), None)}, {"spearman": Recipe("spearman", ("s",))})
    u = pair_table({"s": (not32, np.arange(50.0), None)}, {"spearman": Recipe("spearman", ("s",))})
    stored = zipfile.ZipFile(io.BytesIO(t.to_bytes()))
    header = np.lib.format.read_array_header_1_0
    dtypes = {}
    for name in stored.namelist():
        if name.endswith(".npy"):
            fh = io.BytesIO(stored.read(name))
            np.lib.format.read_magic(fh)
            dtypes[name] = header(fh)[2]
    assert dtypes["col.score.npy"] == np.float32 and dtypes["col.gold.npy"] == np.int8
    assert "ids.npy" not in dtypes  # a pair's id is its position in its subset: implied, not stored
    assert np.array_equal(ItemTable.from_bytes(u.to_bytes()).columns["score"], not32)  # kept in float64
    back = ItemTable.from_bytes(t.to_bytes())
    assert back.columns["score"].dtype == np.float64 and np.array_equal(back.columns["score"], exact32)


def test_query_tables_keep_nan_measures_out_of_their_means_and_name_repeated_ids():
    parts = {"f1": (["q1", "q2", "q1"], {"ndcg": [0.5, float("nan"), 1.0]}), "f2": (["x"], {"ndcg": [0.25]})}
    t = query_table(parts, mean_recipes({"ndcg": ("ndcg", ("f1", "f2"))}))
    assert metric_value(t, "ndcg") == pytest.approx(((0.5 + 1.0) / 2 + 0.25) / 2)
    assert t.keys() == [("f1", "q1"), ("f1", "q2"), ("f1", "q1#2"), ("f2", "x")]
    assert ItemTable.from_bytes(t.to_bytes()).keys() == t.keys()  # query ids are stored
    assert distinct_ids(["a", "a", "b", "a"]) == ["a", "a#2", "b", "a#3"]


def test_items_that_do_not_reproduce_a_score_are_refused():
    t = toy_pairs()
    scores = {m: metric_value(t, m) for m in t.recipes}
    check_reproduces(t, scores, "toy")
    with pytest.raises(ItemsError, match="ap_b recomputed from the per-item outcomes is"):
        check_reproduces(t, {**scores, "ap_b": scores["ap_b"] + 1e-9}, "toy")
    with pytest.raises(ItemsError, match="which the task's scores lack"):
        check_reproduces(t, {k: v for k, v in scores.items() if k != "ap_a"}, "toy")


def test_an_unreadable_items_file_is_an_error_naming_it():
    with pytest.raises(ItemsError, match="somewhere/test.items.npz: not a usebench items file"):
        ItemTable.from_bytes(b"not a zip", "somewhere/test.items.npz")
    with pytest.raises(ItemsError, match="give ap_a, ap_avg, ap_b, spearman_all, not 'map'"):
        metric_value(toy_pairs(), "map")
