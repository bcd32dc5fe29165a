"""Retrieval at Quora's scale: encode throughput, exact top-k search time and peak memory, one run.

    python scripts/bench_retrieval.py                        # 522,931 documents, 1,000 queries, top-100
    python scripts/bench_retrieval.py --queries 10000 --naive --encode-sample 5000

Quora (BEIR) has 522,931 documents of 11.44 words on average and 10,000 test queries of 9.53 words
(``papers/004``, Table 4.5). Where Quora's files are absent (here) the corpus is synthetic: that many documents,
word counts drawn from a negative binomial with Quora's mean (its spread, sd about 6 words, is an assumption:
the table gives means only), words drawn Zipf-like from the model's vocabulary.

- **encode**: the suite's ``HFEncoder`` (length-sorted batches) on ``--encode-sample`` documents and queries;
  documents/s, and the whole corpus' time extrapolated from it (on a 2-core machine encoding 522,931 documents
  takes most of an hour, so only the sample is encoded; the line says so).
- **search**: exact top-``k`` for ``--queries`` queries over ``--n`` corpus vectors (unit vectors of the
  model's width: search time and memory do not depend on the values) with the suite's
  ``search_inner_product`` on each available backend (numpy, torch and FAISS on the CPU; torch and FAISS GPU on
  ``--device cuda``), BEIR's ``DenseRetrievalExactSearch`` on the same embeddings (its encoder replaced by a
  look-up) when beir is installed, and optionally a naive full-matrix numpy search. Each CPU search runs in a
  forked child process: wall and CPU seconds, and its peak memory above what the parent already held (the corpus
  and queries), from the child's ``VmHWM``; each GPU search runs in this process (CUDA does not survive a fork)
  and reports its peak GPU memory instead. Backends' top-k sets are compared with numpy's. Neither beir nor
  faiss is needed: what is missing is skipped and said so.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
from collections.abc import Callable

import numpy as np

QUORA_DOCS, QUORA_QUERIES, DOC_WORDS, QUERY_WORDS = 522_931, 10_000, 11.44, 9.53


def synthetic_texts(n: int, mean_words: float, vocab: list[str], rng: np.random.Generator) -> list[str]:
    """``n`` texts: 1 + NegBin(r=4) words (mean ``mean_words``, sd ~ 6 at Quora's mean), Zipf-like words."""
    r = 4.0
    p = r / (r + mean_words - 1)
    lengths = 1 + rng.negative_binomial(r, p, n)
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    words = rng.choice(len(vocab), size=int(lengths.sum()), p=weights / weights.sum())
    cuts = np.cumsum(lengths)[:-1]
    return [" ".join(vocab[w] for w in chunk) for chunk in np.split(words, cuts)]


def word_vocab(tokenizer) -> list[str]:
    """Whole alphabetic words of a WordPiece vocabulary, in id order (frequent words first in BERT's)."""
    return [w for w, _ in sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1]) if w.isalpha() and w.islower()]


