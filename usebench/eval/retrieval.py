"""Exact top-k inner-product search: FAISS ``IndexFlatIP`` (GPU or CPU), torch, or numpy, all with the same answer.

Backends:
- ``faiss-gpu``: FAISS flat index on a GPU (needs a FAISS GPU build and a visible GPU);
- ``faiss-cpu``: FAISS flat index on the CPU (BLAS);
- ``torch``: chunked matmul + ``torch.topk`` on the search device (a GPU when one is visible, else the CPU);
- ``numpy``: chunked matmul + a partition-based top-k (always available).
``auto`` picks, on a GPU: FAISS GPU, else torch (faiss-cpu would leave the GPU idle); on the CPU: faiss-cpu, else
numpy. ``device`` (the evaluation's ``--device``) says where to search: ``cpu`` keeps every backend on the host,
``cuda:N`` uses that GPU; None means this machine's first GPU when there is one.

Every backend returns the same top-k. Backends differ in summation order, so their float32 scores differ in the
last bits and their orders of (near-)ties differ, FAISS's order of exact ties being unspecified. So each backend
only proposes ``k + margin`` candidates; the candidates are re-scored once in float64 with the same arithmetic
for every backend and sorted by (score descending, corpus index ascending). When the margin cannot prove that
no better item was left out (the margin's last float32 score within the rounding bound of the k-th), the row is
"unsure": every corpus item whose float32 score is within that bound of the k-th is gathered, batched over the
unsure rows, on the search device, and re-scored in float64 like the candidates. The bound is Higham's for a
float32 dot product of length d in any summation order, with or without FMA, |fl(q.c) - q.c| <= gamma_d |q||c|,
gamma_d = d u / (1 - d u), u = 2^-24; float32 matmuls run at full precision during the search (TF32 off), so the
bound holds on a GPU as on the CPU. Memory stays bounded: queries are processed in chunks, the corpus in shards.
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import numpy as np

from usebench.errors import ConfigError

Backend = Literal["auto", "numpy", "torch", "faiss", "faiss-cpu", "faiss-gpu"]
BACKENDS: tuple[str, ...] = ("auto", "numpy", "torch", "faiss", "faiss-cpu", "faiss-gpu")
EPS32 = float(np.finfo(np.float32).eps)
FAISS_GPU_MAX_K = 2048  # largest k FAISS GPU indexes accept


@dataclass(frozen=True)
class SearchResult:
    """Top-k of every query: scores (nq, k) float32 best first, corpus indices (nq, k) int64, and where it ran."""

    scores: np.ndarray
    indices: np.ndarray
    backend: str  # numpy | torch | faiss-cpu | faiss-gpu
    device: str  # cpu | cuda:N
    unsure_rows: int = 0  # rows the margin could not settle (gathered again near their k-th score)


@dataclass(frozen=True)
class SearchOptions:
    """Sizes that bound memory. ``memory_mb`` caps one (query chunk x corpus) score block on the host;
    ``shard_rows`` caps how many corpus rows one FAISS/torch index holds at a time; ``margin`` extra candidates
    (default 16 + k/10) let ties and float32 rounding be settled exactly afterwards."""

    memory_mb: int = 512
    shard_rows: int = 1_000_000
    margin: int | None = None


# --- exact top-k of a score matrix, ties broken by lower index ------------------------------------------------
def sort_rows(scores: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort every row by score descending, then index ascending."""
    order = np.lexsort((indices, -scores), axis=-1)
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(indices, order, axis=1)


