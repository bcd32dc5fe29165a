"""Exact top-k search: FAISS IndexFlatIP vs a naive full-matrix numpy search, on random unit vectors.

    python scripts/bench_retrieval.py [--n 500000] [--d 384] [--queries 1000] [--k 100] [--repeat 2]

Naive = one ``queries @ corpus.T`` score matrix (n_queries x n floats) and ``argpartition`` + ``argsort`` on it,
as one would write it without a library. Also timed: FAISS directly, and the suite's ``search_inner_product``
(chunked, FAISS or numpy proposals plus the exact float64 settlement that makes backends agree). Memory: the
corpus takes n*d*4 bytes (768 MB at the defaults) and the naive search another n_queries*n*12 bytes (6 GB at the
defaults): use --n to run it smaller. Output: wall seconds (best of --repeat), the CPU seconds of that run (all
threads; steadier than wall time on a shared machine), queries/s and the speed-up over naive, one run.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def naive(queries: np.ndarray, corpus: np.ndarray, k: int) -> np.ndarray:
    """The full score matrix at once, then a top-k per row."""
    sims = queries @ corpus.T
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def faiss_flat(queries: np.ndarray, corpus: np.ndarray, k: int) -> np.ndarray:
    import faiss

    index = faiss.IndexFlatIP(corpus.shape[1])
    index.add(corpus)
    return index.search(queries, k)[1]


def suite(backend: str):
    from benchmark.eval.retrieval import search_inner_product

    return lambda q, c, k: search_inner_product(q, c, k, backend=backend).indices


def timed(fn, repeat: int):
    """Best wall seconds, the CPU seconds (all threads) of that run, and the result."""
    best, cpu, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall = time.perf_counter() - t0
        if wall < best:
            best, cpu = wall, time.process_time() - c0
    return best, cpu, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=500_000, help="corpus vectors")
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="FAISS OpenMP threads (0: FAISS's default)")
    args = parser.parse_args()

    import faiss

    if args.threads:
        faiss.omp_set_num_threads(args.threads)

    from benchmark.eval.retrieval import resolve_backend

    rng = np.random.default_rng(args.seed)
    corpus = rng.standard_normal((args.n, args.d), dtype=np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    queries = rng.standard_normal((args.queries, args.d), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    print(f"corpus {args.n} x {args.d}, {args.queries} queries, top-{args.k}, best of {args.repeat}; "
          f"faiss {faiss.__version__} ({faiss.omp_get_max_threads()} threads); auto backend here: "
          f"{'/'.join(resolve_backend('auto'))}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    methods = {
        "naive numpy (full matrix)": lambda: naive(queries, corpus, args.k),
        "faiss IndexFlatIP (cpu)": lambda: faiss_flat(queries, corpus, args.k),
        "suite search, faiss-cpu": lambda: suite("faiss-cpu")(queries, corpus, args.k),
        "suite search, numpy chunked": lambda: suite("numpy")(queries, corpus, args.k),
    }
    results = {name: timed(fn, args.repeat) for name, fn in methods.items()}
    reference = results["naive numpy (full matrix)"]
    print(f"{'method':32s} {'seconds':>9s} {'cpu s':>8s} {'queries/s':>10s} {'speed-up':>9s} {'same top-k':>11s}")
    for name, (seconds, cpu, indices) in results.items():
        same = np.mean([set(a) == set(b) for a, b in zip(indices, reference[2])])
        print(f"{name:32s} {seconds:9.2f} {cpu:8.1f} {args.queries / seconds:10.1f} {reference[0] / seconds:9.2f} "
              f"{same:10.1%}")


if __name__ == "__main__":
    main()
