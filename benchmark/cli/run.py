"""`bench run`: train methods on each task's unlabeled corpus, evaluate, print the seed-averaged table."""
from __future__ import annotations

import os
from pathlib import Path

import click

# Defined here, not imported from benchmark.cli.main: cli imports this module at its bottom (no import cycle).
DATA_ROOT = click.option("--data-root", type=click.Path(path_type=Path), default=None,
                         help="Data root (default: $BENCH_DATA or ~/.cache/usebench/data).")
RESULTS_DIR = click.option("--results-dir", type=click.Path(path_type=Path), default=None,
                           help="Results store (default: results/).")


@click.command("run")
@click.option("--methods", "method_spec", required=True,
              help="Comma-separated methods (see `bench methods`), plus the untrained baselines base and bm25.")
@click.option("--tasks", "task_spec", required=True, help="Tasks or groups whose corpora are trained on and "
              "which are evaluated (e.g. useb, twitterpara).")
@click.option("--eval-tasks", default=None, help="Extra tasks to evaluate each trained model on (e.g. stsb).")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True, help="Seeds 0..N-1 per unit.")
@click.option("--preset", default=None, help="paper | official | smoke (default: each method's default, paper).")
@click.option("--model", default=None, help="Base model (overrides the preset's; alias minilm works offline).")
@click.option("--corpus", "corpus", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Train on this file (one sentence per line) instead of the task corpus; repeat to concatenate.")
@click.option("--corpus-size", type=click.IntRange(min=1), default=None,
              help="Train on a fixed subsample of N sentences of the corpus (the paper's Fig. 3: 128 ... 65536).")
@click.option("--max-steps", type=click.IntRange(min=1), default=None, help="Cap the optimizer steps.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Config override (typed, checked); METHOD.KEY=VALUE applies to one method only.")
@click.option("--split", default="test", show_default=True, type=click.Choice(["test", "dev"]))
@click.option("--device", default=None, help="cpu | cuda | cuda:1 (default: cuda when available).")
@click.option("--batch-size", type=int, default=64, show_default=True, help="Evaluation batch size.")
@click.option("--strict", is_flag=True, help="Missing data is an error instead of a skip.")
@click.option("--force", is_flag=True, help="Re-train and re-evaluate units that already finished.")
@DATA_ROOT
@RESULTS_DIR
def run(method_spec, task_spec, eval_tasks, seeds, preset, model, corpus, corpus_size, max_steps, overrides, split,
        device, batch_size, strict, force, data_root, results_dir) -> None:
    """Train each method on each task's unlabeled corpus, evaluate, and print mean ± std over seeds."""
    from benchmark.paths import default_data_root, default_results_dir
    from benchmark.run.grid import RunOptions, print_run_table, run_benchmark

    opts = RunOptions(methods=tuple(m.strip() for m in method_spec.split(",") if m.strip()), tasks=task_spec,
                      eval_tasks=eval_tasks, seeds=seeds, preset=preset, model=model, corpus=tuple(corpus),
                      corpus_size=corpus_size, max_steps=max_steps, overrides=tuple(overrides), split=split,
                      force=force, strict=strict, device=device, batch_size=batch_size)
    outcome = run_benchmark(opts, Path(data_root or default_data_root()), Path(results_dir or default_results_dir()))
    if int(os.environ.get("RANK", "0")) == 0:  # torchrun: one table, from rank 0
        print_run_table(outcome)
