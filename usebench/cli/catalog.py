"""`bench tasks` and `bench methods`: what is registered, with groups, metrics, presets and defaults."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from usebench.cli.options import DATA_ROOT, WIDE, echo_fit, fits_terminal, print_wide


@click.command("tasks")
@click.option("--all", "all_rows", is_flag=True, help="One row per registered task, each BEIR subset and BM25 variant "
              "its own (default: one row per task, its subsets and BM25 variants named in it).")
@click.option("--group", "group", default=None, metavar="GROUP",
              help="Only the tasks of this group: a name that selects several (useb, sts, beir-cqadupstack-forums, "
                   "...) or a task's own group (useb, sts, beir).")
@click.option("--type", "family", default=None, type=click.Choice(["rerank", "retrieval", "pairs"]),
              help="Only the tasks of this protocol family.")
@DATA_ROOT
@WIDE
def tasks_cmd(all_rows: bool, group: str | None, family: str | None, data_root: Path | None) -> None:
    """List registered tasks, their groups, splits and main metrics, and whether their data is here."""
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.paths import default_data_root
    from usebench.registry import TASKS
    from usebench.tasks import GROUPS

    names = selected_tasks(TASKS.names(), TASKS.get, group, family)
    root = Path(data_root or default_data_root()).expanduser()
    rows = [TaskRow(n, TASKS.get(n)) for n in names] if all_rows else task_rows(names, TASKS.get)
    print_wide(task_table(rows, root, all_rows, compact=fits_terminal()))
    if fits_terminal():
        absent = dict.fromkeys(h.split(": ", 1)[1].removeprefix("bench data download ")
                               for r in rows if (h := data_here(r.task, root)) != "yes")
        echo_fit((f"data not here: {', '.join(absent)} (bench data download NAME fetches one); " if absent else "")
                 + "every metric and variant name: bench tasks --wide")
    if not all_rows:
        echo_fit("a subset S of task T is the task T-S (beir-cqadupstack-android), a BM25 variant B of it the task "
                 "B+T (bm25-pyserini+askubuntu): `bench tasks --all` lists each")
    for name, members in GROUPS.items():
        if group is None or name == group:
            echo_fit(f"group {name}: {', '.join(members)}")
    echo_fit("and mteb:<TaskName> for any MTEB re-ranking, retrieval, pair-classification, classification or "
             "STS task (the `mteb` extra: pip install -e '.[mteb]')")


def task_table(rows: list[TaskRow], root: Path, all_rows: bool, compact: bool) -> Any:
    """The tasks as a rich table. ``compact`` (a terminal): subsets and BM25 variants as counts, no metrics column, the
    missing data's dataset only; else (pipes, logs, ``--wide``) every name and the command that fetches the data."""
    from rich import box
    from rich.table import Table

    table = Table(title=f"tasks (data: {root})", box=box.SIMPLE_HEAD if compact else box.HEAVY_HEAD)
    columns = ("task", *(() if all_rows else ("variants",)), "group", "family", "splits", "main metric",
               *(() if compact else ("metrics",)), "data here")
    for col in columns:  # a long list wraps in its cell; a task's name is never cut
        table.add_column(col, max_width=64 if col == "variants" else None,
                         min_width=max((len(r.name) for r in rows), default=4) if col == "task" else None)
    for row in rows:
        t = row.task
        variants = () if all_rows else (row.counts() if compact else row.variants(),)
        here = data_here(t, root)
        table.add_row(row.name, *variants, t.group, t.family, ",".join(t.splits), t.main_metric,
                      *(() if compact else (", ".join(t.metric_names),)),
                      here.split(":")[0] if compact else here)
    return table


def selected_tasks(names: list[str], get: Callable[[str], Any], group: str | None, family: str | None) -> list[str]:
    """``--group``/``--type``: the registered tasks a group name selects (or whose own group it is) and of the
    protocol family; an unknown group is an error naming the known ones."""
    from usebench.errors import ConfigError
    from usebench.tasks import GROUPS

    if group is not None:
        own = {get(n).group for n in names}
        if group not in GROUPS and group not in own:
            raise ConfigError(f"--group {group!r}: expected one of {', '.join(sorted(set(GROUPS) | own))}")
        names = [n for n in names if n in GROUPS.get(group, ()) or get(n).group == group]
    return [n for n in names if family is None or get(n).family == family]


def data_here(task: Any, root: Path) -> str:
    """"yes" when every file of every split of ``task`` is under ``root``, else "no: <the command that fetches
    it>" (an adapter that cannot list its files: "no: <its error>")."""
    try:
        missing = next((f for s in task.splits for f in task.files(s) if not (root / f).is_file()), None)
    except Exception as e:  # noqa: BLE001  a broken adapter must not hide the others
        return f"no: {type(e).__name__}: {e}"
    dataset = getattr(task, "dataset", "")
    return "yes" if missing is None else f"no: bench data download {dataset}" if dataset else f"no: {missing}"


@dataclass
class TaskRow:
    """A task and, folded into its row, its subsets (``beir-cqadupstack-android`` of ``beir-cqadupstack``) and the
    BM25 variants that score it (``bm25-pyserini`` for ``bm25-pyserini+askubuntu``)."""

    name: str
    task: Any
    subsets: list[str] = field(default_factory=list)
    bm25: list[str] = field(default_factory=list)

    def counts(self) -> str:
        """``12 subsets, 4 BM25``: :meth:`variants` as counts (a terminal's view)."""
        parts = ([f"{len(self.subsets)} subsets"] if self.subsets else []) + ([f"{len(self.bm25)} BM25"] if self.bm25
                                                                               else [])
        return ", ".join(parts) or "-"

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
@click.argument("name", required=False)
@click.option("--all", "all_fields", is_flag=True, help="Show every config field's default, not just the key ones.")
@click.option("--preset", default=None, help="Show this preset's resolved values (e.g. paper) instead of the defaults.")
@WIDE
def methods_cmd(name: str | None, all_fields: bool, preset: str | None) -> None:
    """List registered training methods, one line each; NAME: that method's presets (with their notes), options and
    defaults (change them with --set key=value). --all or --preset without NAME: every method's."""
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS
    from usebench.train.catalog_text import describe_method

    if not len(METHODS):
        click.echo("no methods registered yet")
        return
    if name is None and not all_fields and preset is None:
        import shutil

        width = shutil.get_terminal_size().columns if fits_terminal() else None
        for line in method_lines([METHODS.get(n) for n in METHODS.names()], width):
            click.echo(line)
        echo_fit("bench methods NAME [--preset P] for one method's presets (with their notes), options and defaults")
        return
    chosen = [METHODS.get(name)] if name is not None else [METHODS.get(n) for n in METHODS.names()]
    if preset is not None and name is not None and preset not in chosen[0].presets:
        from usebench.errors import ConfigError

        raise ConfigError(f"--preset {preset!r}: {name} has the presets {', '.join(chosen[0].presets)}")
    for method in chosen:
        echo_fit("\n".join(describe_method(method, all_fields, preset)), indent="      ")


def method_lines(methods: list[Any], width: int | None) -> list[str]:
    """One line per method under a header: name, what it trains on, its presets (the default first) and its
    description, cut with "…" to ``width`` columns (None: whole, for pipes and logs)."""
    cells = [(m.name, m.data_kind, ", ".join([m.default_preset] + [p for p in m.presets if p != m.default_preset]),
              m.description) for m in methods]
    head = ("method", "trains on", "presets (default first)", "description")
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(3)]
    out = []
    for row in [head, *cells]:
        line = "  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[3]
        out.append(line if width is None or len(line) <= width else line[:width - 1] + "…")
    return out
