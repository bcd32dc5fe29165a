"""BM25 on TwitterPara: bm25-pyserini (Lucene through Pyserini) vs our bm25s presets `anserini` and `elasticsearch`.

    python scripts/bench_bm25_lucene.py [--data-root $BENCH_DATA] [--k 10]

Needs the `pyserini` extra and the TwitterPara files. In one run, for each scorer:
1. the TwitterPara evaluation through the engine (each dataset indexed separately): AP per dataset (x100) next to
   the TSDAE paper's BM25 row (71.9 / 70.5), the size of each dataset's collection, and the wall time of the
   evaluation (indexing + scoring every pair);
2. retrieval on each dataset's own sentences: every unique first sentence searches the dataset's unique sentences
   for its top-k; wall time to index + search, and the share of queries whose top-k equals Lucene's (identical,
   and identical up to the order of tied scores: Lucene orders tied documents by float32 summation noise).
Pyserini's JVM start and imports are timed separately (once per process).
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

PAPER = {"twitterurl": 71.9, "pit": 70.5}  # TSDAE paper, Table 2, BM25 (Elasticsearch) row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-root", type=Path, default=Path(os.environ.get("BENCH_DATA", "../shared/data")))
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()

    from usebench import tasks  # noqa: F401
    from usebench.eval.bm25 import BM25Scorer
    from usebench.eval.evaluate import evaluate
    from usebench.eval.lucene import LuceneScorer, compare_rankings
    from usebench.registry import TASKS

    t = time.perf_counter()
    lucene = LuceneScorer()
    print(f"Pyserini {lucene.pyserini.version} + Java {lucene.pyserini.java_version}: load {time.perf_counter() - t:.1f} s")
    scorers = {"bm25-pyserini": lucene, "bm25-anserini": BM25Scorer("anserini"),
               "bm25-elasticsearch": BM25Scorer("elasticsearch")}
    data = TASKS.get("twitterpara").load("test", args.data_root)

    print("\nTwitterPara AP x100 (each dataset indexed separately); paper (Elasticsearch) 71.9 / 70.5")
    print(f"{'scorer':20} {'URL':>7} {'PIT':>7} {'avg':>7}  {'URL docs/avgdl':>15} {'PIT docs/avgdl':>15} {'time s':>7}")
    for name, scorer in scorers.items():
        t = time.perf_counter()
        ev = evaluate("twitterpara", scorer, "test", args.data_root)
        seconds = time.perf_counter() - t
        stats = scorer.describe()["corpus_statistics"]["rerank_pairs"]["collections"]
        sizes = [f"{stats[d]['n_docs']}/{stats[d]['avgdl']:.2f}" for d in ("twitterurl", "pit")]
        print(f"{name:20} {ev.scores['ap_twitterurl'] * 100:7.2f} {ev.scores['ap_pit'] * 100:7.2f} "
              f"{ev.scores['ap_avg'] * 100:7.2f}  {sizes[0]:>15} {sizes[1]:>15} {seconds:7.1f}")

    print(f"\nRetrieval in each dataset's sentences: top-{args.k} of every unique first sentence")
    print(f"{'dataset':11} {'scorer':20} {'queries':>7} {'docs':>6} {'index+search s':>14} "
          f"{'= Lucene':>9} {'= up to ties':>12}")
    for dataset, ps in data.items():
        corpus = list(dict.fromkeys([*ps.s1, *ps.s2]))
        queries = list(dict.fromkeys(ps.s1))
        for name, scorer in scorers.items():
            fresh = LuceneScorer() if name == "bm25-pyserini" else BM25Scorer(scorer.config)
            t = time.perf_counter()
            fresh.search(queries, corpus, args.k)
            seconds = time.perf_counter() - t
            share = {"identical": 1.0, "identical_up_to_ties": 1.0} if name == "bm25-pyserini" else \
                compare_rankings(BM25Scorer(scorer.config), lucene, queries, corpus, args.k)
            print(f"{dataset:11} {name:20} {len(queries):7} {len(corpus):6} {seconds:14.2f} "
                  f"{share['identical'] * 100:8.1f}% {share['identical_up_to_ties'] * 100:11.1f}%")
            if name == "bm25-pyserini":
                fresh.close()
    lucene.close()


if __name__ == "__main__":
    main()
