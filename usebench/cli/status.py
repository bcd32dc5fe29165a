"""`bench status`: the grid from the results store alone. By default what a person acts on: the units per state
(overall and per method or chain), the running units (stage, step, loss, elapsed) and the failed ones (error, log),
and the stages; ``--all`` lists every unit, ``--json`` and ``--csv`` are for scripts."""
from __future__ import annotations

import csv
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from usebench.cli.options import RESULTS_DIR, WIDE, fits_terminal

RUNNING = ("running",)
FAILED = ("failed", "interrupted", "requeued")  # what a person looks at: it stopped, or will resume
DETAILED = ("rescore", "failed", "interrupted", "requeued", "running", "submitted", "missing")  # with a detail line
LISTED = 40  # a grid of at most this many units lists them all without --all: a screenful a person reads
UNIT_COLUMNS = ("run_id", "label", "seed", "state", "stage", "step", "total_steps", "last_loss", "elapsed_s", "log",
                "console", "detail", "warning")


@click.command("status")
@RESULTS_DIR
@click.option("--state", "states", default=None, metavar="STATE,...",
              help="Only units in these states (done, rescore: trained with a result missing or stale, running, "
                   "failed, interrupted, requeued, stopped, submitted, missing).")
@click.option("--all", "all_units", is_flag=True, help="List every unit (state, steps, last loss, elapsed, log) and "
              f"stage, not only the running and failed ones (a grid of up to {LISTED} units is listed anyway).")
@click.option("--json", "as_json", is_flag=True, help="Print the counts, every unit and every stage as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print every unit as CSV (one row per unit).")
@WIDE
def status(results_dir: Path | None, states: str | None, all_units: bool, as_json: bool, as_csv: bool) -> None:
    """The grid's units by state (overall and per method or chain), the running and the failed units, and the
    stages, read from the results store alone."""
    from usebench.errors import BenchError, ConfigError
    from usebench.paths import default_results_dir
    from usebench.store.unit_state import STATES, grid_status, stage_states

    results_dir = Path(results_dir or default_results_dir())
    if not results_dir.is_dir():
        raise BenchError(f"no results store at {results_dir} (give --results-dir)")
    if as_json and as_csv:
        raise ConfigError("--json and --csv: give one of them")
    wanted = {s.strip() for s in states.split(",") if s.strip()} if states else None
    unknown = sorted((wanted or set()) - set(STATES))
    if unknown:
        raise ConfigError(f"--state {','.join(unknown)}: not a state (states: {', '.join(STATES)})")
    units = grid_status(results_dir)
    shown = [u for u in units if wanted is None or u.state in wanted]
    if as_csv:
        _print_csv(shown)
    elif as_json:
        click.echo(json.dumps(_json(results_dir, units, shown, stage_states(results_dir)), indent=1, default=str))
    else:
        _print_status(results_dir, units, shown, stage_states(results_dir), all_units)


def counts(units: list[Any]) -> dict[str, int]:
    """Units per state, states in alphabetical order."""
    out: dict[str, int] = {}
    for u in units:
        out[u.state] = out.get(u.state, 0) + 1
    return dict(sorted(out.items()))


def group_counts(units: list[Any]) -> dict[str, dict[str, int]]:
    """Per method or chain (in the grid's order): units per state."""
    out: dict[str, dict[str, int]] = {}
    for u in units:
        group = out.setdefault(u.label or "?", {})
        group[u.state] = group.get(u.state, 0) + 1
    return out


def _counts_line(what: str, n: int, by_state: dict[str, int]) -> str:
    return f"{n} {what}(s): " + ", ".join(f"{k} {s}" for s, k in by_state.items())