def topk_rows(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of each row of a dense score matrix: scores best first, equal scores by lower column index.

    ``np.partition`` finds each row's k-th largest value in linear time (far faster than ``argpartition``);
    the row's top-k is then every value above it plus the lowest-indexed values equal to it, so the result
    never depends on the partition's internal order.
    """
    n, m = sims.shape
    k = min(k, m)
    indices = np.empty((n, k), np.int64)
    if k == 0:
        return np.zeros((n, 0), sims.dtype), indices
    kth = -np.partition(-sims, k - 1, axis=1)[:, k - 1]
    for r in range(n):
        better = np.flatnonzero(sims[r] > kth[r])
        indices[r, : len(better)] = better
        indices[r, len(better) :] = np.flatnonzero(sims[r] == kth[r])[: k - len(better)]
    return sort_rows(np.take_along_axis(sims, indices, axis=1), indices)


def topk_numpy(queries: np.ndarray, corpus: np.ndarray, k: int, chunk: int | None = None) -> SearchResult:
    """Brute-force exact search with numpy; ``chunk`` queries at a time (default: from the memory budget)."""
    return search_inner_product(queries, corpus, k, backend="numpy",
                                options=SearchOptions() if chunk is None else _options_for_chunk(chunk, corpus))


def _options_for_chunk(chunk: int, corpus: np.ndarray) -> SearchOptions:
    return SearchOptions(memory_mb=max(1, chunk * max(1, corpus.shape[0]) * 4 // 2**20))


# --- backends: each proposes candidates (float32 scores, indices) of size k' per query ---------------------
Proposer = Callable[[np.ndarray, np.ndarray, int, SearchOptions], tuple[np.ndarray, np.ndarray]]


def _query_chunk(n_corpus: int, options: SearchOptions) -> int:
    return max(1, options.memory_mb * 2**20 // (4 * max(1, n_corpus)))


def _propose_numpy(queries: np.ndarray, corpus: np.ndarray, kp: int, options: SearchOptions):
    chunk = _query_chunk(corpus.shape[0], options)
    scores = np.empty((queries.shape[0], kp), np.float32)
    indices = np.empty((queries.shape[0], kp), np.int64)
    for s in range(0, queries.shape[0], chunk):
        scores[s : s + chunk], indices[s : s + chunk] = topk_rows(queries[s : s + chunk] @ corpus.T, kp)
    return scores, indices


def _merge(best: tuple[np.ndarray, np.ndarray] | None, scores: np.ndarray, indices: np.ndarray, kp: int):
    """Keep the top ``kp`` of the running candidates and a new shard's (ties: lower index first)."""
    if best is not None:
        scores, indices = np.concatenate([best[0], scores], 1), np.concatenate([best[1], indices], 1)
    scores, indices = sort_rows(scores.astype(np.float32), indices.astype(np.int64))
    return scores[:, :kp], indices[:, :kp]


def _sharded(search_shard: Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]], corpus: np.ndarray,
             kp: int, options: SearchOptions):
    """Run ``search_shard(shard, k)`` over corpus shards and merge the per-shard candidates."""
    best = None
    for start in range(0, corpus.shape[0], options.shard_rows):
        shard = corpus[start : start + options.shard_rows]
        scores, indices = search_shard(shard, min(kp, shard.shape[0]))
        best = _merge(best, scores, indices + start, kp)
    return best


def _propose_faiss(queries: np.ndarray, corpus: np.ndarray, kp: int, options: SearchOptions, gpu: bool,
                   device: str = "cpu"):
    import faiss

    resources = faiss.StandardGpuResources() if gpu else None
    chunk = max(1, _query_chunk(kp * 2, options))  # FAISS blocks its own work; chunk only bounds the outputs

    def search_shard(shard: np.ndarray, k: int):
        index = faiss.IndexFlatIP(shard.shape[1])
        if gpu:
            index = faiss.index_cpu_to_gpu(resources, _gpu_index(device), index)
        index.add(shard)
        out = [index.search(queries[s : s + chunk], k) for s in range(0, queries.shape[0], chunk)]
        index.reset()
        return np.concatenate([o[0] for o in out]), np.concatenate([o[1] for o in out])

    return _sharded(search_shard, corpus, kp, options)


