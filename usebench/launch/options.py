"""How `bench run` hands its units out: the launcher, its limits and its resources, from command-line options
over an optional launcher config file (TOML) over the defaults below. Every key and value is checked before
any unit runs.

A launcher config file holds the same keys as the options (``--max-parallel`` is ``max_parallel``), SLURM's in a
``[slurm]`` table, any other sbatch option in ``[slurm.additional]``::

    launcher = "slurm"
    max_parallel = 16            # units at once (SLURM: the job array's %N throttle)
    retries = 1
    cpus_per_unit = 8
    gpus_per_unit = 1

    [slurm]
    partition = "gpu"
    time_min = 1440              # per job; a job that runs out of time is requeued and resumes
    max_requeues = 3             # time-outs after which submitit stops requeueing a job (its max_num_timeout)
    mem_gb = 32
    setup = ["module load cuda/12.1", "source .venv/bin/activate"]
    executor = "slurm"           # or "local": submitit's local executor on this machine (no SLURM)

    [slurm.additional]           # TOML types kept: true is a flag (--requeue), numbers and strings are values
    exclude = "node17"
    requeue = true
"""
from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args

from usebench.errors import ConfigError

LauncherName = Literal["local", "ray", "slurm"]
LAUNCHERS: tuple[str, ...] = get_args(LauncherName)


@dataclass(frozen=True)
class SlurmOptions:
    """What each SLURM job asks for (besides CPUs and GPUs, which are per unit for every launcher)."""

    partition: str | None = None  # None: the cluster's default partition
    time_min: int = 24 * 60  # per job; on timeout or preemption the job is requeued and the unit resumes
    mem_gb: float | None = None  # None: the partition's default
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    setup: tuple[str, ...] = ()  # shell lines run before the job (module load, activating the environment)
    additional: tuple[tuple[str, Any], ...] = ()  # any other sbatch option: (("exclude", "node17"), ("requeue", True))
    executor: str = "slurm"  # "slurm" (sbatch must be on the PATH) | "local" (submitit's local executor, chosen)
    max_requeues: int = 3  # submitit's max_num_timeout: a job timed out more often than this is not requeued


@dataclass(frozen=True)
class LaunchOptions:
    """The launcher and what it gives each unit."""

    launcher: LauncherName = "local"
    max_parallel: int | None = None  # units at once; None: as many as the resources allow
    retries: int = 0  # a failed unit is run again up to this many times (it resumes from its train state)
    cpus_per_unit: int | None = None  # also the unit's torch threads; None: the launcher divides the CPUs
    gpus_per_unit: int | None = None  # 0 or 1; None: 1 where the unit trains on a GPU
    ray_address: str | None = None  # join this Ray cluster ("auto", "ray://host:10001"); None: start one
    slurm: SlurmOptions = field(default_factory=SlurmOptions)


def launch_options(given: dict[str, Any], config_file: Path | None = None) -> LaunchOptions:
    """Options given on the command line (None: not given) over ``config_file``'s values over the defaults."""
    values: dict[str, Any] = _read_config(config_file) if config_file else {}
    where = f"{config_file}" if config_file else "launcher options"
    if not isinstance(values.get("slurm", {}), dict):
        raise ConfigError(f"{where}: slurm must be a table ([slurm])")
    slurm = {**values.pop("slurm", {}), **{k[6:]: v for k, v in given.items() if k.startswith("slurm_")
                                           and v is not None}}
    values.update({k: v for k, v in given.items() if not k.startswith("slurm_") and v is not None})
    _check_keys(values, [f.name for f in fields(LaunchOptions) if f.name != "slurm"], where)
    _check_keys(slurm, [f.name for f in fields(SlurmOptions)], f"{where} [slurm]")
    if "additional" in slurm:
        slurm["additional"] = _additional(slurm["additional"], where)
    if "setup" in slurm:
        slurm["setup"] = tuple(str(line) for line in slurm["setup"])
    opts = LaunchOptions(**values, slurm=SlurmOptions(**slurm))
    check_launch_options(opts, where)
    return opts


