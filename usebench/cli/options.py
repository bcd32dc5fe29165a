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


def _fast_path(ctx, param, value: str | None) -> str | None:
    """Set at parse time as ``$BENCH_FAST_PATH``, so every trainer of this process and the launchers' workers (Ray
    and SLURM forward BENCH_*) take the same step path."""
    if value is not None:
        import os

        from usebench.train.step_path import FAST_PATH_ENV

        os.environ[FAST_PATH_ENV] = value
    return value


FAST_PATH = click.option("--fast-path", type=click.Choice(["auto", "on", "off"]), default=None, expose_value=False,
                         is_eager=True, callback=_fast_path,
                         help="The training step's path: auto (default: the fast path on a GPU - compiled step, "
                              "static shapes, fused optimizer, TF32 for fp32 presets - unless --deterministic), on, "
                              "or off (the eager reference path, bit for bit the CPU loop); as BENCH_FAST_PATH. "
                              "Recorded in each checkpoint's method.json.")


def _log_to(ctx, param, value: str | None) -> str | None:
    """Checked and set at parse time as ``$BENCH_LOG_TO``: every unit of this process and the launchers' workers (Ray
    and SLURM forward BENCH_*) log to the same trackers."""
    if value is not None:
        import os

        from usebench.train.trackers import LOG_TO_ENV, parse_log_to

        os.environ[LOG_TO_ENV] = ",".join(parse_log_to(value)) or "none"
    return value


LOG_TO = click.option("--log-to", default=None, metavar="TRACKER,...", expose_value=False, is_eager=True,
                      envvar="BENCH_LOG_TO", show_envvar=False,
                      callback=_log_to,
                      help="Experiment trackers each training logs to: tensorboard, mlflow, wandb (each its own extra: "
                           "pip install 'usebench[tensorboard]'), offline by default; none for none; as "
                           "$BENCH_LOG_TO. A tracker that cannot start is named once and skipped.")


STEP_TIMES = click.option("--step-times", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                          envvar="BENCH_STEP_TIMES", default=None,
                          help="A `bench doctor --device cuda --json` report: the GPU-hour estimate uses its measured "
                               "step times (ours on the path this run takes, and the lean loop's) instead of the "
                               "assumed utilisation; as $BENCH_STEP_TIMES.")


WIDE_KEY = "usebench.wide"


def _wide(ctx, param, value: bool) -> bool:
    if value:
        ctx.meta[WIDE_KEY] = True  # meta is shared by the whole context tree: print_wide reads it
    return value


WIDE = click.option("--wide", is_flag=True, expose_value=False, callback=_wide,
                    help="Print tables at their natural width on a terminal too (in pipes and logs they always are).")


def fits_terminal() -> bool:
    """Whether output is sized to the terminal: stdout is one and ``--wide`` was not given. In a pipe or a log,
    tables keep their natural width: scripts and logs read whole task and method names."""
    import sys

    ctx = click.get_current_context(silent=True)
    return sys.stdout.isatty() and not (ctx is not None and ctx.meta.get(WIDE_KEY))


def table_console(*renderables):
    """A rich Console for ``renderables``: the terminal's width on a terminal (rich wraps cells to fit), else the
    natural width of the widest (never wrapping or cutting a name to fit 80 columns, rich's width in a pipe)."""
    from rich.console import Console

    if fits_terminal():
        return Console()
    console, unbounded = Console(), Console(width=100_000)
    needed = max((unbounded.measure(r).maximum for r in renderables if not isinstance(r, str)), default=0)
    return Console(width=needed) if needed > console.width else console


def print_wide(*renderables) -> None:
    """Print rich tables sized by :func:`table_console`: to the terminal, or at their natural width in pipes, logs
    and with ``--wide``."""
    console = table_console(*renderables)
    for r in renderables:
        console.print(r)


def echo_fit(text: str, indent: str = "  ") -> None:
    """``click.echo(text)``, each line wrapped to the terminal's width (continued with ``indent``) when output is
    sized to it; whole in pipes and logs."""
    if not fits_terminal():
        click.echo(text)
        return
    import shutil
    import textwrap

    width = shutil.get_terminal_size().columns
    for line in text.splitlines() or [""]:
        lead = line[:len(line) - len(line.lstrip())]
        click.echo(textwrap.fill(line, width=width, subsequent_indent=lead + indent, break_on_hyphens=False)
                   if len(line) > width else line)
