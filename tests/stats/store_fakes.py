"""A small results store with per-item outcomes, written through the store's own writer (make_record, save_result):
TwitterPara-shaped and STSb-shaped results whose scores are what their items give."""
from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

import numpy as np

from usebench.eval.items import Recipe, metric_value, pair_table
from usebench.store import ITEMS_SUFFIX, make_record, save_result

N_URL, N_PIT, N_STS = 400, 120, 300
TP_RECIPES = {"ap_twitterurl": Recipe("ap", ("twitterurl",)), "ap_pit": Recipe("ap", ("pit",)),
              "spearman_twitterurl": Recipe("spearman", ("twitterurl",)), "spearman_pit": Recipe("spearman", ("pit",)),
              "ap_avg": Recipe("ap", ("twitterurl", "pit")), "spearman_avg": Recipe("spearman", ("twitterurl", "pit"))}
STS_RECIPES = {"spearman": Recipe("spearman", ("sts-test.csv",), "pool"),
               "pearson": Recipe("pearson", ("sts-test.csv",), "pool")}


def gold_labels(seed: int = 0):
    """Fixed test sets: TwitterPara's votes (0-6, label dropped at 3) per corpus, and STSb's gold."""
    rng = np.random.default_rng(seed)
    votes = {"twitterurl": rng.integers(0, 7, N_URL), "pit": rng.integers(0, 6, N_PIT)}
    return votes, rng.uniform(0, 5, N_STS)


def release_sha(task: str) -> str:
    """The data sha256 of the task's test release as the package pins it: results on it are release results."""
    from usebench.report.pairing_data import evaluation_identity

    return evaluation_identity(task, "test", None).sha256 or f"sha-{task}"


def save(results: Path, run: str, method: str, pooling: str, seed: int, noise: float, *, task: str = "twitterpara",
         sha: str | None = None, items: bool = True, setting: str | None = None) -> Path:
    """One result of ``run``: similarities = gold + noise (smaller noise, better model)."""
    votes, sts_gold = gold_labels()
    rng = np.random.default_rng(zlib.crc32(f"{run}/{task}/{seed}".encode()))  # the same store in every process
    if task == "twitterpara":
        sets = {}
        for name, v in votes.items():
            middle = 3
            label = np.where(v > middle, 1, np.where(v < middle, 0, -1))
            sets[name] = (v + rng.normal(scale=noise, size=len(v)), v.astype(float), label)
        table, main = pair_table(sets, TP_RECIPES), "ap_avg"
    else:
        table, main = pair_table({"sts-test.csv": (sts_gold + rng.normal(scale=noise, size=N_STS), sts_gold, None)},
                                 STS_RECIPES), "spearman"
    data = table.to_bytes()
    named = {"file": "test" + ITEMS_SUFFIX, "sha256": hashlib.sha256(data).hexdigest(), "n": len(table),
             "bytes": len(data)} if items else None
    method_block = {"name": method, "base_model": "minilm", "pooling": pooling}
    if setting:
        method_block["setting"] = setting
    record = make_record(run=run, task={"name": task, "split": "test", "version": "1",
                                        "data_sha256": sha or release_sha(task), "n_queries": len(table)},
                         method=method_block, seed=seed, scores={m: metric_value(table, m) for m in table.recipes},
                         main_metric=main, subsets={}, scorer={"kind": "dense", "dtype": "float32", "pooling": pooling},
                         timings={}, config={"model": "minilm", "pooling": pooling, "method": method, "seed": seed},
                         items=named)
    return save_result(results, record, data if items else None)