def _gpu_index(device: str) -> int:
    """The ordinal of ``cuda:N`` (0 for ``cuda``)."""
    return int(device.split(":", 1)[1]) if ":" in device else 0


@contextmanager
def full_fp32_matmuls():
    """float32 matmuls at full precision (TF32 off) while searching: the rounding bound assumes float32 products
    (TF32 keeps 10 mantissa bits, an error ~1e-3 no float32 bound covers); the caller's setting is restored."""
    from usebench.fp32_policy import fp32_matmul_policy

    with fp32_matmul_policy(tf32=False):  # either of torch's precision APIs, the caller's restored
        yield


def _propose_torch(queries: np.ndarray, corpus: np.ndarray, kp: int, options: SearchOptions, device: str):
    import torch

    chunk = _query_chunk(min(corpus.shape[0], options.shard_rows), options)

    def search_shard(shard: np.ndarray, k: int):
        c = torch.from_numpy(shard).to(device)
        scores, indices = [], []
        for s in range(0, queries.shape[0], chunk):
            q = torch.from_numpy(queries[s : s + chunk]).to(device)
            top = torch.topk(q @ c.T, k, dim=1)
            scores.append(top.values.cpu().numpy())
            indices.append(top.indices.cpu().numpy())
        return np.concatenate(scores), np.concatenate(indices)

    with full_fp32_matmuls():
        return _sharded(search_shard, corpus, kp, options)


def faiss_status() -> tuple[bool, bool]:
    """(FAISS importable, FAISS GPU build with a visible GPU)."""
    try:
        import faiss
    except ImportError:
        return False, False
    return True, hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def _torch_device(device: str | None = None) -> str:
    """Where torch searches: ``device`` checked against this machine, else cuda:0 when visible, else cpu; "none"
    without torch."""
    try:
        import torch
    except ImportError:
        return "none"
    if device is None:
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    if dev.type == "cpu":
        return "cpu"
    if dev.type != "cuda":
        raise ConfigError(f"search device {device!r}: expected cpu, cuda or cuda:N")
    if not torch.cuda.is_available():
        raise ConfigError(f"search device {device!r}: CUDA is not available here; use --device cpu")
    index = dev.index or 0
    if index >= torch.cuda.device_count():
        raise ConfigError(f"search device {device!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return f"cuda:{index}"


def resolve_backend(backend: str, device: str | None = None) -> tuple[str, str]:
    """The concrete (backend, device) that ``backend`` runs on here, searching on ``device`` (None: this machine's
    first GPU when visible, else the CPU); an unavailable explicit choice is an error."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown search backend {backend!r} (known: {', '.join(BACKENDS)})")
    has_faiss, faiss_gpu = faiss_status()
    where = _torch_device(device)
    on_gpu = where.startswith("cuda")
    if device is not None and str(device).startswith("cuda") and where == "none":
        where, on_gpu = str(device) if ":" in str(device) else "cuda:0", True  # FAISS GPU without torch
    if backend == "auto":
        if on_gpu:
            if faiss_gpu:
                return "faiss-gpu", where
            if where != "none":
                return "torch", where
        return ("faiss-cpu", "cpu") if has_faiss else ("numpy", "cpu")
    if backend in ("faiss", "faiss-cpu", "faiss-gpu") and not has_faiss:
        raise ConfigError(f"search backend {backend!r} needs FAISS (pip install faiss-cpu or a FAISS GPU build)")
    if backend == "faiss":
        return ("faiss-gpu", where) if faiss_gpu and on_gpu else ("faiss-cpu", "cpu")
    if backend == "faiss-gpu":
        if not faiss_gpu:
            raise ConfigError("search backend 'faiss-gpu' needs a FAISS GPU build and a visible GPU")
        if not on_gpu:
            raise ConfigError(f"search backend 'faiss-gpu' cannot search on device {device!r}")
        return "faiss-gpu", where
    if backend == "torch":
        if where == "none":
            raise ConfigError("search backend 'torch' needs torch installed")
        return "torch", where
    return backend, "cpu"


# --- exact settlement of the candidates ------------------------------------------------------------------
def exact_scores(queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """float64 inner products of query b with rows[b, j] -> (b, j); the same arithmetic for every backend."""
    return (rows.astype(np.float64) * queries.astype(np.float64)[:, None, :]).sum(axis=-1)


def rounding_bound(dim: int) -> float:
    """Relative bound on a float32 inner product's error, times two (the proposal's and the gathering's rounding
    both count): ``2 * d * eps32`` = 4 d u >= 2 gamma_d (Higham, Accuracy and Stability of Numerical Algorithms,
    2002, eq. 3.5: |fl(x.y) - x.y| <= gamma_d |x|.|y| for any summation order), at least 1e-5 for tiny d."""
    return max(1e-5, 2 * dim * EPS32)


def unsure_rows(cand32: np.ndarray, k: int, tol: np.ndarray) -> np.ndarray:
    """Rows whose margin cannot prove the top-k: the last candidate's float32 score is within ``tol`` of the
    k-th's, so an item left out could belong to the top-k."""
    kp = cand32.shape[1]
    return np.flatnonzero(cand32[:, kp - 1] >= cand32[:, k - 1] - tol)