def _print_status(results_dir: Path, units: list[Any], shown: list[Any], stages: list[Any], all_units: bool) -> None:
    from rich.console import Console

    console = Console() if fits_terminal() else Console(width=max(Console().width, 220))  # a log: whole rows
    plain = {"markup": False, "highlight": False}
    console.print(f"bench status: {results_dir}", **plain)
    console.print(_counts_line("unit", len(units), counts(units)), **plain)
    if shown:
        console.print(_groups_table(shown))
    all_units = all_units or len(shown) <= LISTED
    if all_units:
        console.print(_units_table("units", shown))
    else:
        running = [u for u in shown if u.state in RUNNING]
        failed = [u for u in shown if u.state in FAILED]
        if running:
            console.print(_units_table(f"running: {len(running)}", running))
        if failed:
            console.print(_units_table(f"failed, interrupted or requeued: {len(failed)}", failed))
    for u in shown:  # a submitted grid holds thousands of "submitted" lines: those with --all only
        if u.detail and u.state in DETAILED and (all_units or u.state != "submitted"):
            console.print(f"{u.run_id}: {u.state}: {u.detail}", **plain)
        if u.warning:  # a fast-path part that failed mid-run: the unit went on without it
            console.print(f"{u.run_id}: {u.state}: fell back mid-run: {u.warning}", **plain)
    _print_stages(console, stages, all_units)
    if not all_units and len(shown) > sum(u.state in RUNNING + FAILED for u in shown):
        console.print("(bench status --all lists every unit)", **plain)


def _groups_table(units: list[Any]) -> Any:
    """Units per state of each method or chain: one column per state that occurs."""
    from usebench.store.unit_state import STATES

    groups = group_counts(units)
    present = [s for s in STATES if any(s in g for g in groups.values())]
    table = _table("by method or chain", [("method", "left"), ("units", "right")] + [(s, "right") for s in present])
    for label, by_state in groups.items():
        table.add_row(*_texts([label, str(sum(by_state.values()))] + [str(by_state.get(s, "")) for s in present]))
    return table


def _units_table(title: str, units: list[Any]) -> Any:
    """The units with their state, stage, steps, last loss, elapsed time and log."""
    right = ("seed", "steps", "last loss", "elapsed")
    table = _table(title, [(c, "right" if c in right else "left") for c in
                           ("unit", "method", "seed", "state", "stage", "steps", "last loss", "elapsed", "log")])
    for u in units:
        table.add_row(*_texts([u.run_id, u.label, "" if u.seed is None else str(u.seed)]), _coloured(u.state),
                      *_texts([u.stage, _steps(u.step, u.total_steps),
                               "" if u.last_loss is None else f"{u.last_loss:.4f}", _duration(u.elapsed_s),
                               str(u.console or u.log or "")]))
    return table


def _print_stages(console: Any, stages: list[Any], all_stages: bool) -> None:
    """The distinct stages (each trained once, in its home) by state; the running and partial ones (every one with
    --all) with their step and how many units use each."""
    if not stages:
        return
    title = "stages (each trained once; a single method's stage is its unit's run directory)"
    listed = stages if all_stages else [st for st in stages if st.state in ("running", "partial")]
    if listed:
        table = _table(title, [("home", "left"), ("method", "left"), ("state", "left"), ("step", "right"),
                               ("used by", "right")])
        for st in listed:
            table.add_row(*_texts([st.home, st.method]), _coloured(st.state),
                          *_texts(["" if st.step is None else str(st.step), f"{st.used_by} unit(s)"]))
        console.print(table)
    else:
        console.print(title + ":", markup=False, highlight=False)
    console.print(_counts_line("stage", len(stages), counts(stages)), markup=False, highlight=False)


def _json(results_dir: Path, units: list[Any], shown: list[Any], stages: list[Any]) -> dict[str, Any]:
    return {"results_dir": str(results_dir), "counts": counts(units), "groups": group_counts(shown),
            "units": [asdict(u) for u in shown], "stages": [asdict(st) for st in stages]}


def _print_csv(units: list[Any]) -> None:
    writer = csv.DictWriter(sys.stdout, fieldnames=UNIT_COLUMNS, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for u in units:
        writer.writerow({k: "" if v is None else v for k, v in asdict(u).items()})


def _table(title: str, columns: list[tuple[str, str]]) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for header, justify in columns:
        table.add_column(header, justify=justify)
    return table


def _texts(cells: list[str]) -> list[Any]:
    """Plain-text cells, never markup: a path or a chain label may hold brackets."""
    from rich.text import Text

    return [Text(c) for c in cells]


def _coloured(state: str) -> Any:
    """The state in its colour, the word alone (a rich Text)."""
    from rich.text import Text

    colour = {"done": "green", "rescore": "yellow", "running": "cyan", "failed": "red", "interrupted": "red", "stopped": "yellow",
              "requeued": "blue", "submitted": "blue"}.get(state)
    return Text.assemble((state, colour)) if colour else Text(state)


def _steps(step: int | None, total: int | None) -> str:
    if step is None:
        return ""
    return f"{step}/{total}" if total else str(step)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
