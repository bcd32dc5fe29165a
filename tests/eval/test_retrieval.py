"""Exact search backends: every backend returns the numpy brute-force top-k, ties broken by lower corpus index."""
from __future__ import annotations

import numpy as np
import pytest

from usebench.eval import retrieval
from usebench.errors import ConfigError
from usebench.eval.retrieval import (
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


def _machine(monkeypatch, faiss: tuple[bool, bool], gpu: bool) -> None:
    """Pretend FAISS (importable, GPU build) and a visible GPU (cuda:N as asked) or none."""
    monkeypatch.setattr(retrieval, "faiss_status", lambda: faiss)

    def torch_device(device=None):
        if device is None:
            return "cuda:0" if gpu else "cpu"
        if str(device).startswith("cuda") and not gpu:
            raise ConfigError("CUDA is not available here")
        return "cpu" if device == "cpu" else (device if ":" in device else "cuda:0")

    monkeypatch.setattr(retrieval, "_torch_device", torch_device)


def test_auto_prefers_faiss_and_falls_back_without_it(monkeypatch):
    _machine(monkeypatch, (True, False), gpu=False)
    assert retrieval.resolve_backend("auto") == ("faiss-cpu", "cpu")
    _machine(monkeypatch, (False, False), gpu=False)
    assert retrieval.resolve_backend("auto") == ("numpy", "cpu")
    _machine(monkeypatch, (False, False), gpu=True)
    assert retrieval.resolve_backend("auto") == ("torch", "cuda:0")
    with pytest.raises(ConfigError, match="needs FAISS"):
        retrieval.resolve_backend("faiss-cpu")


def test_auto_on_a_visible_gpu_prefers_torch_over_faiss_cpu(monkeypatch):
    """faiss-cpu would leave the GPU idle: on a GPU auto takes FAISS GPU, else torch on that GPU."""
    _machine(monkeypatch, (True, False), gpu=True)
    assert retrieval.resolve_backend("auto") == ("torch", "cuda:0")
    assert retrieval.resolve_backend("auto", "cuda:1") == ("torch", "cuda:1")
    assert retrieval.resolve_backend("faiss") == ("faiss-cpu", "cpu")
    _machine(monkeypatch, (True, True), gpu=True)
    assert retrieval.resolve_backend("auto") == ("faiss-gpu", "cuda:0")
    assert retrieval.resolve_backend("faiss-gpu", "cuda:1") == ("faiss-gpu", "cuda:1")


def test_the_evaluations_device_is_honoured(monkeypatch):
    """--device cpu keeps the search on the host although a GPU is visible; a GPU asked for where there is none
    is a ConfigError."""
    _machine(monkeypatch, (True, True), gpu=True)
    assert retrieval.resolve_backend("auto", "cpu") == ("faiss-cpu", "cpu")
    assert retrieval.resolve_backend("torch", "cpu") == ("torch", "cpu")
    with pytest.raises(ConfigError, match="cannot search on device 'cpu'"):
        retrieval.resolve_backend("faiss-gpu", "cpu")
    _machine(monkeypatch, (False, False), gpu=True)
    assert retrieval.resolve_backend("auto", "cpu") == ("numpy", "cpu")
    _machine(monkeypatch, (False, False), gpu=False)
    with pytest.raises(ConfigError, match="CUDA is not available"):
        retrieval.resolve_backend("auto", "cuda")


def test_torch_device_checks_the_search_device_here():
    assert retrieval._torch_device("cpu") == "cpu"
    with pytest.raises(ConfigError, match="expected cpu, cuda or cuda:N"):
        retrieval._torch_device("mps")
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="CUDA is not available"):
            retrieval._torch_device("cuda:0")


def test_faiss_gpu_index_goes_to_the_search_device(monkeypatch, integer_vectors):
    """index_cpu_to_gpu gets the ordinal of the search device, not always GPU 0 (a stand-in FAISS records it)."""
    import sys
    import types

    import faiss

    asked = []
    fake = types.SimpleNamespace(
        StandardGpuResources=lambda: "resources", IndexFlatIP=faiss.IndexFlatIP,
        index_cpu_to_gpu=lambda res, dev, index: asked.append(dev) or index)
    monkeypatch.setitem(sys.modules, "faiss", fake)
    queries, corpus = integer_vectors
    _, idx = retrieval._propose_faiss(queries, corpus, 5, SearchOptions(shard_rows=1000), gpu=True, device="cuda:1")
    assert asked == [1, 1] and idx.shape == (len(queries), 5)