def _gather_near_numpy(queries: np.ndarray, corpus: np.ndarray, thresholds: np.ndarray,
                       options: SearchOptions) -> list[np.ndarray]:
    """Per query, every corpus index whose float32 score is >= its threshold (batched host matmuls)."""
    chunk = _query_chunk(corpus.shape[0], options)
    near: list[np.ndarray] = []
    for s in range(0, queries.shape[0], chunk):
        block = queries[s : s + chunk] @ corpus.T
        hits = block >= thresholds[s : s + chunk, None]
        near.extend(np.flatnonzero(row) for row in hits)
    return near


def _gather_near_torch(queries: np.ndarray, corpus: np.ndarray, thresholds: np.ndarray, options: SearchOptions,
                       device: str) -> list[np.ndarray]:
    """:func:`_gather_near_numpy` on ``device``: a batch of rows against each corpus shard at a time; only the
    (row, index) pairs over the threshold come back to the host."""
    import torch

    chunk = _query_chunk(min(corpus.shape[0], options.shard_rows), options)
    parts: list[list[np.ndarray]] = [[] for _ in range(queries.shape[0])]
    thr32 = thresholds.astype(np.float32)  # rounded down where float32 rounding went up: never gather less
    thr32 = np.where(thr32 > thresholds, np.nextafter(thr32, np.float32(-np.inf)), thr32).astype(np.float32)
    thr = torch.from_numpy(thr32).to(device)
    with full_fp32_matmuls():
        for start in range(0, corpus.shape[0], options.shard_rows):
            c = torch.from_numpy(corpus[start : start + options.shard_rows]).to(device)
            for s in range(0, queries.shape[0], chunk):
                q = torch.from_numpy(queries[s : s + chunk]).to(device)
                rows, cols = torch.nonzero(q @ c.T >= thr[s : s + chunk, None], as_tuple=True)
                rows, cols = rows.cpu().numpy(), cols.cpu().numpy() + start
                bounds = np.searchsorted(rows, np.arange(q.shape[0] + 1))  # nonzero is row-major: rows sorted
                for r in range(q.shape[0]):
                    parts[s + r].append(cols[bounds[r] : bounds[r + 1]])
    return [np.concatenate(p).astype(np.int64) if p else np.zeros(0, np.int64) for p in parts]


