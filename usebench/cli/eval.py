"""`bench eval`: evaluate an existing encoder (or a lexical baseline) on tasks and store one result per task."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from usebench.cli.options import DATA_ROOT, RESULTS_DIR, WIDE
from usebench.paths import default_cache_dir, default_data_root, default_results_dir


if TYPE_CHECKING:
    from usebench.run.evaluation import EvalOutcome


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
@click.option("--allow-partial", is_flag=True,
              help="Evaluate data files that do not hold their release's published counts or recorded checksums "
                   "(e.g. cut on purpose); each result records that it is partial.")
@click.option("--limit", type=click.IntRange(min=1), default=None, metavar="N",
              help="A quick evaluation: a fixed, seeded subsample of at most N items per subset (pairs of a pair "
                   "task; queries, with all their candidates, of a ranking task). Filed under its own run id "
                   "(-limit<N>), shown with its 95%% interval, never reused as or paired with a full result.")
@click.option("--limit-seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Which seeded subsample --limit takes.")
@DATA_ROOT
@RESULTS_DIR
@WIDE
def eval_cmd(model, pooling, task_spec, split, max_length, batch_size, device, precision, cache, strict, force,
             allow_partial, limit, limit_seed, data_root, results_dir) -> None:
    """Evaluate an existing encoder (or a lexical baseline) and store one result per task."""
    from usebench.errors import NothingDoneError
    from usebench.plan.eval_options import EvalOptions
    from usebench.run.evaluation import evaluate_model, raise_unless_done
    from usebench.store import check_store_target, mark_store, result_path
    from usebench.tasks import expand_tasks

    opts = EvalOptions(model=model, pooling=pooling, max_length=max_length, batch_size=batch_size, device=device,
                       cache_dir=default_cache_dir() if cache else None, precision=precision,
                       allow_partial=allow_partial, limit=limit, limit_seed=limit_seed)
    root, results = Path(data_root or default_data_root()), Path(results_dir or default_results_dir())
    names = expand_tasks(task_spec)
    if not root.is_dir():
        raise NothingDoneError(f"data root {root} does not exist (set --data-root or $BENCH_DATA, or fetch the data "
                               "with `bench data download`); nothing was evaluated")
    check_store_target(results, results_dir is not None, "bench eval")  # a committed store only when named
    outcome = evaluate_model(opts, task_spec, split, root, results, strict=strict, force=force,
                             log=lambda line: click.echo(line))
    if outcome.evaluations:
        mark_store(results)  # a store by content from its first result on
    print_summary(outcome, results)
    for task in outcome.records:  # the new results, where a script or a person finds them
        click.echo(f"wrote {result_path(results, outcome.run_id, task, split)}")
    raise_unless_done(outcome, len(names), f"{', '.join(t for t, _ in outcome.failed)} (see above)")


def print_summary(outcome: EvalOutcome, results_dir: Path | None = None) -> None:
    """A readable table (x100, 2 decimals) of this run's results, new and reused."""
    import json

    from rich.table import Table

    from usebench.cli.options import print_wide
    from usebench.store import result_path

    records = [outcome.records[ev.task] for ev in outcome.evaluations]
    for task in outcome.reused if results_dir is not None else ():
        records.append(json.loads(result_path(results_dir, outcome.run_id, task, outcome.split)
                                  .read_text(encoding="utf-8")))
    if not records:
        click.echo(f"run {outcome.run_id}: no task evaluated (see above)")
        return
    table = Table(title=f"run {outcome.run_id}")
    for col in ("task", "split", "main", "metrics (x100)"):
        table.add_column(col)
    for record in records:
        main_metric, scores = record["main_metric"], record["scores"]
        others = "  ".join(f"{k} {v * 100:.2f}" for k, v in scores.items() if k != main_metric)
        main = f"{main_metric} {scores[main_metric] * 100:.2f}" + _interval_text(record, results_dir)
        table.add_row(record["task"]["name"], record["task"]["split"], main, others)
    print_wide(table)
    limited = next((r["task"]["limit"] for r in records if r["task"].get("limit")), None)
    if limited:
        click.echo(f"limited: a seeded subsample of at most {limited['n']} items per subset (--limit, seed "
                   f"{limited['seed']}); each score is an estimate on those items, [low, high] its 95% bootstrap "
                   "interval over them. Filed under its own run id: never reused as a full result, never shown "
                   "beside a published number.")
    click.echo(f"{len(outcome.evaluations)} evaluated, {len(outcome.reused)} reused, {len(outcome.skipped)} skipped"
                  + (f", {len(outcome.failed)} failed" if outcome.failed else "")
                  + (f"; reused: {', '.join(outcome.reused)} (--force re-runs)" if outcome.reused else ""))


def _interval_text(record: dict, results_dir: Path | None) -> str:
    """`` [low, high]`` (x100) of a --limit result's main score over its subsample, "" for a full result (its
    interval is in `bench report`) or when its items cannot be read (said in words)."""
    if not record["task"].get("limit") or results_dir is None:
        return ""
    from usebench.stats.loading import NoItemsError, result_intervals
    from usebench.store import StoredResult, result_path

    path = result_path(results_dir, record["run_id"], record["task"]["name"], record["task"]["split"])
    try:
        ci = result_intervals(StoredResult(path, record), [record["main_metric"]])[record["main_metric"]]
    except NoItemsError as e:
        return f" (no interval: {e.why})"
    return f" [{ci.low * 100:.2f}, {ci.high * 100:.2f}]"
