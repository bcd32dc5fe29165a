"""`bench eval`: evaluate an existing encoder (or a lexical baseline) on tasks and store one result per task."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from benchmark.cli.options import DATA_ROOT, RESULTS_DIR
from benchmark.paths import default_cache_dir, default_data_root, default_results_dir


if TYPE_CHECKING:
    from benchmark.run.evaluation import EvalOutcome


@click.command("eval")
@click.option("--model", default="minilm", show_default=True,
              help="HF id, local checkpoint directory, the alias 'minilm' (packaged, offline) or 'bm25' "
                   "(= bm25-elasticsearch; also bm25-anserini, bm25-pyserini).")
@click.option("--pooling", default=None, help="cls | mean | max | first_last_avg | last2avg (default: the checkpoint's).")
@click.option("--tasks", "task_spec", default="useb,sts", show_default=True, help="Tasks or groups, comma-separated.")
@click.option("--split", default="test", show_default=True, type=click.Choice(["test", "dev"]))
@click.option("--max-length", type=int, default=None, help="Truncate inputs to this many tokens.")
@click.option("--batch-size", type=int, default=64, show_default=True)
@click.option("--device", default=None, help="cpu | cuda | cuda:1 (default: cuda when available).")
@click.option("--precision", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
              help="fp32 on every device; bf16 autocast only when asked (recorded in the run id and the cache key).")
@click.option("--cache/--no-cache", default=False, show_default=True, help="Cache embeddings on disk.")
@click.option("--strict", is_flag=True, help="A task with missing data is an error instead of a skip.")
@click.option("--force", is_flag=True, help="Re-evaluate even if a result for the same config exists.")
@DATA_ROOT
@RESULTS_DIR
def eval_cmd(model, pooling, task_spec, split, max_length, batch_size, device, precision, cache, strict, force,
             data_root, results_dir) -> None:
    """Evaluate an existing encoder (or a lexical baseline) and store one result per task."""
    from benchmark.run.evaluation import EvalOptions, evaluate_model

    opts = EvalOptions(model=model, pooling=pooling, max_length=max_length, batch_size=batch_size, device=device,
                       cache_dir=default_cache_dir() if cache else None, precision=precision)
    outcome = evaluate_model(opts, task_spec, split, data_root or default_data_root(),
                             results_dir or default_results_dir(), strict=strict, force=force)
    print_summary(outcome, results_dir or default_results_dir())


def print_summary(outcome: EvalOutcome, results_dir: Path | None = None) -> None:
    """A readable table (x100, 2 decimals) of this run's results, new and reused."""
    from rich.console import Console
    from rich.table import Table

    from benchmark.results import iter_results

    console = Console()
    for task, reason in outcome.skipped:
        console.print(f"[yellow]skipped {task}[/yellow]: {reason}")
    rows = [(ev.task, ev.split, ev.main_metric, ev.scores) for ev in outcome.evaluations]
    if outcome.reused and results_dir is not None:
        for r in iter_results(results_dir):
            if r.record["run_id"] == outcome.run_id and r.task in outcome.reused:
                rows.append((r.task, r.split, r.record["main_metric"], r.record["scores"]))
    if not rows:
        console.print(f"run {outcome.run_id}: no task evaluated (all skipped; see above)")
        return
    table = Table(title=f"run {outcome.run_id}")
    for col in ("task", "split", "main", "metrics (x100)"):
        table.add_column(col)
    for task, split, main_metric, scores in rows:
        others = "  ".join(f"{k} {v * 100:.2f}" for k, v in scores.items() if k != main_metric)
        table.add_row(task, split, f"{main_metric} {scores[main_metric] * 100:.2f}", others)
    console.print(table)
    if outcome.reused:
        console.print(f"reused existing results for: {', '.join(outcome.reused)} (use --force to re-run)")
