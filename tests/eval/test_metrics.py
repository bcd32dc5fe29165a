"""usebench.eval.metrics against hand computations and the reference libraries (scipy, sklearn, pytrec_eval)."""
from __future__ import annotations

from math import log2, sqrt

import numpy as np
import pytest
import pytrec_eval
from scipy import stats
from sklearn.metrics import average_precision_score

from usebench.errors import BenchError
from usebench.eval.metrics import (
    average_precision_at_ranks,
    binary_average_precision,
    mean_measure,
    ndcg_at,
    pearson,
    precision_at,
    reciprocal_rank,
    spearman,
    trec_eval,
    truncated_average_precision,
)


def pytrec(qrels: dict, run: dict, measure: str) -> float:
    """One query's measure straight from pytrec_eval (the reference the wrapper must agree with)."""
    return pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)["q"][measure]


# --- correlations --------------------------------------------------------------------------------------
def test_spearman_by_hand_and_scipy():
    # No ties: rho = 1 - 6 sum(d^2) / (n (n^2 - 1)) = 1 - 6*4/120.
    x, y = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]
    assert spearman(x, y) == pytest.approx(1 - 6 * 4 / 120, abs=1e-12)
    # Ties get average ranks: x ranks (1, 2.5, 2.5, 4) vs (1, 2, 3, 4) -> Pearson of ranks = 4.5 / sqrt(4.5 * 5).
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / sqrt(4.5 * 5), abs=1e-12)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=50), rng.normal(size=50)
    assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)


