"""A small synthetic results store for report/stats/check tests, written with the real record schema."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmark.results import make_record, run_id, save_result

# Metric names per task, as the adapters write them.
TASK_METRICS = {
    "askubuntu": ("map", ["map"]),
    "cqadupstack": ("map@100", ["map@100"]),
    "twitterpara": ("ap_avg", ["ap_twitterurl", "ap_pit", "ap_avg"]),
    "scidocs": ("map_avg", ["map_cite", "map_cocite", "map_coread", "map_coview", "map_avg"]),
    **{t: ("spearman", ["spearman"]) for t in ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")},
    "mteb:SciDocsRR": ("map_at_1000", ["map_at_1000"]),
}


def add_result(root: Path, method: str, seed: int, task: str, scores: dict[str, float], *,
               model: str = "bert-base-uncased", pooling: str = "cls", split: str = "test",
               sha: str | None = None, config: dict[str, Any] | None = None, setting: str | None = None,
               group: str = "useb", train_corpus: str | None = None, method_extra: dict[str, Any] | None = None) -> Path:
    """Write one result record; the config carries the seed, as a training run's would."""
    cfg = {"method": method, "model": model, "lr": 3e-5, "seed": seed, **(config or {})}
    if setting:
        cfg["setting"] = setting
    main = TASK_METRICS[task][0]
    run = run_id(method.replace(">", "+"), model.replace("/", "_"), {k: v for k, v in cfg.items() if k != "seed"},
                 seed)
    record = make_record(
        run=run, task={"name": task, "split": split, "group": group, "version": 1,
                       "data_sha256": sha or f"sha-{task}", "n_queries": 10},
        method={"name": method, "base_model": model, "pooling": pooling, "max_length": 128,
                **({"train_corpus": train_corpus} if train_corpus else {}), **(method_extra or {})},
        seed=seed, scores=scores, main_metric=main, subsets={}, scorer={"kind": "dense"}, timings={},
        config=cfg)
    return save_result(root, record)


def useb_scores(a: float, c: float, t: tuple[float, float], s: tuple[float, float, float, float]) -> dict:
    """Scores of the four USEB tasks from their parts (averages computed like the adapters do)."""
    return {
        "askubuntu": {"map": a},
        "cqadupstack": {"map@100": c},
        "twitterpara": {"ap_twitterurl": t[0], "ap_pit": t[1], "ap_avg": (t[0] + t[1]) / 2},
        "scidocs": {"map_cite": s[0], "map_cocite": s[1], "map_coread": s[2], "map_coview": s[3],
                    "map_avg": sum(s) / 4},
    }


def add_useb(root: Path, method: str, seed: int, a: float, c: float, t: tuple[float, float],
             s: tuple[float, float, float, float], **kw) -> None:
    """All four USEB tasks for one (method, seed)."""
    for task, scores in useb_scores(a, c, t, s).items():
        add_result(root, method, seed, task, scores, **kw)
