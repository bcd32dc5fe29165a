"""Exact search backends: every backend returns the numpy brute-force top-k, ties broken by lower corpus index."""
from __future__ import annotations

import numpy as np
import pytest

from benchmark.eval import retrieval
from benchmark.errors import ConfigError
from benchmark.eval.retrieval import (
    SearchOptions,
    search_inner_product,
    topk_numpy,
    topk_rows,
)

CPU_BACKENDS = ["numpy", "torch", "faiss-cpu"]
BACKENDS = CPU_BACKENDS + [pytest.param("faiss-gpu", marks=pytest.mark.gpu)]
# Tiny memory budget, small shards and margin: exercises query chunks, shard merges and tie fallbacks.
TIGHT = SearchOptions(memory_mb=1, shard_rows=333, margin=2)


def brute_force(queries: np.ndarray, corpus: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """float64 scores of every pair, sorted by (score desc, index asc): the reference top-k."""
    scores = queries.astype(np.float64) @ corpus.astype(np.float64).T
    index = np.broadcast_to(np.arange(corpus.shape[0]), scores.shape)
    order = np.lexsort((index, -scores), axis=1)[:, :k]
    return np.take_along_axis(scores, order, axis=1), order


def need(backend: str) -> None:
    if backend == "faiss-gpu" and not retrieval.faiss_status()[1]:
        pytest.skip("no FAISS GPU build or no GPU")


@pytest.fixture(scope="module")
def integer_vectors():
    """Small integer coordinates: every inner product is exact in float32, so exact ties abound."""
    rng = np.random.default_rng(0)
    corpus = rng.integers(-2, 3, (2000, 8)).astype(np.float32)
    queries = rng.integers(-2, 3, (40, 8)).astype(np.float32)
    return queries, corpus


@pytest.fixture(scope="module")
def unit_vectors():
    """Random unit vectors with a block of 40 copies of one row (a tie group wider than any margin)."""
    rng = np.random.default_rng(1)
    corpus = rng.standard_normal((5000, 32)).astype(np.float32)
    corpus[1000:1040] = corpus[7]
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    queries = np.vstack([corpus[7:8], rng.standard_normal((29, 32)).astype(np.float32)])
    return queries, corpus


@pytest.mark.parametrize("options", [SearchOptions(), TIGHT], ids=["default", "tight"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_backends_equal_brute_force_with_exact_ties(backend, options, integer_vectors):
    need(backend)
    queries, corpus = integer_vectors
    ref_scores, ref_idx = brute_force(queries, corpus, 25)
    result = search_inner_product(queries, corpus, 25, backend=backend, options=options)
    assert result.backend == backend
    np.testing.assert_array_equal(result.indices, ref_idx)
    np.testing.assert_array_equal(result.scores, ref_scores.astype(np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_backends_equal_brute_force_on_unit_vectors(backend, unit_vectors):
    need(backend)
    queries, corpus = unit_vectors
    ref_scores, ref_idx = brute_force(queries, corpus, 50)
    result = search_inner_product(queries, corpus, 50, backend=backend, options=SearchOptions(shard_rows=1200))
    np.testing.assert_array_equal(result.indices, ref_idx)
    np.testing.assert_allclose(result.scores, ref_scores, atol=1e-6)
    assert result.indices[0, :41].tolist() == [7, *range(1000, 1040)]  # the copies, in index order


def test_all_cpu_backends_return_identical_arrays(unit_vectors):
    queries, corpus = unit_vectors
    results = [search_inner_product(queries, corpus, 30, backend=b, options=TIGHT) for b in CPU_BACKENDS]
    for other in results[1:]:
        np.testing.assert_array_equal(other.indices, results[0].indices)
        np.testing.assert_array_equal(other.scores, results[0].scores)


def test_topk_rows_breaks_ties_by_lower_index():
    sims = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 3.0], [0.0, 0.0, 0.0, 0.0, 1.0, 0.0]])
    scores, idx = topk_rows(sims, 3)
    assert idx.tolist() == [[1, 2, 4], [4, 0, 1]]
    assert scores.tolist() == [[3.0, 3.0, 3.0], [1.0, 0.0, 0.0]]


def test_topk_numpy_keeps_its_interface(integer_vectors):
    queries, corpus = integer_vectors
    result = topk_numpy(queries, corpus, 5, chunk=7)
    np.testing.assert_array_equal(result.indices, brute_force(queries, corpus, 5)[1])
    assert (result.backend, result.device) == ("numpy", "cpu")


def test_k_larger_than_corpus_returns_the_whole_corpus():
    corpus = np.eye(3, dtype=np.float32)
    result = search_inner_product(np.ones((1, 3), np.float32), corpus, 10, backend="faiss-cpu")
    assert result.indices.tolist() == [[0, 1, 2]]


def test_auto_prefers_faiss_and_falls_back_without_it(monkeypatch):
    assert retrieval.resolve_backend("auto") == ("faiss-cpu", "cpu")
    monkeypatch.setattr(retrieval, "faiss_status", lambda: (False, False))
    monkeypatch.setattr(retrieval, "_torch_device", lambda: "cpu")
    assert retrieval.resolve_backend("auto") == ("numpy", "cpu")
    monkeypatch.setattr(retrieval, "_torch_device", lambda: "cuda:0")
    assert retrieval.resolve_backend("auto") == ("torch", "cuda:0")
    with pytest.raises(ConfigError, match="needs FAISS"):
        retrieval.resolve_backend("faiss-cpu")


def test_unknown_or_unavailable_backend_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown search backend"):
        retrieval.resolve_backend("annoy")
    if not retrieval.faiss_status()[1]:
        with pytest.raises(ConfigError, match="GPU"):
            retrieval.resolve_backend("faiss-gpu")


def test_dense_scorer_records_backend_and_device():
    from benchmark.eval.scorer import DenseScorer

    class OneHot:
        """A stand-in encoder: text i -> i-th unit vector."""

        name = "onehot"

        def encode(self, texts):
            return np.eye(4, dtype=np.float32)[[int(t) for t in texts]]

        def describe(self):
            return {"model": "onehot"}

    scorer = DenseScorer(OneHot(), search_backend="numpy")
    scorer.prepare(["0", "1", "2", "3"])
    _, idx = scorer.search(["2"], ["0", "1", "2", "3"], 2)
    assert idx.tolist() == [[2, 0]]
    info = scorer.describe()
    assert (info["retrieval_backend"], info["retrieval_device"]) == ("numpy", "cpu")
    scorer.prepare(["0"])  # a new task that does not search reports no backend
    assert "retrieval_backend" not in scorer.describe()