def _status_kb(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _child(fn: Callable[[], np.ndarray], threads: int, conn) -> None:
    if threads:
        import torch

        torch.set_num_threads(threads)
        try:
            import faiss

            faiss.omp_set_num_threads(threads)
        except ImportError:
            pass
    base = _status_kb("VmRSS")  # after fork the high-water mark starts at the inherited resident size
    t0, c0 = time.perf_counter(), time.process_time()
    indices = fn()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    conn.send((wall, cpu, (_status_kb("VmHWM") - base) / 1024, indices))
    conn.close()


def measured(fn: Callable[[], np.ndarray], threads: int) -> tuple[float, float, float, np.ndarray]:
    """(wall s, CPU s, peak MB above the parent's memory, top-k indices) of ``fn`` in a forked child."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn, threads, child))
    proc.start()
    out = parent.recv()
    proc.join()
    return out


def naive(queries: np.ndarray, corpus: np.ndarray, k: int) -> np.ndarray:
    """The full score matrix at once, then a top-k per row (as written without a library)."""
    sims = queries @ corpus.T
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def suite(backend: str, queries: np.ndarray, corpus: np.ndarray, k: int, device: str = "cpu"
          ) -> Callable[[], np.ndarray]:
    from usebench.eval.retrieval import search_inner_product

    return lambda: search_inner_product(queries, corpus, k, backend=backend, device=device).indices


def on_gpu(fn: Callable[[], np.ndarray]) -> tuple[float, float, float, np.ndarray]:
    """(wall s, CPU s, peak GPU MB, top-k indices) of ``fn`` run in this process."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0, c0 = time.perf_counter(), time.process_time()
    indices = fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0, time.process_time() - c0, torch.cuda.max_memory_allocated() / 2**20, indices


def available(module: str) -> bool:
    """Whether ``module`` imports here (beir and faiss are optional)."""
    import importlib.util

    return importlib.util.find_spec(module) is not None


def beir_exact(queries: np.ndarray, corpus: np.ndarray, texts: list[str], k: int) -> Callable[[], np.ndarray]:
    """BEIR's DenseRetrievalExactSearch (dot product) with the encoder replaced by a look-up of ``corpus`` rows;
    the documents keep their texts (BEIR sorts them by length). Returns top-k row indices by score."""
    docs = {f"d{i}": {"title": "", "text": t, "row": i} for i, t in enumerate(texts)}

    class Lookup:
        def encode_queries(self, qs, **kw):
            import torch

            return torch.from_numpy(queries)

        def encode_corpus(self, chunk, **kw):
            import torch

            return torch.from_numpy(corpus[[d["row"] for d in chunk]])

    def run() -> np.ndarray:
        from beir.retrieval.search.dense import DenseRetrievalExactSearch

        search = DenseRetrievalExactSearch(Lookup(), batch_size=128, corpus_chunk_size=50_000, show_progress_bar=False)
        results = search.search(docs, {f"q{i}": "" for i in range(len(queries))}, k, "dot")
        out = np.full((len(queries), k), -1, np.int64)
        for i in range(len(queries)):
            ranked = sorted(results[f"q{i}"].items(), key=lambda kv: -kv[1])[:k]
            out[i, : len(ranked)] = [int(d[1:]) for d, _ in ranked]
        return out

    return run


def encode_rate(model: str, texts: list[str], batch_size: int, device: str = "cpu") -> tuple[float, float]:
    """Texts per wall second and per CPU second of the suite's encoder on ``device`` (after one warm-up batch)."""
    from usebench.eval.encoder import HFEncoder

    enc = HFEncoder(model, batch_size=batch_size, device=device, show_progress=False)
    enc.encode(texts[:batch_size])
    t0, c0 = time.perf_counter(), time.process_time()
    enc.encode(texts)
    return len(texts) / (time.perf_counter() - t0), len(texts) / (time.process_time() - c0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=QUORA_DOCS, help="corpus documents (default: Quora's)")
    parser.add_argument("--queries", type=int, default=1000, help=f"search queries (Quora test: {QUORA_QUERIES:,})")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--encode-sample", type=int, default=2000, help="documents (and queries) actually encoded")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--naive", action="store_true", help="also the full-matrix numpy search (queries x n floats)")
    parser.add_argument("--threads", type=int, default=0, help="torch/FAISS threads in the search (0: default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda[:N]: GPU searches and GPU encoding too")
    args = parser.parse_args()
    from transformers import AutoConfig, AutoTokenizer

    from usebench.eval.models import resolve_model
    from usebench.eval.retrieval import resolve_backend

    path = resolve_model(args.model).path
    dim = int(AutoConfig.from_pretrained(path).hidden_size)
    rng = np.random.default_rng(args.seed)
    vocab = word_vocab(AutoTokenizer.from_pretrained(path))
    t0 = time.perf_counter()
    docs = synthetic_texts(args.n, DOC_WORDS, vocab, rng)
    query_texts = synthetic_texts(max(args.queries, args.encode_sample), QUERY_WORDS, vocab, rng)
    lengths = np.array([len(d.split()) for d in docs])
    print(f"synthetic corpus: {args.n:,} documents, {lengths.mean():.2f} words on average (sd {lengths.std():.1f}, "
          f"max {lengths.max()}), made in {time.perf_counter() - t0:.1f} s; {args.queries:,} queries; top-{args.k}; "
          f"auto backend here: {'/'.join(resolve_backend('auto', args.device))}; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")
    corpus = rng.standard_normal((args.n, dim), dtype=np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    queries = rng.standard_normal((args.queries, dim), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    from usebench.eval.retrieval import faiss_status

    has_faiss, faiss_gpu = faiss_status() if available("faiss") else (False, False)
    cpu_backends = ["numpy", "torch"] + (["faiss-cpu"] if has_faiss else [])
    runs = {f"suite {b}": suite(b, queries, corpus, args.k) for b in cpu_backends}
    if available("beir"):
        runs["BEIR DenseRetrievalExactSearch"] = beir_exact(queries, corpus, docs, args.k)
    if args.naive:
        runs["naive numpy (full matrix)"] = lambda: naive(queries, corpus, args.k)
    gpu_runs = {}
    if args.device.startswith("cuda"):
        gpu_runs = {f"suite {b} {args.device}": suite(b, queries, corpus, args.k, args.device)
                    for b in ["torch"] + (["faiss-gpu"] if faiss_gpu else [])}
    skipped = [name for name, ok in (("faiss (pip install faiss-cpu)", has_faiss),
                                     ("BEIR (pip install -e '.[beir]')", available("beir"))) if not ok]
    print(f"\nsearch: {args.queries:,} queries x {args.n:,} vectors of {dim} (corpus {corpus.nbytes / 2**20:.0f} MB, "
          f"held by the parent), each CPU search in a forked child, GPU searches in this process (peak GPU MB)"
          + (f"; not installed, skipped: {', '.join(skipped)}" if skipped else ""))
    print(f"{'search':34s} {'seconds':>8s} {'cpu s':>7s} {'queries/s':>10s} {'peak MB':>8s} {'same top-k':>11s}")
    if "BEIR DenseRetrievalExactSearch" in runs:
        import beir.retrieval.search.dense  # noqa: F401  imported here, so no child counts import-time memory
    if has_faiss:
        import faiss  # noqa: F401
    import torch  # noqa: F401

    reference = None
    for name, fn in [*runs.items(), *gpu_runs.items()]:  # forks first: no CUDA context or OpenMP pool to inherit
        wall, cpu, peak, indices = on_gpu(fn) if name in gpu_runs else measured(fn, args.threads)
        reference = indices if reference is None else reference
        same = np.mean([set(a) == set(b) for a, b in zip(indices, reference)])
        print(f"{name:34s} {wall:8.2f} {cpu:7.1f} {args.queries / wall:10.1f} {peak:8.0f} {same:10.1%}", flush=True)
    print(f"\nencode ({args.model}, fp32, batch {args.batch_size}, {args.device}, {_threads()} torch threads): "
          f"a sample of "
          f"{args.encode_sample:,} documents and {args.encode_sample:,} queries, extrapolated")
    for name, texts, total in (("documents", docs, args.n), ("queries", query_texts, QUORA_QUERIES)):
        sample = [texts[i] for i in rng.choice(len(texts), min(args.encode_sample, len(texts)), replace=False)]
        rate, cpu_rate = encode_rate(args.model, sample, args.batch_size, args.device)
        print(f"  {name:10s} {rate:8.1f}/s ({cpu_rate:.1f} per CPU second) -> {total:,} {name} in about "
              f"{total / rate / 60:.1f} min (extrapolated from the sample)")


def _threads() -> int:
    import torch

    return torch.get_num_threads()


if __name__ == "__main__":
    main()
