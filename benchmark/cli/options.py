"""Options shared by several `bench` commands."""
from __future__ import annotations

from pathlib import Path

import click

DATA_ROOT = click.option("--data-root", type=click.Path(path_type=Path), default=None,
                         help="Data root (default: $BENCH_DATA or ~/.cache/usebench/data).")
RESULTS_DIR = click.option("--results-dir", type=click.Path(path_type=Path), default=None,
                           help="Results store (default: results/).")
