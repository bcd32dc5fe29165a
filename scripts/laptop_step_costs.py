"""CPU seconds per training step of each method of the `laptop` recipe, on the real Twitter URL training sentences.

The laptop recipe (usebench/recipes/laptop.toml) budgets each method's steps from these figures, and its dry run's
cost line predicts the recipe's time from them. Each method trains ``--steps`` steps of its ``--preset`` (default
``laptop``) in a temporary folder, on one torch thread; the first ``--warmup`` steps are not counted (model and
optimizer set-up, first-batch allocations). The figure is process CPU time per step (``time.process_time``), which
a loaded machine hardly moves at one thread; the wall time is printed beside it.

    python scripts/laptop_step_costs.py --data-root ../shared/data                # every method, 12 steps each
    python scripts/laptop_step_costs.py --methods tsdae,ct --steps 20 --json steps.json
    python scripts/laptop_step_costs.py --evals twitterpara,sts --methods ""    # CPU s of one evaluation per task

``--evals`` times one evaluation of the packaged MiniLM per task (load, encode, score), the same at one thread.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

METHODS = ("tsdae", "mlm", "ct", "simcse", "bertflow", "consert", "denosent", "paser")
CORPUS = ("useb/extra/twitter_url_train_tok/a.toks", "useb/extra/twitter_url_train_tok/b.toks",
          "useb/extra/pit2015/dev.data")  # the recipe's corpus (usebench/recipes/laptop.toml)


def measure(name: str, preset: str, steps: int, warmup: int, data_root: Path, overrides: dict) -> dict:
    """Train ``steps`` steps of ``name`` and return its CPU and wall seconds per counted step."""
    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench.registry import METHODS as REGISTRY
    from usebench.plan.corpus import load_corpus
    from usebench.train.loop import train

    method = REGISTRY.get(name)
    cfg = method.config(preset, {**overrides, "max_steps": steps, "epochs": None, "log_every": 1, "save_every": 0,
                                 "dev_every": 0, "dev_task": None, "dev_patience": None,
                                 "stop_at_step": None, "curve_task": None, "curve_steps": ()})
    corpus = load_corpus(None, [data_root / f for f in CORPUS], None, data_root)
    marks: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix=f"steps-{name}-") as out:
        train(method, cfg, corpus.examples, out, seed=0, device="cpu", resume=False, show_progress=False,
              on_step=lambda _step: marks.append((time.process_time(), time.perf_counter())), workers=0)
    counted = marks[warmup:]
    cpu = [b[0] - a[0] for a, b in zip(counted, counted[1:])]
    wall = [b[1] - a[1] for a, b in zip(counted, counted[1:])]
    return {"method": name, "preset": preset, "batch_size": cfg.batch_size, "max_length": cfg.max_length,
            "steps_counted": len(cpu), "cpu_s_per_step": statistics.median(cpu),
            "wall_s_per_step": statistics.median(wall)}


def measure_eval(task: str, data_root: Path) -> dict:
    """CPU and wall seconds of one evaluation of the packaged MiniLM on ``task`` (test split)."""
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.eval.encoder import HFEncoder
    from usebench.eval.evaluate import evaluate
    from usebench.eval.scorer import DenseScorer

    cpu0, wall0 = time.process_time(), time.perf_counter()
    ev = evaluate(task, DenseScorer(HFEncoder("minilm", show_progress=False)), "test", data_root)
    return {"task": task, "items": ev.n_queries, "cpu_s": time.process_time() - cpu0,
            "wall_s": time.perf_counter() - wall0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--preset", default="laptop")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config override (JSON value)")
    parser.add_argument("--evals", default="", help="tasks or groups to time one evaluation of (e.g. twitterpara,sts)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    overrides = {k: json.loads(v) for k, _, v in (s.partition("=") for s in args.set)}
    rows, evals = [], []
    if args.evals:
        from usebench import tasks  # noqa: F401
        from usebench.tasks import expand_tasks

        for task in expand_tasks(args.evals):
            evals.append(measure_eval(task, args.data_root))
            print(f"eval {task:12s} {evals[-1]['items']:6d} items  {evals[-1]['cpu_s']:.1f} CPU s "
                  f"({evals[-1]['wall_s']:.1f} s wall)", flush=True)
    for name in filter(None, args.methods.split(",")):
        row = measure(name, args.preset, args.steps, args.warmup, args.data_root, overrides)
        rows.append(row)
        print(f"{name:9s} batch {row['batch_size']:4d}  {row['cpu_s_per_step']:.3f} CPU s/step  "
              f"({row['wall_s_per_step']:.3f} s wall)", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"threads": 1, "rows": rows, "evals": evals}, indent=2) + "\n",
                             encoding="utf-8")


if __name__ == "__main__":
    main()