def test_pearson_by_hand_and_scipy():
    # Centered x = (-1, 0, 1), y = (-1, 1, 0): cov 1, variances 2 and 2 -> 1/2.
    assert pearson([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5, abs=1e-12)
    rng = np.random.default_rng(1)
    a = rng.normal(size=40)
    b = a + rng.normal(size=40)
    assert pearson(a, b) == pytest.approx(stats.pearsonr(a, b).statistic, abs=1e-12)


def test_correlation_input_checks():
    with pytest.raises(BenchError, match="differ in length"):
        spearman([1, 2, 3], [1, 2])
    with pytest.raises(BenchError, match="at least 2"):
        pearson([1], [1])


# --- binary average precision (TwitterPara) ------------------------------------------------------------
def test_binary_average_precision_by_hand_and_sklearn():
    # Scores .9 (x2, one positive), .5, .1 (positive): thresholds .9 -> P 1/2 at R 1/2; .1 -> P 2/4 at R 1.
    assert binary_average_precision([0, 1, 0, 1], [0.9, 0.9, 0.5, 0.1]) == pytest.approx(0.5, abs=1e-12)
    # Distinct scores: positives at ranks 1 and 3 -> (1/1 + 2/3) / 2.
    assert binary_average_precision([1, 0, 1, 0], [4, 3, 2, 1]) == pytest.approx((1 + 2 / 3) / 2, abs=1e-12)
    rng = np.random.default_rng(2)
    labels, scores = rng.integers(0, 2, size=60), rng.normal(size=60)
    assert binary_average_precision(labels, scores) == pytest.approx(average_precision_score(labels, scores))
    with pytest.raises(BenchError, match="without a positive"):
        binary_average_precision([0, 0], [0.1, 0.2])


# --- ranked-list metrics (AskUbuntu) -------------------------------------------------------------------
def test_average_precision_at_ranks_conventions():
    rel = [0, 1, 0, 1]
    # Normalised by the relevant items in the list (useb AskUbuntu / Tao Lei's Evaluation): (1/2 + 2/4) / 2.
    assert average_precision_at_ranks(rel) == pytest.approx(0.5, abs=1e-12)
    # Trec-style with 4 relevant in total (2 never retrieved): (1/2 + 2/4) / 4, which is pytrec_eval's map.
    assert average_precision_at_ranks(rel, n_relevant=4) == pytest.approx(0.25, abs=1e-12)
    qrels = {"q": {"d0": 0, "d1": 1, "d2": 0, "d3": 1, "x": 1, "y": 1}}
    run = {"q": {"d0": 4.0, "d1": 3.0, "d2": 2.0, "d3": 1.0}}
    assert average_precision_at_ranks(rel, n_relevant=4) == pytest.approx(pytrec(qrels, run, "map"), abs=1e-12)
    # Found-normalised AP equals sklearn's AP over the list when scores are distinct.
    assert average_precision_at_ranks(rel) == pytest.approx(average_precision_score(rel, [4, 3, 2, 1]))
    assert average_precision_at_ranks([0, 0, 0]) == 0.0 and average_precision_at_ranks([]) == 0.0


def test_reciprocal_rank_and_precision():
    assert reciprocal_rank([0, 0, 1, 1]) == pytest.approx(1 / 3, abs=1e-12)
    assert reciprocal_rank([0, 0]) == 0.0
    assert precision_at([1, 0, 1, 1, 0, 1], 5) == pytest.approx(3 / 5, abs=1e-12)
    assert precision_at([1, 0, 1], 5) == pytest.approx(2 / 5, abs=1e-12)  # k is the denominator (trec P_k)
    qrels = {"q": {"a": 1, "c": 1}}
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    assert precision_at([1, 0, 1], 5) == pytest.approx(pytrec(qrels, run, "P_5"), abs=1e-12)
    assert reciprocal_rank([0, 1, 0]) == pytest.approx(pytrec({"q": {"b": 1}}, run, "recip_rank"), abs=1e-12)


# --- trec_eval wrapper (SciDocs) -----------------------------------------------------------------------
def test_trec_eval_by_hand_and_ties():
    qrels = {"q": {"a": 1, "b": 0, "c": 1}, "empty": {"z": 0}}
    run = {"q": {"a": 0.5, "b": 0.9, "c": 0.1}, "empty": {"z": 1.0}, "not-judged": {"a": 1.0}}
    per_query = trec_eval(qrels, run, ["map", "ndcg"])
    # Ranking b, a, c: relevant at 2 and 3 -> AP (1/2 + 2/3) / 2; nDCG (1/log2 3 + 1/log2 4) / (1 + 1/log2 3).
    assert per_query["q"]["map"] == pytest.approx((1 / 2 + 2 / 3) / 2, abs=1e-12)
    assert per_query["q"]["ndcg"] == pytest.approx((1 / log2(3) + 1 / log2(4)) / (1 + 1 / log2(3)), abs=1e-12)
    assert per_query["empty"]["map"] == 0.0  # judged, nothing relevant: counts as 0
    assert "not-judged" not in per_query  # queries without qrels are left out
    # Equal scores: trec_eval orders by document id, descending -> c, b, a -> (1/1 + 2/3) / 2.
    tied = trec_eval({"q": {"a": 1, "b": 0, "c": 1}}, {"q": {"a": 0.5, "b": 0.5, "c": 0.5}}, ["map"])
    assert tied["q"]["map"] == pytest.approx((1 + 2 / 3) / 2, abs=1e-12)
    # An empty run for a judged query still counts (the useb SciDocs reference relies on it).
    assert trec_eval({"q": {"a": 1}}, {"q": {}}, ["map"])["q"]["map"] == 0.0


def test_mean_measure():
    assert mean_measure({"a": {"map": 0.5}, "b": {"map": 0.25}}, "map") == pytest.approx(0.375, abs=1e-12)
    assert mean_measure({}, "map") == 0.0


# --- CQADupStack MAP@100 and nDCG@10 -------------------------------------------------------------------
def test_truncated_average_precision_is_normalised_by_found_relevant():
    # Top list of 5 with hits at ranks 2 and 4; the query has 3 more relevant docs outside the list.
    hits, scores = [0, 1, 0, 1, 0], [0.9, 0.8, 0.7, 0.6, 0.5]
    assert truncated_average_precision(hits, scores) == pytest.approx((1 / 2 + 2 / 4) / 2, abs=1e-12)
    assert truncated_average_precision(hits, scores) == pytest.approx(average_precision_score(hits, scores))
    # ... which is pytrec_eval's AP when only the found documents are judged relevant,
    judged_found = {"q": {"d1": 1, "d3": 1}}
    run = {"q": {f"d{i}": s for i, s in enumerate(scores)}}
    assert truncated_average_precision(hits, scores) == pytest.approx(pytrec(judged_found, run, "map"))
    # ... and not trec map_cut_100 over all 5 relevant documents: (1/2 + 2/4) / 5.
    all_relevant = {"q": {"d1": 1, "d3": 1, "x": 1, "y": 1, "z": 1}}
    assert pytrec(all_relevant, run, "map_cut_100") == pytest.approx(1 / 5, abs=1e-12)
    assert truncated_average_precision(hits, scores) != pytest.approx(1 / 5)


def test_truncated_average_precision_ties_and_empty():
    # Hits tied with a miss form one threshold (sklearn): precision 2/4 at recall 1 -> 1/2, whatever the order.
    assert truncated_average_precision([0, 0, 1, 1], [1.0, 0.8, 0.6, 0.6]) == pytest.approx(0.5, abs=1e-12)
    assert truncated_average_precision([0, 1, 0, 1], [1.0, 0.8, 0.8, 0.1]) == pytest.approx(
        average_precision_score([0, 1, 0, 1], [1.0, 0.8, 0.8, 0.1]))
    assert truncated_average_precision([0, 0, 0], [0.3, 0.2, 0.1]) == 0.0  # none found: 0, not undefined
    assert truncated_average_precision([1], [0.3]) == 1.0
    with pytest.raises(BenchError, match="differ in length"):
        truncated_average_precision([1, 0], [0.1])


def test_ndcg_at_by_hand_and_pytrec():
    hits = [0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1]  # the 11th hit is past the cut-off
    # DCG@10 = 1/log2(3) + 1/log2(6); ideal for 3 relevant = 1 + 1/log2(3) + 1/log2(4).
    expected = (1 / log2(3) + 1 / log2(6)) / (1 + 1 / log2(3) + 1 / log2(4))
    assert ndcg_at(hits, 3, 10) == pytest.approx(expected, abs=1e-12)
    run = {"q": {f"d{i:02d}": float(100 - i) for i in range(len(hits))}}
    qrels = {"q": {f"d{i:02d}": 1 for i, h in enumerate(hits) if h}}
    assert ndcg_at(hits, 3, 10) == pytest.approx(pytrec(qrels, run, "ndcg_cut_10"), abs=1e-12)
    # Relevant documents never retrieved still count in the ideal (useb: len of the duplicate list).
    qrels_more = {"q": {**qrels["q"], "missing1": 1, "missing2": 1}}
    assert ndcg_at(hits, 5, 10) == pytest.approx(pytrec(qrels_more, run, "ndcg_cut_10"), abs=1e-12)
    # More relevant documents than k: the ideal is capped at k hits.
    assert ndcg_at([1] * 10, 12, 10) == pytest.approx(1.0, abs=1e-12)
    assert ndcg_at([1, 0], 1, 10) == 1.0 and ndcg_at([0, 0], 1, 10) == 0.0
    with pytest.raises(BenchError, match="without relevant"):
        ndcg_at([0, 1], 0, 10)


def test_the_fast_average_precision_is_sklearns_to_the_bit():
    """CQADupStack's per-query AP is computed with sklearn's own operations, not its call: the same float on
    random lists, ties (rounded scores) and float32 scores included."""
    from usebench.eval.metrics import sklearn_average_precision

    rng = np.random.default_rng(0)
    for _ in range(2000):
        n = int(rng.integers(1, 120))
        hits = (rng.random(n) < rng.random()).astype(np.int64)
        hits[rng.integers(n)] = 1
        scores = rng.standard_normal(n)
        if rng.random() < 0.5:
            scores = np.round(scores, int(rng.integers(1, 4)))  # ties
        else:
            scores = scores.astype(np.float32).astype(np.float64)
        assert sklearn_average_precision(hits, scores) == float(average_precision_score(hits, scores))
