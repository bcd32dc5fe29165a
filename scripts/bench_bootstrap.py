"""Time the bootstrap (usebench/stats) on test sets of the real tasks' sizes: an interval and a paired comparison
(interval and permutation test) at 1,000 resamples, one seed and three.

    python scripts/bench_bootstrap.py                       # synthetic: CQADupStack-sized and TwitterPara-sized
    python scripts/bench_bootstrap.py --items DIR/test.items.npz   # also a stored items file (e.g. TwitterPara's)

CQADupStack-sized: 12 forums x 1,500 queries, per-query MAP@100 and nDCG@10 (a tenth undefined), the metric the
mean over the forums; TwitterPara-sized: 10,120 + 972 pairs, AP of each corpus averaged (AP recomputed per resample).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from usebench.eval.items import ItemTable, Recipe, mean_recipes, pair_table, query_table
from usebench.stats.intervals import Measurement, Resampler, measurement
from usebench.stats.paired import paired


def cqadupstack_sized(rng: np.random.Generator, shift: float = 0.0) -> ItemTable:
    forums = {}
    for f in range(12):
        ap = np.clip(rng.beta(0.6, 1.4, 1500) + shift, 0, 1)
        ndcg = np.where(rng.random(1500) < 0.1, np.nan, np.clip(ap + rng.normal(0, 0.05, 1500), 0, 1))
        forums[f"forum{f}"] = ([f"q{i}" for i in range(1500)], {"map@100": ap, "ndcg@10": ndcg})
    names = tuple(forums)
    return query_table(forums, mean_recipes({"map@100": ("map@100", names), "ndcg@10": ("ndcg@10", names)}))


def twitterpara_sized(rng: np.random.Generator, noise: float) -> ItemTable:
    sets = {}
    for name, n in (("twitterurl", 10120), ("pit", 972)):
        votes = rng.integers(0, 7, n)
        label = np.where(votes > 3, 1, np.where(votes < 3, 0, -1))
        score = (votes + rng.normal(0, noise, n)).astype(np.float32).astype(np.float64)
        sets[name] = (score, votes.astype(float), label)
    return pair_table(sets, {"ap_avg": Recipe("ap", ("twitterurl", "pit"))})


def timed(what: str, fn) -> None:
    t0 = time.perf_counter()
    out = fn()
    print(f"{what}: {time.perf_counter() - t0:.2f} s  ({out})")


def run(name: str, metric: str, a: list[ItemTable], b: list[ItemTable]) -> None:
    ma: Measurement = measurement(name, "test", "sha", "1", list(enumerate(a)))
    mb: Measurement = measurement(name, "test", "sha", "1", list(enumerate(b)))
    resampler = Resampler()
    timed(f"{name} ({len(a)} seed(s), {ma.n_items:,} items): interval", lambda: resampler.interval(ma, metric))
    timed(f"{name} ({len(a)} seed(s)): paired interval and permutation test",
          lambda: paired(resampler, ma, mb, metric).test)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=Path, default=None, help="a stored items file to time as well")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for seeds in (1, 3):
        run("cqadupstack-sized", "map@100", [cqadupstack_sized(rng) for _ in range(seeds)],
            [cqadupstack_sized(rng, 0.01) for _ in range(seeds)])
        run("twitterpara-sized", "ap_avg", [twitterpara_sized(rng, 1.5) for _ in range(seeds)],
            [twitterpara_sized(rng, 1.6) for _ in range(seeds)])
    if args.items is not None:
        table = ItemTable.from_bytes(args.items.read_bytes(), str(args.items))
        metric = next(iter(table.recipes))
        m = measurement("stored", "test", "sha", "1", [(0, table)])
        timed(f"{args.items} {metric}: interval", lambda: Resampler().interval(m, metric))


if __name__ == "__main__":
    main()
