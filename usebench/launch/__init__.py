"""How run units are executed: `local` (this process, one after the other), `ray` (Ray tasks on this machine or
a cluster) and `slurm` (SLURM jobs through submitit, or its local executor without SLURM).

Each launcher is an ``execute(units, data_root, results_dir) -> list[UnitResult]`` for
:func:`usebench.run.grid.run_benchmark`, over the same picklable :class:`~usebench.plan.specs.UnitSpec` objects and
the same unit function, :func:`usebench.run.unit.run_unit`; every unit writes only into its own run directory, so
any launcher fills the same store. A unit that fails does not stop the others: it is retried up to ``retries``
times, then returned as a failed :class:`~usebench.store.unit_state.UnitResult` with its error and log. A unit another
process holds is never a final state: it is waited for (:mod:`usebench.launch.held`). Launchers with
``remote = True`` (Ray, SLURM) also get the untrained baselines as jobs
(:class:`~usebench.run.baseline_job.BaselineJob`), so the driver does no cluster work.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from usebench.launch.common import LaunchError, UnitFn
from usebench.launch.options import LAUNCHERS, LaunchOptions, check_device, launch_options
from usebench.plan.specs import UnitSpec
from usebench.run.unit import run_unit
from usebench.store.unit_state import UnitResult

__all__ = ["LAUNCHERS", "LaunchError", "LaunchOptions", "check_device", "launch_options", "make_launcher"]

Execute = Callable[[Sequence[UnitSpec], Path, Path], list[UnitResult]]


def make_launcher(opts: LaunchOptions, unit_fn: UnitFn = run_unit) -> Execute:
    """The ``execute`` of ``opts.launcher`` (its optional packages imported now, so a missing extra is an error
    before any work; Ray and SLURM are contacted only when units run)."""
    if opts.launcher == "ray":
        from usebench.launch.ray_launcher import RayLauncher

        return RayLauncher(opts, unit_fn)
    if opts.launcher == "slurm":
        try:
            from usebench.launch.slurm import SlurmLauncher
        except ModuleNotFoundError as e:
            if (e.name or "").split(".")[0] != "submitit":
                raise
            raise LaunchError("--launcher slurm needs submitit: pip install -e '.[slurm]'") from None
        return SlurmLauncher(opts, unit_fn)
    from usebench.launch.local import LocalLauncher

    return LocalLauncher(opts, unit_fn)