def _settle(queries: np.ndarray, corpus: np.ndarray, cand: np.ndarray, cand32: np.ndarray, k: int,
            tol: np.ndarray, device: str = "cpu", options: SearchOptions | None = None
            ) -> tuple[np.ndarray, np.ndarray, int]:
    """Final top-k from float32 candidates: re-score in float64, re-sort; the rows the margin can't settle gather
    every item near their k-th score on ``device`` (batched) and are re-scored the same way. Returns (scores,
    indices, number of unsure rows)."""
    options = options or SearchOptions()
    nq, kp = cand.shape
    scores = np.empty((nq, k), np.float64)
    indices = np.empty((nq, k), np.int64)
    step = max(1, (64 * 2**20) // max(1, kp * corpus.shape[1] * 8))  # bound the gathered float64 block
    for s in range(0, nq, step):
        e = min(nq, s + step)
        exact = exact_scores(queries[s:e], corpus[cand[s:e]])
        top, idx = sort_rows(exact, cand[s:e])
        scores[s:e], indices[s:e] = top[:, :k], idx[:, :k]
    if kp >= corpus.shape[0]:
        return scores, indices, 0
    # An item left out has float32 score <= the last candidate's. If that is within tol of the k-th candidate's,
    # rounding or a wide tie group could hide a better item: gather everything within tol of the k-th.
    unsure = unsure_rows(cand32, k, tol)
    if len(unsure) == 0:
        return scores, indices, 0
    thresholds = cand32[unsure, k - 1] - tol[unsure]
    if device.startswith("cuda"):
        near = _gather_near_torch(queries[unsure], corpus, thresholds, options, device)
    else:
        near = _gather_near_numpy(queries[unsure], corpus, thresholds, options)
    for r, items in zip(unsure, near):
        exact = exact_scores(queries[r : r + 1], corpus[items][None])
        top, idx = sort_rows(exact, items[None])
        scores[r], indices[r] = top[0, :k], idx[0, :k]
    return scores, indices, len(unsure)


def search_inner_product(queries: np.ndarray, corpus: np.ndarray, k: int, backend: str = "auto",
                         options: SearchOptions | None = None, device: str | None = None) -> SearchResult:
    """Top-k corpus rows by inner product for every query; identical for every backend and device (ties: lower
    index). ``device``: where to search (the evaluation's ``--device``; None: a visible GPU, else the CPU)."""
    options = options or SearchOptions()
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    corpus = np.ascontiguousarray(corpus, dtype=np.float32)
    name, device = resolve_backend(backend, device)
    if queries.ndim != 2 or corpus.ndim != 2 or queries.shape[1] != corpus.shape[1]:
        raise ValueError(f"queries {queries.shape} and corpus {corpus.shape} must be 2-d with the same width")
    k = min(k, corpus.shape[0])
    if k <= 0 or queries.shape[0] == 0:
        empty = np.zeros((queries.shape[0], max(k, 0)))
        return SearchResult(empty.astype(np.float32), empty.astype(np.int64), name, device)
    margin = options.margin if options.margin is not None else 16 + k // 10
    kp = min(corpus.shape[0], k + margin)
    if name == "faiss-gpu" and kp > FAISS_GPU_MAX_K:
        if backend == "faiss-gpu":
            raise ConfigError(f"faiss-gpu searches at most k={FAISS_GPU_MAX_K} (with margin), asked {kp}")
        name, device = "faiss-cpu", "cpu"  # FAISS's GPU k-selection is capped; the CPU index is not
    if name == "numpy":
        cand32, cand = _propose_numpy(queries, corpus, kp, options)
    elif name == "torch":
        cand32, cand = _propose_torch(queries, corpus, kp, options, device)
    else:
        cand32, cand = _propose_faiss(queries, corpus, kp, options, gpu=name == "faiss-gpu", device=device)
    unit = np.linalg.norm(queries, axis=1) * float(np.linalg.norm(corpus, axis=1).max())
    tol = unit * rounding_bound(queries.shape[1])
    settle_on = device if device.startswith("cuda") and _torch_device() != "none" else "cpu"
    scores, indices, n_unsure = _settle(queries, corpus, cand, cand32, k, tol, settle_on, options)
    return SearchResult(scores.astype(np.float32), indices, name, device, n_unsure)
