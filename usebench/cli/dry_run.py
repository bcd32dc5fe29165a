"""The dry run's plan as a person reads it (`bench run --dry-run`, each split of `bench reproduce --dry-run`): a
summary of one row per group (a recipe's table), chain and setting, with its units, what their stages do now
(trained, reused from another unit of the plan, done in the store), the steps to train and their cost; the unit
table below it for a small plan or with ``--units``; every row to a file with ``--plan-out``. The rows, their groups
and the groups' cost come whole from the engine (:mod:`usebench.plan.plan_rows`); this module only prints them."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from usebench.plan.plan_rows import GroupRow, PlanRow, PlanView

# A plan of at most this many units lists them under the summary without --units: a screenful a person reads.
UNITS_LISTED = 40

PLAN_OUT = click.option("--plan-out", "plan_out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        metavar="FILE.csv|FILE.json",
                        help="With --dry-run: write the full per-unit plan (every unit's stages, steps, poolings, "
                             "reuse, state) to this CSV or JSON file (by its suffix).")
UNITS = click.option("--units", "list_units", is_flag=True,
                     help=f"With --dry-run: list every unit under the summary (a plan of up to {UNITS_LISTED} units "
                          "is listed anyway).")


def print_plan(view: PlanView, list_units: bool = False, grouped_by: str = "", console: Any = None) -> None:
    """The plan's notes and ``--force`` lines, its summary (``grouped_by``: the name of the rows' groups, e.g.
    "table"; "" for none), the unit table when asked for or small, and the stage totals (on ``console``, a rich
    Console; default: stdout, the terminal's width on one, else 320 columns)."""
    from rich.console import Console
    from rich.markup import escape

    from usebench.cli.options import fits_terminal

    # the terminal's width on one (--wide: 320); 320 columns in a log, read whole or with less -S
    console = console or (Console() if fits_terminal() else Console(width=320))
    for note in view.notes:
        console.print(note, markup=False, highlight=False)
    for what, why in view.skipped:
        console.print(f"[yellow]skipped {escape(what)}[/yellow]: {escape(why)}")
    for note in view.forced.notes():
        console.print(note, markup=False, highlight=False)
    if view.forced.reset:
        console.print(f"--force: starts over {len(view.forced.reset)} folder(s) this run owns: "
                      + ", ".join(view.forced.reset), markup=False, highlight=False)
    # the count line scripts read (scripts/bench_plan.py), then the summary a person reads
    console.print(f"bench run --dry-run: {view.units} unit(s), {view.baselines} baseline(s)", markup=False,
                  highlight=False)
    console.print(summary_table(view.groups, grouped_by))
    if list_units or view.units <= UNITS_LISTED:
        console.print(units_table(view.rows))
    console.print("stages: " + view.totals, markup=False, highlight=False)


def summary_table(groups: Sequence[GroupRow], grouped_by: str = "") -> Any:
    """One row per (group, chain, setting): units, seeds, stages to train / reused / done, steps and cost."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="plan by chain and setting" + (f" (per {grouped_by}: a unit two share counts in both)"
                                                       if grouped_by else ""), title_justify="left")
    columns = ([grouped_by] if grouped_by else []) + ["chain", "setting", "units", "seeds", "train", "reuse",
                                                      "done", "steps", "GPU-h", "now", "evaluates"]
    for col in columns:
        table.add_column(col, justify="right" if col in NUMERIC else "left", overflow="fold")
    for g in groups:  # plain text, never markup: a chain label such as nli-sts[/models/sbert]>tsdae holds brackets
        table.add_row(*(Text(c) for c in ([g.group] if grouped_by else []) + _summary_cells(g)))
    return table


NUMERIC = {"units", "seeds", "train", "reuse", "done", "steps", "GPU-h"}


def _summary_cells(g: GroupRow) -> list[str]:
    if not g.units:  # an untrained baseline: evaluated, nothing to train
        return [g.chain, g.setting, "-", "-", "-", "-", "-", "-", "-", "-", g.evaluates]
    now = ", ".join(f"{n} {s}" for s, n in sorted(g.states.items()))
    return [g.chain, g.setting, str(g.units), str(len(g.seeds)), str(g.train), str(g.reuse), str(g.done),
            f"{g.steps:,}", f"{g.gpu_hours:,.2f}", now, g.evaluates]


def units_table(rows: Sequence[PlanRow]) -> Any:
    """Every unit (and baseline) with its chain, setting, data, seed, steps, poolings, what happens to each of its
    stages (trained, or reused from which unit or home), what it evaluates and its state now."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="units", title_justify="left")
    for col in ("#", "run id", "chain", "setting", "trains on", "seed", "steps", "pooling", "stages", "evaluates",
                "now"):
        table.add_column(col, overflow="fold")  # a narrow terminal folds a run id, never cuts it
    table.add_column("variant", max_width=36, overflow="fold")  # "smoke + max_steps=2 ...", folded
    for r in rows:
        # cells are plain text, never markup: a chain label such as nli-sts[/models/sbert]>tsdae holds brackets
        cells = [str(r.number or ""), r.run_id, r.chain, r.setting, "\n".join(s.trains_on for s in r.stages),
                 "-" if r.seed is None else str(r.seed),
                 " > ".join("?" if s.steps is None else str(s.steps) for s in r.stages) if not r.baseline else "-",
                 " > ".join(s.pooling for s in r.stages), "\n".join(s.text for s in r.stages) if not r.baseline
                 else "-", r.evaluates, r.now, r.variant]
        table.add_row(*(Text(c) for c in cells))
    return table


def plan_out(path: Path | None, rows: Sequence[PlanRow]) -> None:
    """``--plan-out``: every row to ``path`` (CSV or JSON), then say where."""
    if path is None:
        return
    from usebench.plan.plan_rows import write_plan_rows

    write_plan_rows(path, rows)
    click.echo(f"plan: {sum(not r.baseline for r in rows)} unit(s) written to {path}", err=True)
