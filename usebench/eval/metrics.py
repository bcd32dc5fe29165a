"""Pure metric functions shared by the task adapters. Scores are in 0-1, unrounded.

Every function here is checked in ``tests/eval/test_metrics.py`` against a hand computation or a
reference library (scipy, scikit-learn, pytrec_eval) on the same input.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np

from usebench.errors import BenchError


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (ties get average ranks, as scipy)."""
    _check_same_length(x, y)
    from scipy import stats  # here: scipy.stats costs ~1.5 s to import, which a dry run never needs

    return float(stats.spearmanr(x, y).statistic)


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    _check_same_length(x, y)
    from scipy import stats

    return float(stats.pearsonr(x, y).statistic)


def binary_average_precision(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Average precision of ``scores`` against binary ``labels`` (sklearn's definition, ties grouped)."""
    from sklearn.metrics import average_precision_score

    _check_same_length(labels, scores)
    labels = np.asarray(labels)
    if labels.sum() == 0:
        raise BenchError("average precision is undefined without a positive label")
    return float(average_precision_score(labels, np.asarray(scores, dtype=np.float64)))


def average_precision_at_ranks(rel: Sequence[int], n_relevant: int | None = None) -> float:
    """AP of a ranked 0/1 list: mean of precision@i over relevant positions i.

    The denominator is ``n_relevant`` when given (trec-style, relevant documents not retrieved count as misses),
    else the number of relevant documents *in the list* (the AskUbuntu / useb CQADupStack convention).
    Returns 0 when the denominator is 0.
    """
    rel = np.asarray(rel, dtype=np.float64)
    hits = np.cumsum(rel)
    denominator = hits[-1] if n_relevant is None and len(rel) else (n_relevant or 0)
    if denominator == 0:
        return 0.0
    precision = hits / np.arange(1, len(rel) + 1)
    return float((precision * rel).sum() / denominator)


def reciprocal_rank(rel: Sequence[int]) -> float:
    """1 / rank of the first relevant item; 0 if none."""
    hits = np.flatnonzero(np.asarray(rel))
    return float(1.0 / (hits[0] + 1)) if len(hits) else 0.0


def precision_at(rel: Sequence[int], k: int) -> float:
    """Fraction of relevant items among the top k (k fixed as the denominator, like trec P_k)."""
    return float(np.asarray(rel[:k]).sum() / k)


def trec_eval(
    qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]], measures: Iterable[str]
) -> dict[str, dict[str, float]]:
    """Per-query trec measures from pytrec_eval (e.g. ``map``, ``ndcg_cut_10``, ``recall_100``, ``P_10``).

    ``run`` scores are floats; pytrec_eval sorts by score, breaking ties by document id (descending), as trec_eval.
    """
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(
        {q: {d: int(r) for d, r in docs.items()} for q, docs in qrels.items()}, set(measures)
    )
    return evaluator.evaluate({q: {d: float(s) for d, s in docs.items()} for q, docs in run.items()})


def mean_measure(per_query: Mapping[str, Mapping[str, float]], measure: str) -> float:
    """Mean of one trec measure over the evaluated queries."""
    values = [m[measure] for m in per_query.values()]
    return float(np.mean(values)) if values else 0.0


def truncated_average_precision(hits: Sequence[int], scores: Sequence[float]) -> float:
    """AP of one retrieved top-k list (useb CQADupStack "MAP@100"): sklearn's average precision of the list's
    scores against its 0/1 hits, so it is normalised by the relevant documents *found in the list*, not by
    all relevant ones (unlike trec ``map_cut_k``); 0 when the list holds none. Tied scores form one threshold
    (sklearn), so the order inside a tie does not change the value.
    """
    hits = np.asarray(hits, dtype=np.int64)
    if len(hits) != len(scores):
        raise BenchError(f"metric inputs differ in length: {len(hits)} vs {len(scores)}")
    if not hits.any():
        return 0.0
    return sklearn_average_precision(hits, np.asarray(scores, dtype=np.float64))


def sklearn_average_precision(hits: np.ndarray, scores: np.ndarray) -> float:
    """``sklearn.metrics.average_precision_score(hits, scores)`` for 0/1 ``hits`` with at least one 1, by the same
    numpy operations in the same order (its ``_binary_clf_curve`` and ``precision_recall_curve``), so the same
    float: about 20 times faster than the library's call, whose input validation dominates a 100-item list, and
    CQADupStack scores one list per query (tests/eval/test_metrics.py holds it equal to sklearn's, ties included)."""
    order = np.argsort(scores, kind="mergesort")[::-1]  # descending, ties in sklearn's order
    ranked_scores, ranked_hits = scores[order], hits[order] == 1
    threshold_idxs = np.r_[np.where(np.diff(ranked_scores))[0], ranked_hits.size - 1]  # one threshold per tie
    tps = np.cumsum(ranked_hits * 1.0, dtype=np.float64)[threshold_idxs]
    fps = 1 + threshold_idxs - tps
    predicted = tps + fps
    precision = np.zeros_like(tps)
    np.divide(tps, predicted, out=precision, where=(predicted != 0))
    recall = tps / tps[-1]
    precision, recall = np.hstack((precision[::-1], 1)), np.hstack((recall[::-1], 0))
    return float(-np.sum(np.diff(recall) * precision[:-1]))


def ndcg_at(hits: Sequence[int], n_relevant: int, k: int) -> float:
    """Binary nDCG@k of a ranked 0/1 list: DCG of its top k over the DCG of ``n_relevant`` hits ranked first
    (gain 1, discount log2(rank + 1)); relevant documents missing from the list still count in the ideal.
    """
    if n_relevant <= 0:
        raise BenchError("nDCG is undefined for a query without relevant documents")
    discounts = 1.0 / np.log2(np.arange(2, k + 2))  # rank 1 -> 1/log2(2)
    top = np.asarray(hits[:k], dtype=np.float64)
    return float((top * discounts[: len(top)]).sum() / discounts[: min(n_relevant, k)].sum())


def _check_same_length(a: Sequence, b: Sequence) -> None:
    if len(a) != len(b):
        raise BenchError(f"metric inputs differ in length: {len(a)} vs {len(b)}")
    if len(a) < 2:
        raise BenchError(f"need at least 2 items to compute a metric, got {len(a)}")
