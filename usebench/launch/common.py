"""What every launcher shares: running one attempt of a unit with its thread budget (in a process of its own
under Ray and SLURM: its job identity, its GPUs, a native crash written to its log), turning a failure into a
reported :class:`~usebench.store.unit_state.UnitResult`, and progress lines on the driver."""
from __future__ import annotations

import faulthandler
import os
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from usebench.errors import BenchError
from usebench.store import read_json
from usebench.store.unit_files import UNIT_LOG
from usebench.run.baseline_job import BaselineJob, run_baseline_job
from usebench.store.locks import JOB_ENV, release_job
from usebench.store.manifest import launch_dir
from usebench.plan.specs import UnitSpec
from usebench.store.unit_files import STAGE_LOCK_DIR
from usebench.run.unit import say
from usebench.store.unit_state import UnitResult
from usebench.store.unit_files import FAILED_FILE

UnitFn = Callable[[UnitSpec, Path, Path], UnitResult]  # run_unit, or a wrapper of it (tests)


class LaunchError(BenchError):
    """The launcher cannot run the units as asked (missing extra, no resources, unreachable cluster)."""


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch threads (intra-op), restoring the previous number; None: unchanged."""
    if n is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask (what srun, a cgroup or taskset gave it), not the
    machine's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this platform
        return os.cpu_count() or 1


def run_attempt(unit_fn: UnitFn, spec: UnitSpec, data_root: Path, results_dir: Path,
                threads: int | None) -> UnitResult:
    """One attempt at ``spec`` in this process (a Ray worker, a SLURM job or the driver itself), with ``threads``
    torch threads, never more than the CPUs this process may use."""
    fn = run_baseline_job if isinstance(spec, BaselineJob) else unit_fn
    with torch_threads(None if threads is None else min(threads, usable_cpus())):
        return fn(spec, Path(data_root), Path(results_dir))


_CRASH_LOGS: list = []  # open for the life of the process: faulthandler writes there on a native crash


def isolated_attempt(unit_fn: UnitFn, spec: UnitSpec, data_root: Path, results_dir: Path, threads: int | None,
                     gpus: int, job: str | None, crash_log: bool = True) -> UnitResult:
    """One attempt in a process that runs only this unit (a Ray worker with max_calls=1, a SLURM job): its job
    identity for the unit's lock, no GPU visible when it has none (neither Ray 2.60 for ``num_gpus=0`` nor a SLURM
    node without device constraints hides them), and (``crash_log``) a native crash's stack written to the unit's
    log. faulthandler is pointed at the log and never disabled: disabling would put back the handlers from before
    it and drop a SIGSEGV handler a JVM (Pyserini) installed meanwhile; the process ends with the unit anyway.
    Called in a process that is not the unit's own (tests), ``crash_log=False`` leaves the handlers alone."""
    if job:
        os.environ[JOB_ENV] = job
    if gpus == 0:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before torch initialises CUDA: the unit trains on the CPU
    if crash_log:
        log = attempt_log(spec, Path(results_dir))
        log.parent.mkdir(parents=True, exist_ok=True)
        _CRASH_LOGS.append(open(log, "a", encoding="utf-8"))  # noqa: SIM115  (kept open on purpose)
        faulthandler.enable(file=_CRASH_LOGS[-1], all_threads=True)  # SIGSEGV/SIGABRT/...: the stack in unit.log
    return run_attempt(unit_fn, spec, data_root, results_dir, threads)


def attempt_log(spec: UnitSpec | BaselineJob, results_dir: Path) -> Path:
    """Where an attempt's output goes: the unit's ``unit.log``; a baseline's log in the launchers' folder."""
    if isinstance(spec, BaselineJob):
        return launch_dir(results_dir) / "baselines" / f"{spec.run_id}.log"
    return Path(results_dir) / spec.run_id / UNIT_LOG


def release_attempt(spec: UnitSpec | BaselineJob, results_dir: Path, job: str) -> list[Path]:
    """Remove every lock that job ``job`` holds for ``spec``: the unit's, and that of each stage the unit trains
    (``<home>/.stage``). Called by a driver that knows the attempt is over (its Ray worker died, its job ended
    without a result, it was cancelled): a process killed in a stage leaves that stage's lock too, and on another
    host nothing can tell its holder is gone, so every unit needing the stage, and the next run, would wait for it
    to be judged stale (``STALE_AFTER_S``). A lock another job holds is left alone. Returns the folders freed."""
    return [folder for folder in lock_folders(spec, results_dir) if release_job(folder, job)]


def lock_folders(spec: UnitSpec | BaselineJob, results_dir: Path) -> list[Path]:
    """The folders whose locks an attempt at ``spec`` may hold: the unit's run directory and each of its stages'
    ``<home>/.stage`` (a baseline job has no stages)."""
    results_dir = Path(results_dir)
    return [results_dir / spec.run_id,
            *(results_dir / stage.home / STAGE_LOCK_DIR for stage in getattr(spec, "stages", ()))]


def failure(spec: UnitSpec, results_dir: Path, error: BaseException | str, attempts: int, since: float,
            launcher_log: Path | None = None) -> UnitResult:
    """A failed unit as reported: the error (the unit's own failure marker, when this launch wrote one, i.e.
    after ``since``, a time.time()), and its log: the unit's console log, or the launcher's log of the job when
    the unit never started."""
    run_dir = Path(results_dir) / spec.run_id
    message = error if isinstance(error, str) else _message(error)
    marker = run_dir / FAILED_FILE
    try:
        if marker.stat().st_mtime >= since - 1:
            message = (read_json(marker) or {}).get("error") or message
    except OSError:
        pass
    log = attempt_log(spec, Path(results_dir))
    return UnitResult(spec.run_id, run_dir, spec.row, state="failed", error=message, attempts=attempts,
                      log=log if log.is_file() else launcher_log)


def _message(error: BaseException) -> str:
    """One line for an exception; a Ray task error is unwrapped to the unit's own exception."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException):
        error = cause
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:500]


def announce(i: int, n: int, spec: UnitSpec, what: str) -> None:
    """A driver progress line about one unit."""
    say(f"[{i}/{n}] {spec.run_id} ({spec.label}, seed {spec.seed}): {what}")

