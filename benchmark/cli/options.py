"""Options shared by several `bench` commands."""
from __future__ import annotations

from pathlib import Path

import click

DATA_ROOT = click.option("--data-root", type=click.Path(path_type=Path), default=None,
                         help="Data root (default: $BENCH_DATA or ~/.cache/usebench/data).")
RESULTS_DIR = click.option("--results-dir", type=click.Path(path_type=Path), default=None,
                           help="Results store (default: results/).")


def print_wide(*renderables) -> None:
    """Print rich tables at their natural width: never wrap or cut a task or method name to fit 80 columns
    (rich's width when stdout is not a terminal), since such output is read by scripts and logs."""
    from rich.console import Console

    console, unbounded = Console(), Console(width=100_000)
    needed = max((unbounded.measure(r).maximum for r in renderables if not isinstance(r, str)), default=0)
    if needed > console.width:
        console = Console(width=needed)
    for r in renderables:
        console.print(r)
