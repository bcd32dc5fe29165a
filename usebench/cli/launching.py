"""What the two grid commands (`bench run`, `bench reproduce`) share: their options (:func:`grid_options`, which
hands the command one :class:`GridArgs`), the launch prelude (:func:`launch_prelude`: checks, paths, launcher) and
the list of failed units."""
from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from usebench.cli.dry_run import PLAN_OUT, UNITS
from usebench.cli.options import DATA_ROOT, DETERMINISTIC, FAST_PATH, LOG_TO, RESULTS_DIR, STEP_TIMES

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


_GRID_OPTIONS = (
    click.option("--model", default=None, help="Base model (overrides the preset's; alias minilm works offline)."),
    click.option("--max-steps", type=click.IntRange(min=1), default=None, help="Cap the optimizer steps."),
    click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                 help="Config override (typed, checked); METHOD.KEY=VALUE applies to one method only."),
    click.option("--device", default=None, help="cpu | cuda | cuda:1 (default: cuda when available)."),
    click.option("--batch-size", type=int, default=64, show_default=True, help="Evaluation batch size."),
    click.option("--strict", is_flag=True, help="Missing data is an error instead of a skip."),
    click.option("--force", is_flag=True, help="Re-train and re-evaluate units that already finished (every stored "
                 "result of a retrained unit is dropped: the run names them)."),
    click.option("--nli-sts-model", default=None, metavar="PATH|HF_ID",
                 help="Start the NLI+STSb→target chains (nli-sts>METHOD, --setting adapt-nli-first/all) from this "
                      "published checkpoint (e.g. kwang2049/SBERT-base-nli-stsb-v2, TSDAE paper Table 8) instead of "
                      "training the NLI and STSb stages; recorded in the run id and results."),
    PLAN_OUT, UNITS, STEP_TIMES, DETERMINISTIC, FAST_PATH, LOG_TO, *_LAUNCH_OPTIONS, DATA_ROOT, RESULTS_DIR,
)


@dataclass(frozen=True)
class GridArgs:
    """The options both grid commands take, as given (paths made absolute and defaults filled by
    :func:`launch_prelude`)."""

    model: str | None
    max_steps: int | None
    overrides: tuple[str, ...]
    device: str | None
    batch_size: int
    strict: bool
    force: bool
    nli_sts_model: str | None
    plan_out_path: Path | None
    list_units: bool
    step_times: Path | None
    launcher_config: Path | None
    data_root: Path | None
    results_dir: Path | None
    launch: dict[str, Any]  # LAUNCH_KEYS


def grid_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add the grid commands' shared options to a click command, which receives them as one ``grid`` argument
    (a :class:`GridArgs`) beside its own."""
    names = [fl.name for fl in fields(GridArgs) if fl.name != "launch"]

    @functools.wraps(f)
    def command(**kwargs: Any) -> Any:
        shared = {name: kwargs.pop(name) for name in names}
        shared["overrides"] = tuple(shared["overrides"])
        grid = GridArgs(**shared, launch={k: kwargs.pop(k) for k in LAUNCH_KEYS})
        return f(grid=grid, **kwargs)

    for option in reversed(_GRID_OPTIONS):
        command = option(command)
    return command


@dataclass(frozen=True)
class Launch:
    """What the prelude settled: the model and overrides with local paths made absolute, the data root and results
    store, the launcher's options and its ``execute`` (None where this machine was not checked)."""

    model: str | None
    overrides: tuple[str, ...]
    data_root: Path
    results_dir: Path
    options: Any  # usebench.launch.LaunchOptions
    execute: Any = None


def launch_prelude(grid: GridArgs, here: bool) -> Launch:
    """Everything checked before planning: the batch size, --plan-out's format, the device (this machine's when
    ``here``: the local launcher runs the units; a cluster's GPUs otherwise), torchrun against a launcher, and the
    launcher itself (``here``: a missing extra fails now, before planning)."""
    from usebench.cli.run import absolute_paths
    from usebench.eval.encoder import check_positive, pick_device
    from usebench.launch import check_device, launch_options, make_launcher
    from usebench.paths import default_data_root, default_results_dir
    from usebench.run.plan_rows import check_plan_out

    check_positive(grid.batch_size, "--batch-size")  # before any training: 0 or -4 would evaluate to NaN afterwards
    check_plan_out(grid.plan_out_path)
    model, overrides = absolute_paths(grid.model, grid.overrides)  # a worker elsewhere reads `./ckpt` as a hub id
    lopts = launch_options(grid.launch, grid.launcher_config)
    if here and lopts.launcher == "local":
        pick_device(grid.device)  # this machine runs the units: `--device cuda` without CUDA is a one-line error
    check_device(grid.device, lopts)  # Ray / SLURM: the cluster's GPUs, not the driver's, decide
    _check_torchrun(lopts.launcher)
    return Launch(model, overrides, Path(grid.data_root or default_data_root()),
                  Path(grid.results_dir or default_results_dir()), lopts, make_launcher(lopts) if here else None)


def _check_torchrun(launcher: str) -> None:
    from usebench.errors import ConfigError

    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and launcher != "local":
        raise ConfigError(f"--launcher {launcher} under torchrun: torchrun runs one unit on several GPUs; "
                          "launchers run many units on one GPU each (use one or the other)")


def print_failures(failed: list[UnitResult], results_dir: Path) -> None:
    """The failed units of a run, each with its error and where its log is, and what to do next."""
    click.secho(f"{len(failed)} unit(s) failed:", fg="red", err=True)
    for u in failed:
        tries = f" after {u.attempts} attempts" if u.attempts > 1 else ""
        what = "held by another process: " if u.state == "locked" else ""
        click.echo(f"  {u.run_id}{tries}: {what}{u.error}\n    log: {u.log or u.run_dir}", err=True)
    click.echo(f"Re-running the same command runs only the failed and missing units; `bench status --results-dir "
               f"{results_dir}` shows the grid.", err=True)
