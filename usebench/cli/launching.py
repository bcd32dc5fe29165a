"""The launcher options the two grid commands (`bench run`, `bench reproduce`) share, and the list of failed
units."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click


if TYPE_CHECKING:
    from usebench.store.unit_state import UnitResult

LAUNCH_OPTIONS = (
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
    for option in reversed(LAUNCH_OPTIONS):
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
