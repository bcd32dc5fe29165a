"""The `bench` command line. Sub-command groups live in their own modules and are added at the bottom."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from benchmark.errors import BenchError
from benchmark.paths import default_cache_dir, default_data_root, default_results_dir

DATA_ROOT = click.option("--data-root", type=click.Path(path_type=Path), default=None,
                         help="Data root (default: $BENCH_DATA or ~/.cache/usebench/data).")
RESULTS_DIR = click.option("--results-dir", type=click.Path(path_type=Path), default=None,
                           help="Results store (default: results/).")


class BenchGroup(click.Group):
    """Turns BenchError into one clean `error:` line and exit code 2 instead of a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BenchError as e:
            click.secho(f"error: {e}", fg="red", err=True)
            sys.exit(2)


@click.group(cls=BenchGroup)
@click.version_option(package_name="usebench")
def main() -> None:
    """usebench: train and evaluate unsupervised sentence encoders on USEB, STS and BEIR tasks."""
    _quiet_libraries()


def _quiet_libraries() -> None:
    import os

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:
        pass


@main.command("tasks")
def tasks_cmd() -> None:
    """List registered tasks, their groups, splits and main metrics."""
    import tasks  # noqa: F401  (enrols the adapters)
    from rich.console import Console
    from rich.table import Table

    from benchmark.registry import TASKS
    from tasks import GROUPS

    table = Table(title="tasks")
    for col in ("task", "group", "family", "splits", "main metric", "metrics", "data"):
        table.add_column(col)
    for name in TASKS.names():
        t = TASKS.get(name)
        table.add_row(name, t.group, t.family, ",".join(t.splits), t.main_metric, ", ".join(t.metric_names),
                      f"bench data download {t.dataset}")
    console = Console()
    console.print(table)
    for group, members in GROUPS.items():
        console.print(f"group [bold]{group}[/bold]: {', '.join(members)}")


@main.command("eval")
@click.option("--model", default="minilm", show_default=True,
              help="HF id, local checkpoint directory, the alias 'minilm' (packaged, offline) or 'bm25'.")
@click.option("--pooling", default=None, help="cls | mean | max | first_last_avg | last2avg (default: the checkpoint's).")
@click.option("--tasks", "task_spec", default="useb,sts", show_default=True, help="Tasks or groups, comma-separated.")
@click.option("--split", default="test", show_default=True, type=click.Choice(["test", "dev"]))
@click.option("--max-length", type=int, default=None, help="Truncate inputs to this many tokens.")
@click.option("--batch-size", type=int, default=64, show_default=True)
@click.option("--device", default=None, help="cpu | cuda | cuda:1 (default: cuda when available).")
@click.option("--cache/--no-cache", default=False, show_default=True, help="Cache embeddings on disk.")
@click.option("--strict", is_flag=True, help="A task with missing data is an error instead of a skip.")
@click.option("--force", is_flag=True, help="Re-evaluate even if a result for the same config exists.")
@DATA_ROOT
@RESULTS_DIR
def eval_cmd(model, pooling, task_spec, split, max_length, batch_size, device, cache, strict, force, data_root,
             results_dir) -> None:
    """Evaluate an existing encoder (or a lexical baseline) and store one result per task."""
    from benchmark.run.evaluation import EvalOptions, evaluate_model, print_summary

    opts = EvalOptions(model=model, pooling=pooling, max_length=max_length, batch_size=batch_size, device=device,
                       cache_dir=default_cache_dir() if cache else None)
    outcome = evaluate_model(opts, task_spec, split, data_root or default_data_root(),
                             results_dir or default_results_dir(), strict=strict, force=force)
    print_summary(outcome, results_dir or default_results_dir())


@main.command("methods")
@click.option("--all", "all_fields", is_flag=True, help="Show every config field's default, not just the key ones.")
def methods_cmd(all_fields: bool) -> None:
    """List registered training methods with their presets and defaults (change them with --set key=value)."""
    import methods  # noqa: F401
    from benchmark.train.plugin import describe_method
    from benchmark.registry import METHODS

    if not len(METHODS):
        click.echo("no methods registered yet")
    for name in METHODS.names():
        click.echo("\n".join(describe_method(METHODS.get(name), all_fields)))


# Sub-command groups, one explicit line each.
# (added as their modules land: data, run, report, check)
from benchmark.cli.report import report as _report_cmd; main.add_command(_report_cmd)  # noqa: E402,E702
from benchmark.cli.report import check as _check_cmd; main.add_command(_check_cmd)  # noqa: E402,E702
from benchmark.cli.data import data as _data_group; main.add_command(_data_group)  # noqa: E402,E702
from benchmark.cli.run import run as _run_cmd; main.add_command(_run_cmd)  # noqa: E402,E702

if __name__ == "__main__":
    main()
