"""The `slurm` launcher through submitit (``pip install -e '.[slurm]'``): one SLURM job per unit.

On a cluster (``srun``/``sbatch`` on the PATH) the units are submitted at once as one job array, ``max_parallel``
becoming the array's ``%N`` throttle; each job asks for ``cpus_per_unit`` CPUs (default 8, also its torch threads),
``gpus_per_unit`` GPUs (default 1 unless ``--device cpu``), ``slurm.time_min`` minutes, and the partition, memory,
account, QoS, constraint, setup lines and any other sbatch option of the launcher options. A job that is preempted
or runs out of time is requeued by submitit (the unit is a ``Checkpointable``) and resumes from its train state; a
job that fails is submitted again up to ``retries`` times. This command waits for the jobs and then prints the
table; if it is stopped, the jobs go on, `bench status` follows them, and running the command again collects them
(units still running elsewhere are skipped by their lock, finished ones are not resubmitted).

Without SLURM, submitit's local executor runs the same jobs as processes on this machine, at most
``max_parallel`` at once (default: one per CPU), each with ``cpus_per_unit`` threads (default: the CPUs divided
among them): the way this launcher is tested here. Job scripts, pickles and each job's stdout/stderr are in
``<results>/.launch/slurm/``; each unit's own console log is ``<run_dir>/unit.log``.
"""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import submitit

from benchmark.launch.common import UnitFn, announce, failure, run_attempt
from benchmark.launch.options import LaunchOptions
from benchmark.run.lock import release_if_mine
from benchmark.run.manifest import launch_dir, record_job
from benchmark.run.plan import UnitSpec
from benchmark.run.unit import UnitResult, run_unit, say

CLUSTER_CPUS = 8  # default CPUs per job on a cluster: data loading and tokenisation beside one GPU


class UnitJob(submitit.helpers.Checkpointable):
    """The job: one attempt at one unit. Checkpointable, so on preemption or timeout submitit requeues the same
    call, which resumes the unit from its last train state."""

    def __init__(self, unit_fn: UnitFn, threads: int):
        self.unit_fn, self.threads = unit_fn, threads

    def __call__(self, spec: UnitSpec, data_root: Path, results_dir: Path) -> UnitResult:
        return run_attempt(self.unit_fn, spec, data_root, results_dir, self.threads)

    def checkpoint(self, spec: UnitSpec, data_root: Path, results_dir: Path) -> Any:
        """Called in the job when SLURM signals preemption or the time limit: give the unit's lock up (the
        requeued job may start on another node, which could not tell this process is gone), then requeue."""
        release_if_mine(Path(results_dir) / spec.run_id)
        return super().checkpoint(spec, data_root, results_dir)


def detect_cluster() -> str:
    """``slurm`` where SLURM's commands are on the PATH, else submitit's ``local`` executor."""
    return "slurm" if shutil.which("sbatch") and shutil.which("srun") else "local"


