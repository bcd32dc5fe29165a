"""`bench compare A B`: per task, B - A with its paired bootstrap interval, a paired permutation test over the test
items, Holm's correction over the tasks, and whether the difference is distinguishable from 0 (usebench/stats)."""
from __future__ import annotations

from pathlib import Path

import click

from usebench.cli.options import RESULTS_DIR


@click.command("compare")
@click.argument("a")
@click.argument("b")
@RESULTS_DIR
@click.option("--tasks", default=None, metavar="TASK,...", help="Only these tasks (default: every task both have).")
@click.option("--split", default="test", show_default=True, help="Evaluation split.")
@click.option("--metric", default=None, help="Metric to compare (default: each task's main metric).")
@click.option("--resamples", type=int, default=1000, show_default=True,
              help="Bootstrap resamples and permutations.")
@click.option("--level", type=float, default=0.95, show_default=True, help="Interval level (alpha = 1 - level).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the resamples.")
@click.option("--json", "json_out", type=click.Path(path_type=Path), default=None,
              help="Also write every number (0-1 units) to this JSON file.")
def compare(a: str, b: str, results_dir: Path | None, tasks: str | None, split: str, metric: str | None,
            resamples: int, level: float, seed: int, json_out: Path | None) -> None:
    """B - A per task on the same test items: run ids, a run id without its __s<seed> (all its seeds), a table row's
    label or a method name naming one row. Needs the results' per-item outcomes (stored by every evaluation since
    they exist; `bench run ... --reevaluate TASK` adds them to older results)."""
    from usebench.errors import NothingDoneError
    from usebench.store.mteb_results import all_results
    from usebench.paths import default_results_dir
    from usebench.stats.compare import compare_sides, comparison_lines, comparison_records, resolve
    from usebench.stats.intervals import Resampler

    resampler = Resampler(resamples, seed, level)  # checks the values before the store is read
    results = all_results(results_dir or default_results_dir())
    side_a, side_b = resolve(a, results), resolve(b, results)
    names = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    comp = compare_sides(side_a, side_b, tasks=names, split=split, metric=metric, resampler=resampler)
    for line in comparison_lines(comp):
        click.echo(line)
    if json_out is not None:
        from usebench.store import write_json_atomic

        write_json_atomic(json_out, {"a": side_a.label, "b": side_b.label, "notes": comp.notes(),
                                     "tasks": comparison_records(comp)})
    if not any(t.result is not None for t in comp.tasks):
        raise NothingDoneError("no task could be compared (each line above says why)")