@pytest.fixture(scope="module")
def anisotropic():
    """Unit vectors around one direction (mean cosine ~0.9, an untuned BERT's anisotropy): k-th scores crowd."""
    rng = np.random.default_rng(5)
    d = 64
    base = rng.standard_normal(d)
    base /= np.linalg.norm(base)

    def unit(n):
        x = rng.standard_normal((n, d)) / np.sqrt(d) + 3.0 * base
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    return unit(60), unit(6000)


def test_the_rounding_bound_covers_float32_inner_products(anisotropic):
    """Half the bound (one computation's share) is at least Higham's gamma_d, and above every measured float32
    error |fl32(q.c) - q.c| / (|q||c|) on the anisotropic set."""
    queries, corpus = anisotropic
    d = queries.shape[1]
    u = 2.0**-24
    assert retrieval.rounding_bound(d) / 2 >= d * u / (1 - d * u)
    err = np.abs((queries @ corpus.T).astype(np.float64) - queries.astype(np.float64) @ corpus.astype(np.float64).T)
    assert err.max() <= retrieval.rounding_bound(d) / 2
    assert retrieval.rounding_bound(768) == pytest.approx(2 * 768 * np.finfo(np.float32).eps)
    assert retrieval.rounding_bound(768) < 2e-4  # the old GPU tolerance was 1e-3: 5x wider


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_unsure_rows_are_settled_in_one_batch_and_equal_brute_force(backend, anisotropic, monkeypatch):
    """Crowded k-th scores with a margin of 1 leave rows unsure; they are gathered in one batched pass (not one
    corpus scan per row) and the answer is the float64 brute force, for every backend."""
    queries, corpus = anisotropic
    calls = []
    real = retrieval._gather_near_numpy

    def spy(q, c, thresholds, options):
        calls.append(len(q))
        return real(q, c, thresholds, options)

    monkeypatch.setattr(retrieval, "_gather_near_numpy", spy)
    result = search_inner_product(queries, corpus, 20, backend=backend, options=SearchOptions(margin=1),
                                  device="cpu")
    ref_scores, ref_idx = brute_force(queries, corpus, 20)
    np.testing.assert_array_equal(result.indices, ref_idx)
    assert result.unsure_rows > 0 and calls == [result.unsure_rows]


def test_gathering_on_torch_equals_numpy(anisotropic):
    """The device gathering (torch, here on the CPU) returns the same near sets as numpy, across shards."""
    queries, corpus = anisotropic
    thresholds = np.sort(queries @ corpus.T, axis=1)[:, -30].astype(np.float32) - 1e-4
    options = SearchOptions(memory_mb=1, shard_rows=1700)
    ours = retrieval._gather_near_torch(queries, corpus, thresholds, options, "cpu")
    ref = retrieval._gather_near_numpy(queries, corpus, thresholds, options)
    assert [a.tolist() for a in ours] == [b.tolist() for b in ref]
    assert all(len(a) >= 30 for a in ours)


def test_search_matmuls_run_at_full_fp32_and_restore_the_callers_setting():
    import torch

    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")  # TF32 allowed by the caller
    try:
        with retrieval.full_fp32_matmuls():
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(before)


@pytest.mark.gpu
def test_torch_on_cuda_settles_anisotropic_rows_on_the_gpu_like_numpy(anisotropic, monkeypatch):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    queries, corpus = anisotropic
    ref = search_inner_product(queries, corpus, 20, backend="numpy", options=SearchOptions(margin=1), device="cpu")
    monkeypatch.setattr(retrieval, "_gather_near_numpy", None)  # from here the host path must not run
    result = search_inner_product(queries, corpus, 20, backend="torch", options=SearchOptions(margin=1),
                                  device="cuda")
    assert result.device == "cuda:0" and result.unsure_rows > 0
    np.testing.assert_array_equal(result.indices, ref.indices)
    np.testing.assert_array_equal(result.scores, ref.scores)


def test_unknown_or_unavailable_backend_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown search backend"):
        retrieval.resolve_backend("annoy")
    if not retrieval.faiss_status()[1]:
        with pytest.raises(ConfigError, match="GPU"):
            retrieval.resolve_backend("faiss-gpu")


def test_dense_scorer_records_backend_and_device():
    from usebench.eval.scorer import DenseScorer

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