def executor_parameters(opts: LaunchOptions, cluster: str, device: str | None) -> dict[str, Any]:
    """submitit parameters for every job of the run (see :class:`~benchmark.launch.options.SlurmOptions`)."""
    if opts.cpus_per_unit:
        cpus = opts.cpus_per_unit
    elif cluster == "slurm":
        cpus = CLUSTER_CPUS
    else:
        n = os.cpu_count() or 1
        cpus = max(1, n // min(opts.max_parallel or n, n))
    gpus = opts.gpus_per_unit if opts.gpus_per_unit is not None else _default_gpus(cluster, device)
    params: dict[str, Any] = {"name": "usebench", "timeout_min": opts.slurm.time_min, "nodes": 1,
                              "tasks_per_node": 1, "cpus_per_task": cpus, "gpus_per_node": gpus}
    if opts.slurm.mem_gb is not None:
        params["mem_gb"] = opts.slurm.mem_gb
    if cluster == "slurm":
        for key in ("partition", "account", "qos", "constraint"):
            if getattr(opts.slurm, key):
                params[f"slurm_{key}"] = getattr(opts.slurm, key)
        if opts.slurm.setup:
            params["slurm_setup"] = list(opts.slurm.setup)
        if opts.slurm.additional:
            params["slurm_additional_parameters"] = dict(opts.slurm.additional)
        if opts.max_parallel:
            params["slurm_array_parallelism"] = opts.max_parallel
    return params


def _default_gpus(cluster: str, device: str | None) -> int:
    if device == "cpu":
        return 0
    if cluster == "slurm" or (device or "").startswith("cuda"):
        return 1
    import torch

    return 1 if torch.cuda.is_available() else 0


class SlurmLauncher:
    """``execute`` for :func:`benchmark.run.grid.run_benchmark`: units as SLURM jobs (or local processes)."""

    name = "slurm"

    def __init__(self, opts: LaunchOptions, unit_fn: UnitFn = run_unit, cluster: str | None = None):
        self.opts, self.unit_fn, self.cluster = opts, unit_fn, cluster or detect_cluster()

    def __call__(self, units: Sequence[UnitSpec], data_root: Path, results_dir: Path) -> list[UnitResult]:
        data_root, results_dir = Path(data_root).resolve(), Path(results_dir).resolve()
        executor = submitit.AutoExecutor(folder=launch_dir(results_dir) / "slurm", cluster=self.cluster)
        params = executor_parameters(self.opts, self.cluster, units[0].device if units else None)
        executor.update_parameters(**params)
        say(f"submitit ({'SLURM' if self.cluster == 'slurm' else 'local executor: no sbatch here'}): "
            f"{len(units)} job(s), {params['cpus_per_task']} CPU and {params['gpus_per_node']} GPU each, "
            f"at most {self.opts.max_parallel or 'all'} at once")
        run = _Run(self, executor, UnitJob(self.unit_fn, params["cpus_per_task"]), units, data_root, results_dir)
        return run.until_done()


class _Run:
    """The submission loop of one launch: submit, poll, retry, collect."""

    def __init__(self, launcher: SlurmLauncher, executor: Any, job_fn: UnitJob, units: Sequence[UnitSpec],
                 data_root: Path, results_dir: Path):
        self.opts, self.cluster, self.executor, self.job_fn = launcher.opts, launcher.cluster, executor, job_fn
        self.units, self.data_root, self.results_dir = list(units), data_root, results_dir
        self.attempts = {i: 0 for i in range(1, len(units) + 1)}
        self.inflight: dict[int, tuple[Any, float]] = {}  # unit number -> (job, submitted at)
        self.done: dict[int, UnitResult] = {}

    def until_done(self) -> list[UnitResult]:
        pending = list(self.attempts)
        if self.cluster == "slurm":  # one array; SLURM throttles it to max_parallel
            self._submit(pending, batch=True)
            pending = []
        limit = self.opts.max_parallel or (os.cpu_count() or 1)
        try:
            while pending or self.inflight:
                room = max(0, limit - len(self.inflight))
                self._submit(pending[:room], batch=False)
                pending = pending[room:]
                time.sleep(0.5 if self.cluster == "local" else 15)
                pending += self._poll()
        except KeyboardInterrupt:
            self._stop()
            raise
        return [self.done[i] for i in sorted(self.done)]

    def _submit(self, numbers: list[int], batch: bool) -> None:
        if not numbers:
            return
        jobs = []
        if batch:
            with self.executor.batch():
                jobs = [self.executor.submit(self.job_fn, self._spec(i), self.data_root, self.results_dir)
                        for i in numbers]
        else:
            jobs = [self.executor.submit(self.job_fn, self._spec(i), self.data_root, self.results_dir)
                    for i in numbers]
        for i, job in zip(numbers, jobs):
            self.attempts[i] += 1
            self.inflight[i] = (job, time.time())
            record_job(self.results_dir, self._spec(i).run_id, f"submitit-{self.cluster}", str(job.job_id),
                       job.paths.stderr)
            announce(i, len(self.units), self._spec(i), f"submitted as job {job.job_id} (attempt {self.attempts[i]})")

    def _poll(self) -> list[int]:
        """Collect finished jobs; returns the units to submit again."""
        again = []
        for i, (job, since) in list(self.inflight.items()):
            if not job.done():
                continue
            del self.inflight[i]
            spec = self._spec(i)
            try:
                result = job.result()
                result.attempts = self.attempts[i]
            except Exception as e:  # noqa: BLE001  (the job failed: the unit raised, or the job died)
                result = failure(spec, self.results_dir, e, self.attempts[i], since, Path(job.paths.stderr))
                if self.attempts[i] <= self.opts.retries:
                    announce(i, len(self.units), spec, f"job {job.job_id} failed ({result.error}); retrying")
                    again.append(i)
                    continue
            self.done[i] = result
            announce(i, len(self.units), spec, f"failed: {result.error}" if result.state == "failed"
                     else f"{result.state} (job {job.job_id}, {result.seconds:.0f} s)")
        return again

    def _spec(self, i: int) -> UnitSpec:
        return self.units[i - 1]

    def _stop(self) -> None:
        if self.cluster == "local":
            for job, _ in self.inflight.values():
                job.cancel(check=False)
        elif self.inflight:
            ids = " ".join(str(job.job_id) for job, _ in self.inflight.values())
            say(f"{len(self.inflight)} SLURM job(s) keep running ({ids}): `bench status` follows them, "
                f"`scancel` stops them; running this command again collects what they finished")
