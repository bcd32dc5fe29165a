"""`bench tasks` and `bench methods`: what is registered, with groups, metrics, presets and defaults."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click


@click.command("tasks")
@click.option("--all", "all_rows", is_flag=True, help="One row per registered task, each BEIR subset and BM25 variant "
              "its own (default: one row per task, its subsets and BM25 variants named in it).")
def tasks_cmd(all_rows: bool) -> None:
    """List registered tasks, their groups, splits and main metrics."""
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from rich.table import Table

    from usebench.cli.options import print_wide

    from usebench.registry import TASKS
    from usebench.tasks import GROUPS

    rows = [TaskRow(n, TASKS.get(n)) for n in TASKS.names()] if all_rows else task_rows(TASKS.names(), TASKS.get)
    table = Table(title="tasks")
    for col in ("task", *(() if all_rows else ("variants",)), "group", "family", "splits", "main metric", "metrics",
                "data"):
        table.add_column(col, max_width=64 if col == "variants" else None)  # a long list wraps in its cell
    for row in rows:
        t = row.task
        table.add_row(row.name, *(() if all_rows else (row.variants(),)), t.group, t.family, ",".join(t.splits),
                      t.main_metric, ", ".join(t.metric_names), f"bench data download {t.dataset}")
    print_wide(table)
    if not all_rows:
        click.echo("a subset S of task T is the task T-S (beir-cqadupstack-android), a BM25 variant B of it the task "
                   "B+T (bm25-pyserini+askubuntu): `bench tasks --all` lists each")
    for group, members in GROUPS.items():
        click.echo(f"group {group}: {', '.join(members)}")
    click.echo("and mteb:<TaskName> for any MTEB re-ranking, retrieval, pair-classification, classification or "
               "STS task (the `mteb` extra: pip install -e '.[mteb]')")


@dataclass
class TaskRow:
    """A task and, folded into its row, its subsets (``beir-cqadupstack-android`` of ``beir-cqadupstack``) and the
    BM25 variants that score it (``bm25-pyserini`` for ``bm25-pyserini+askubuntu``)."""

    name: str
    task: Any
    subsets: list[str] = field(default_factory=list)
    bm25: list[str] = field(default_factory=list)

    def variants(self) -> str:
        parts = [f"{len(self.subsets)} subsets: {', '.join(self.subsets)}"] if self.subsets else []
        parts += [f"BM25: {', '.join(self.bm25)}"] if self.bm25 else []
        return "; ".join(parts) or "-"


def task_rows(names: list[str], get: Callable[[str], Any]) -> list[TaskRow]:
    """One row per task that is neither a subset of another task nor a BM25 variant (``VARIANT+TASK``); each
    subset and variant is named in its task's row (a variant of a subset in the parent's). A variant or subset whose
    task is not registered keeps a row of its own."""
    rows = {n: TaskRow(n, get(n)) for n in names if "+" not in n}
    parents = {n: _parent(n, get(n), rows) for n in rows}
    for name, parent in parents.items():
        if parent is not None:
            rows[parent].subsets.append(name[len(parent) + 1:])
    for name in names:
        variant, _, task = name.partition("+")
        if not task:
            continue
        home = parents.get(task) or task
        if home in rows:
            if variant not in rows[home].bm25:
                rows[home].bm25.append(variant)
        else:
            rows[name] = TaskRow(name, get(name))
    return [row for n, row in rows.items() if parents.get(n) is None]


def _parent(name: str, task: Any, rows: dict[str, TaskRow]) -> str | None:
    """The registered task that ``name`` is a subset of: the longest other name that is ``name``'s prefix up to a
    ``-`` and reads the same dataset."""
    for cut in range(len(name) - 1, 0, -1):
        if name[cut] == "-" and name[:cut] in rows and rows[name[:cut]].task.dataset == task.dataset:
            return name[:cut]
    return None


@click.command("methods")
@click.option("--all", "all_fields", is_flag=True, help="Show every config field's default, not just the key ones.")
@click.option("--preset", default=None, help="Show this preset's resolved values (e.g. paper) instead of the defaults.")
def methods_cmd(all_fields: bool, preset: str | None) -> None:
    """List registered training methods with their presets and defaults (change them with --set key=value)."""
    from usebench import methods  # noqa: F401
    from usebench.train.plugin import describe_method
    from usebench.registry import METHODS

    if not len(METHODS):
        click.echo("no methods registered yet")
    for name in METHODS.names():
        click.echo("\n".join(describe_method(METHODS.get(name), all_fields, preset)))
