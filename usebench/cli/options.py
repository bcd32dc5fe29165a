"""Options shared by several `bench` commands."""
from __future__ import annotations

from pathlib import Path

import click

DATA_ROOT = click.option("--data-root", type=click.Path(path_type=Path), default=None,
                         help="Data root (default: $BENCH_DATA or ~/.cache/usebench/data).")
RESULTS_DIR = click.option("--results-dir", type=click.Path(path_type=Path), default=None,
                           help="Results store (default: results/).")



def _deterministic(ctx, param, value: bool) -> bool:
    """Set at parse time, before anything touches CUDA: cuBLAS reads its workspace setting when its first handle is
    made. The environment carries it to every trainer of this process and to the launchers' workers (Ray and
    SLURM forward BENCH_* and CUBLAS_WORKSPACE_CONFIG)."""
    if value:
        import os

        from usebench.train.runtime import DETERMINISTIC_ENV, prepare_deterministic_env

        os.environ[DETERMINISTIC_ENV] = "1"
        prepare_deterministic_env()
    return value


DETERMINISTIC = click.option("--deterministic", is_flag=True, expose_value=False, is_eager=True,
                             callback=_deterministic,
                             help="Deterministic kernels while training (torch.use_deterministic_algorithms, a "
                                  "fixed cuBLAS workspace): a GPU run and its resume agree bit for bit, a few "
                                  "percent slower; as BENCH_DETERMINISTIC=1.")


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
