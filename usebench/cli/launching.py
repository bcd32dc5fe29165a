"""`bench run`'s launcher options, and `bench status` (the grid from the results store alone)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from usebench.cli.options import RESULTS_DIR

if TYPE_CHECKING:
    from usebench.run.unit import UnitResult

_LAUNCH_OPTIONS = (
    click.option("--launcher", type=click.Choice(["local", "ray", "slurm"]), default=None,
                 help="Who runs the units: local (this process, one after the other; the default), ray (Ray tasks "
                      "on this machine or --ray-address), slurm (SLURM jobs through submitit; its local executor "
                      "where there is no sbatch)."),
    click.option("--max-parallel", type=click.IntRange(min=1), default=None,
                 help="Units at once (ray, slurm; default: as many as the CPUs/GPUs allow)."),
    click.option("--retries", type=click.IntRange(min=0), default=None,
                 help="Run a failed unit again up to N times; it resumes from its train state (default 0)."),
    click.option("--cpus-per-unit", type=click.IntRange(min=1), default=None,
                 help="CPUs (and torch threads) per unit (default: the CPUs divided by the units at once; SLURM: 8)."),
    click.option("--gpus-per-unit", type=click.IntRange(0, 1), default=None,
                 help="GPUs per unit (default: 1 where the unit trains on a GPU)."),
    click.option("--ray-address", default=None,
                 help="Join this Ray cluster (auto, ray://head:10001); default: start a local Ray for the run."),
    click.option("--slurm-partition", default=None, help="SLURM partition of the jobs."),
    click.option("--slurm-time", "slurm_time_min", type=click.IntRange(min=1), default=None,
                 help="Time limit per job in minutes (default 1440); a job out of time is requeued and resumes."),
    click.option("--slurm-mem-gb", type=click.FloatRange(min=0, min_open=True), default=None,
                 help="Memory per job in GB (default: the partition's)."),
    click.option("--slurm-account", default=None, help="SLURM account to charge."),
    click.option("--slurm-executor", "slurm_executor", type=click.Choice(["slurm", "local"]), default=None,
                 help="slurm (default: sbatch must be on the PATH) or local: submitit's local executor runs the jobs "
                      "on this machine, at most one per GPU (each its own GPU), or per CPU for CPU units."),
    click.option("--slurm-max-requeues", "slurm_max_requeues", type=click.IntRange(min=0), default=None,
                 help="Time-outs after which a job is no longer requeued (submitit's max_num_timeout; default 3)."),
    click.option("--launcher-config", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                 help="TOML file with these options (max_parallel = 8, [slurm] partition = \"gpu\", setup = [...], "
                      "[slurm.additional] ...); options given here win."),
)
LAUNCH_KEYS = ("launcher", "max_parallel", "retries", "cpus_per_unit", "gpus_per_unit", "ray_address",
               "slurm_partition", "slurm_time_min", "slurm_mem_gb", "slurm_account", "slurm_executor",
               "slurm_max_requeues")


def launch_options_decorator(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add the launcher options to a click command."""
    for option in reversed(_LAUNCH_OPTIONS):
        f = option(f)
    return f


def print_failures(failed: list[UnitResult], results_dir: Path) -> None:
    """The failed units of a run, each with its error and where its log is, and what to do next."""
    click.secho(f"{len(failed)} unit(s) failed:", fg="red", err=True)
    for u in failed:
        tries = f" after {u.attempts} attempts" if u.attempts > 1 else ""
        what = "held by another process: " if u.state == "locked" else ""
        click.echo(f"  {u.run_id}{tries}: {what}{u.error}\n    log: {u.log or u.run_dir}", err=True)
    click.echo(f"Re-running the same command runs only the failed and missing units; `bench status --results-dir "
               f"{results_dir}` shows the grid.", err=True)


@click.command("status")
@RESULTS_DIR
@click.option("--state", "states", default=None, metavar="STATE,...",
              help="Only units in these states (done, running, failed, interrupted, requeued, stopped, submitted, "
                   "missing).")
def status(results_dir: Path | None, states: str | None) -> None:
    """The grid as a table (unit, state, steps, last loss, elapsed, log), read from the results store alone."""
    from rich.console import Console

    from usebench.cli.wide_table import Column, print_table
    from usebench.errors import BenchError, ConfigError
    from usebench.paths import default_results_dir
    from usebench.run.status import STATES, grid_status, stage_states

    results_dir = Path(results_dir or default_results_dir())
    if not results_dir.is_dir():
        raise BenchError(f"no results store at {results_dir} (give --results-dir)")
    wanted = {s.strip() for s in states.split(",") if s.strip()} if states else None
    unknown = sorted((wanted or set()) - set(STATES))
    if unknown:
        raise ConfigError(f"--state {','.join(unknown)}: not a state (states: {', '.join(STATES)})")
    units = grid_status(results_dir)
    shown = [u for u in units if wanted is None or u.state in wanted]
    columns = [Column(col, justify="right" if col in ("seed", "steps", "last loss", "elapsed") else "left")
               for col in ("unit", "method", "seed", "state", "stage", "steps", "last loss", "elapsed", "log")]
    rows = [(u.run_id, u.label, "" if u.seed is None else str(u.seed), _coloured(u.state), u.stage,
             _steps(u.step, u.total_steps), "" if u.last_loss is None else f"{u.last_loss:.4f}",
             _duration(u.elapsed_s), str(u.console or u.log or "")) for u in shown]
    console = Console(width=max(Console().width, 220))
    print_table(console, f"bench status: {results_dir}", columns, rows)  # as rich's Table, in a third of the time
    counts: dict[str, int] = {}
    for u in units:
        counts[u.state] = counts.get(u.state, 0) + 1
    console.print(f"{len(units)} unit(s): " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for u in shown:
        if u.detail and u.state in ("failed", "interrupted", "requeued", "running", "submitted", "missing"):
            console.print(f"{u.run_id}: {u.state}: {u.detail}", markup=False, highlight=False)
        if u.warning:  # a fast-path part that failed mid-run: the unit went on without it
            console.print(f"{u.run_id}: {u.state}: fell back mid-run: {u.warning}", markup=False, highlight=False)
    _print_stages(console, stage_states(results_dir))


def _print_stages(console: Any, stages: list) -> None:
    """The distinct stages (each trained once, in its home), with how many units use each."""
    from usebench.cli.wide_table import Column, print_table

    if not stages:
        return
    columns = [Column(col, justify="right" if col in ("step", "used by") else "left")
               for col in ("home", "method", "state", "step", "used by")]
    rows = [(st.home, st.method, _coloured(st.state), "" if st.step is None else str(st.step),
             f"{st.used_by} unit(s)") for st in stages]
    print_table(console, "stages (each trained once; a single method's stage is its unit's run directory)", columns,
                rows)
    counts: dict[str, int] = {}
    for st in stages:
        counts[st.state] = counts.get(st.state, 0) + 1
    console.print(f"{len(stages)} stage(s): " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))


def _coloured(state: str) -> Any:
    """The state in its colour, the word alone (a rich Text; plain text for a state without one)."""
    from rich.text import Text

    colour = {"done": "green", "running": "cyan", "failed": "red", "interrupted": "red", "stopped": "yellow",
              "requeued": "blue", "submitted": "blue"}.get(state)
    return Text.assemble((state, colour)) if colour else state


def _steps(step: int | None, total: int | None) -> str:
    if step is None:
        return ""
    return f"{step}/{total}" if total else str(step)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
