"""Throughput of BM25 indexing and querying: bm25s (and our BM25Scorer on it) vs rank_bm25, on the same corpus.

    python scripts/bench_bm25.py [--data-root $BENCH_DATA] [--queries 1000] [--slow-queries 200] [--k 100]

The corpus is every unique sentence of TwitterPara and the STS sets under the data root (or, without real data,
a synthetic Zipf-distributed corpus of --synthetic documents); the queries are the first --queries documents.
All engines get the same pre-tokenised corpus (Elasticsearch preset analyzer), so the timings compare indexing
and scoring, not tokenisation (timed separately). rank_bm25 is ``BM25Okapi`` (``get_scores`` per query, then a
top-k); being ~100x slower per query, it is timed on the first --slow-queries queries only (a rate either way).
Output: one table of docs/s and queries/s, the ratios to rank_bm25, and the end-to-end time to index the corpus
and answer all --queries (and its ratio), all from this one run.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np


def real_corpus(data_root: Path) -> list[str]:
    """Unique sentences of TwitterPara and the seven STS test sets (whatever of them is present)."""
    from usebench import tasks  # noqa: F401
    from usebench.errors import BenchError
    from usebench.registry import TASKS

    texts: dict[str, None] = {}
    for name in ("twitterpara", "sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr"):
        task = TASKS.get(name)
        try:
            texts.update(dict.fromkeys(task.texts(task.load("test", data_root))))
        except BenchError:
            continue
    return list(texts)


def synthetic_corpus(n: int, seed: int = 0) -> list[str]:
    """n documents of 5-30 words drawn from a Zipf vocabulary of 50K words."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 31, n)
    words = rng.zipf(1.2, lengths.sum()) % 50_000
    out, start = [], 0
    for length in lengths:
        out.append(" ".join(f"w{w}" for w in words[start : start + length]))
        start += length
    return out


def best_of(repeat: int, fn) -> tuple[float, object]:
    """Fastest of ``repeat`` runs (seconds) and the last result."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def run_bm25s(tokens, queries, k):
    import bm25s

    def index():
        model = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        model.index(tokens, show_progress=False)
        return model

    def query(model):
        return model.retrieve(queries, k=k, show_progress=False, n_threads=1)

    return index, query


def run_scorer(texts, query_texts, k):
    from usebench.eval.bm25 import BM25Index, BM25Scorer

    scorer = BM25Scorer("elasticsearch")
    tokens = [scorer.analyzer(t) for t in texts]

    def index():
        built = BM25Index.build(tokens, scorer.config)
        return built, built.weights.tocsc()

    def query(built):
        # hand the scorer the index built above (search() would otherwise rebuild it, tokenising again)
        scorer._search_key = (len(texts), hash(tuple(texts)))
        scorer._search_index, scorer._search_columns = built
        return scorer.search(query_texts, texts, k)

    return index, query


def run_rank_bm25(tokens, queries, k):
    from rank_bm25 import BM25Okapi

    def index():
        return BM25Okapi(tokens, k1=1.2, b=0.75)

    def query(model):
        out = []
        for q in queries:
            scores = model.get_scores(q)
            top = np.argpartition(-scores, min(k, len(scores) - 1))[:k]
            out.append(top[np.argsort(-scores[top], kind="stable")])
        return out

    return index, query


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, default=Path(os.environ.get("BENCH_DATA", "")))
    parser.add_argument("--synthetic", type=int, default=50_000, help="documents when no real data is found")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--slow-queries", type=int, default=200, help="queries timed for rank_bm25")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from usebench.eval.bm25 import PRESETS, Analyzer

    texts = real_corpus(args.data_root) if str(args.data_root) and args.data_root.is_dir() else []
    source = f"real sentences under {args.data_root}" if texts else f"synthetic Zipf corpus ({args.synthetic} docs)"
    texts = texts or synthetic_corpus(args.synthetic)
    analyzer = Analyzer(PRESETS["elasticsearch"])
    t_tok, tokens = best_of(1, lambda: [analyzer(t) for t in texts])
    query_texts = texts[: args.queries]
    queries = tokens[: args.queries]
    print(f"corpus: {len(texts)} docs ({source}); {len(queries)} queries; top-{args.k}; best of {args.repeat}")
    print(f"tokenisation (shared, not in the timings below): {len(texts) / t_tok:,.0f} docs/s")

    engines = {"bm25s (retrieve)": run_bm25s(tokens, queries, args.k),
               "BM25Scorer (bm25s + sparse top-k)": run_scorer(texts, query_texts, args.k),
               "rank_bm25 BM25Okapi": run_rank_bm25(tokens, queries[: args.slow_queries], args.k)}
    rows = {}
    for name, (index, query) in engines.items():
        n_queries = min(len(queries), args.slow_queries) if name.startswith("rank_bm25") else len(queries)
        t_index, built = best_of(args.repeat, index)
        t_query, _ = best_of(args.repeat, lambda query=query, built=built: query(built))
        rows[name] = (len(texts) / t_index, n_queries / t_query)
    base = rows["rank_bm25 BM25Okapi"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    # end to end: index the corpus once, then answer all the queries (from the measured rates)
    total = {name: len(texts) / d + len(queries) / q for name, (d, q) in rows.items()}
    print(f"{'engine':38s} {'index docs/s':>13s} {'queries/s':>10s} {'index x':>8s} {'query x':>8s} "
          f"{'index+queries s':>16s} {'end-to-end x':>13s}")
    for name, (docs_s, q_s) in rows.items():
        print(f"{name:38s} {docs_s:13,.0f} {q_s:10,.1f} {docs_s / base[0]:8.2f} {q_s / base[1]:8.1f} "
              f"{total[name]:16.2f} {total['rank_bm25 BM25Okapi'] / total[name]:13.1f}")


if __name__ == "__main__":
    main()