def check_launch_options(opts: LaunchOptions, where: str = "launcher options") -> None:
    """Values no type check catches."""
    if opts.launcher not in LAUNCHERS:
        raise ConfigError(f"{where}: launcher {opts.launcher!r} is not one of {', '.join(LAUNCHERS)}")
    if opts.slurm.executor not in ("slurm", "local"):
        raise ConfigError(f"{where}: slurm.executor must be 'slurm' or 'local', got {opts.slurm.executor!r}")
    mr = opts.slurm.max_requeues
    if isinstance(mr, bool) or not isinstance(mr, int) or mr < 0:
        raise ConfigError(f"{where}: slurm.max_requeues must be an integer >= 0, got {mr!r}")
    for name in ("max_parallel", "cpus_per_unit", "slurm.time_min"):
        value = getattr(opts.slurm, name[6:]) if name.startswith("slurm.") else getattr(opts, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"{where}: {name} must be a positive integer, got {value!r}")
    mem = opts.slurm.mem_gb
    if mem is not None and (isinstance(mem, bool) or not isinstance(mem, (int, float)) or mem <= 0):
        raise ConfigError(f"{where}: slurm.mem_gb must be a positive number, got {mem!r}")
    if isinstance(opts.retries, bool) or not isinstance(opts.retries, int) or opts.retries < 0:
        raise ConfigError(f"{where}: retries must be an integer >= 0, got {opts.retries!r}")
    if opts.gpus_per_unit not in (None, 0, 1):
        raise ConfigError(f"{where}: gpus_per_unit must be 0 or 1 (a unit is one training process; for several "
                          f"GPUs on one unit use torchrun), got {opts.gpus_per_unit!r}")
    if opts.launcher == "local" and (opts.max_parallel or 1) > 1:
        raise ConfigError("--launcher local runs one unit at a time; for units in parallel use --launcher ray "
                          "(one machine or a cluster) or --launcher slurm")
    if opts.ray_address and opts.launcher != "ray":
        raise ConfigError(f"--ray-address needs --launcher ray (got --launcher {opts.launcher})")


def check_device(device: str | None, opts: LaunchOptions) -> None:
    """Ray and SLURM give each unit its own GPU (as cuda:0 inside the unit): a fixed GPU index cannot apply."""
    if opts.launcher != "local" and device and device.startswith("cuda:"):
        raise ConfigError(f"--device {device} with --launcher {opts.launcher}: the launcher assigns each unit its "
                          "GPU; use --device cuda (or leave --device out)")
    if device == "cpu" and opts.gpus_per_unit:
        raise ConfigError("--device cpu with gpus_per_unit=1: a CPU unit would hold a GPU it does not use")
    if device and device.startswith("cuda") and opts.gpus_per_unit == 0:
        raise ConfigError(f"--device {device} with --gpus-per-unit 0: a unit given no GPU cannot train on one "
                          "(it would land on a GPU another unit holds); use --device cpu, or --gpus-per-unit 1")


def _additional(table: Any, where: str) -> tuple[tuple[str, Any], ...]:
    """``[slurm.additional]`` with its TOML types kept, as submitit writes them: ``true`` a bare flag
    (``--requeue``), a number or string ``--key=value``; anything else is refused (sbatch would reject it)."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [slurm.additional] must be a table of sbatch options")
    for key, value in table.items():
        if value is False:
            raise ConfigError(f"{where}: [slurm.additional] {key} = false: sbatch has no negative form; leave the "
                              "key out")
        if not isinstance(value, (bool, int, float, str)):
            raise ConfigError(f"{where}: [slurm.additional] {key} must be true, a number or a string, got "
                              f"{value!r}")
    return tuple(sorted((str(k), v) for k, v in table.items()))


def _read_config(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"launcher config {path}: cannot read it ({e.strerror})") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"launcher config {path}: not valid TOML ({e})") from None


def _check_keys(values: dict[str, Any], known: list[str], where: str) -> None:
    for key in values:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
            raise ConfigError(f"{where}: unknown key {key!r}{hint}")

