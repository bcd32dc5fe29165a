"""The `slurm` launcher through submitit (``pip install -e '.[slurm]'``): one SLURM job per unit.

On a cluster (``sbatch`` and ``srun`` on the PATH) the units are submitted at once as job arrays of at most the
cluster's ``MaxArraySize`` jobs, ``max_parallel`` becoming the arrays' ``%N`` throttle (shared among them); each job
asks for ``cpus_per_unit`` CPUs (default 8, also its torch threads, passed to ``srun`` too: SLURM 22.05+ no longer
hands ``--cpus-per-task`` from sbatch to srun), ``gpus_per_unit`` GPUs (default 1 unless ``--device cpu``; no
``--gpus-per-node`` line for a CPU job, whose process sees no GPU), ``slurm.time_min`` minutes, and the partition,
memory, account, QoS, constraint, setup lines and any other sbatch option of the launcher options. A job that
reaches its time limit is requeued by submitit (the unit is a ``Checkpointable``, up to ``slurm.max_requeues``
times) and resumes from its train state, recorded as ``requeued``, not failed; a job preempted with SIGTERM alone
(which submitit ignores) is SIGKILLed and, requeued by SLURM, takes its unit's lock over as a later attempt of the
same job. A job that ends without a result (it failed, or its process was killed) gives up the locks it held, its
unit's and its stage's (:func:`~usebench.launch.common.release_attempt`), and is submitted again up to ``retries``
times. This command waits for the jobs and then prints the table; if it stops, the jobs go on, `bench status`
follows them, and running the command again reattaches to the jobs still pending or running (from their records
in ``.launch/jobs/``) instead of submitting them twice.

Without SLURM nothing runs unless submitit's local executor is chosen (``--slurm-executor local``): it runs the same
jobs as processes on this machine, GPU units at most one per GPU, each job shown only its own GPU, CPU units at
most ``max_parallel`` (default: one per CPU) with the CPUs divided among them. Job scripts, pickles and each job's
stdout/stderr are in ``<results>/.launch/slurm/``; each unit's own console log is ``<run_dir>/unit.log``.
"""
from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import submitit

from usebench.launch.common import (
    LaunchError, UnitFn, announce, failure, isolated_attempt, lock_folders, release_attempt, usable_cpus,
)
from usebench.launch.held import HeldUnits
from usebench.launch.options import LaunchOptions
from usebench.launch.slurm_jobs import ACTIVE, attach, job_label, local_gpus, mark_requeued, max_array_size
from usebench.store.locks import release_if_mine
from usebench.store.manifest import launch_dir, read_job, record_job
from usebench.plan.specs import UnitSpec
from usebench.run.progress import GridProgress
from usebench.run.unit import run_unit, say
from usebench.store.unit_state import UnitResult

CLUSTER_CPUS = 8  # default CPUs per job on a cluster: data loading and tokenisation beside one GPU
POLL_S = {"slurm": 15.0, "local": 0.5}
_REQUEUEING = False  # set in the job when submitit checkpoints it for a requeue (the SystemExit that follows)


class UnitJob(submitit.helpers.Checkpointable):
    """The job: one attempt at one unit. Checkpointable, so on a time-out (SLURM's signal) submitit requeues the
    same call, which resumes the unit from its last train state."""

    def __init__(self, unit_fn: UnitFn, threads: int, gpus: int = 0, crash_log: bool = True):
        self.unit_fn, self.threads, self.gpus, self.crash_log = unit_fn, threads, gpus, crash_log

    def __call__(self, spec: UnitSpec, data_root: Path, results_dir: Path) -> UnitResult:
        env = submitit.JobEnvironment()
        job = f"{env.cluster}:{env.job_id}"  # "slurm:4242_3", "local:<pid>": what the driver records
        try:
            return isolated_attempt(self.unit_fn, spec, data_root, results_dir, self.threads, self.gpus, job,
                                    self.crash_log)
        except SystemExit:
            if _REQUEUEING:  # submitit requeued the job and exits it: the unit is queued, not failed
                mark_requeued(Path(results_dir) / spec.run_id, job)
            raise

    def checkpoint(self, spec: UnitSpec, data_root: Path, results_dir: Path) -> Any:
        """Called in the job when SLURM signals the time limit: give up the unit's lock and those of the stages it
        trains (the requeued job may start on another node, which could not tell this process is gone; a unit of
        another job waiting for the stage would wait until the lock is judged stale), then requeue."""
        global _REQUEUEING
        _REQUEUEING = True
        for folder in lock_folders(spec, results_dir):
            release_if_mine(folder)
        return super().checkpoint(spec, data_root, results_dir)


def detect_cluster() -> str:
    """``slurm`` where SLURM's commands are on the PATH, else ``local`` (submitit's local executor)."""
    return "slurm" if shutil.which("sbatch") and shutil.which("srun") else "local"


def choose_executor(opts: LaunchOptions) -> str:
    """The executor: ``local`` when chosen; else SLURM, which must be here (never a silent fallback)."""
    if opts.slurm.executor == "local":
        return "local"
    if detect_cluster() != "slurm":
        raise LaunchError("--launcher slurm: no sbatch/srun on the PATH (this is not a SLURM login node). To run the "
                          "jobs on this machine through submitit's local executor, choose it: --slurm-executor local "
                          "(one job per GPU, or per CPU for --device cpu)")
    return "slurm"


def executor_parameters(opts: LaunchOptions, cluster: str, device: str | None) -> dict[str, Any]:
    """submitit parameters for every job of the run (see :class:`~usebench.launch.options.SlurmOptions`)."""
    gpus = opts.gpus_per_unit if opts.gpus_per_unit is not None else _default_gpus(cluster, device)
    if opts.cpus_per_unit:
        cpus = opts.cpus_per_unit
    elif cluster == "slurm":
        cpus = CLUSTER_CPUS
    else:
        n = usable_cpus()
        at_once = min(opts.max_parallel or n, n, len(local_gpus()) if gpus else n) or 1
        cpus = max(1, n // at_once)
    params: dict[str, Any] = {"name": "usebench", "timeout_min": opts.slurm.time_min, "nodes": 1,
                              "tasks_per_node": 1, "cpus_per_task": cpus}
    if gpus:  # a CPU job gets no --gpus-per-node=0 line (some clusters reject it; it asks for nothing)
        params["gpus_per_node"] = gpus
    if opts.slurm.mem_gb is not None:
        params["mem_gb"] = opts.slurm.mem_gb
    if cluster == "slurm":
        params["slurm_srun_args"] = ["--cpus-per-task", str(cpus)]  # srun no longer inherits it (22.05+)
        for key in ("partition", "account", "qos", "constraint"):
            if getattr(opts.slurm, key):
                params[f"slurm_{key}"] = getattr(opts.slurm, key)
        if opts.slurm.setup:
            params["slurm_setup"] = list(opts.slurm.setup)
        if opts.slurm.additional:
            params["slurm_additional_parameters"] = dict(opts.slurm.additional)
    return params


def _default_gpus(cluster: str, device: str | None) -> int:
    if device == "cpu":
        return 0
    if cluster == "slurm" or (device or "").startswith("cuda"):
        return 1
    return 1 if local_gpus() else 0


def make_executor(opts: LaunchOptions, cluster: str, folder: Path, params: dict[str, Any]) -> Any:
    """submitit's executor for the run: ``params`` for every job, requeued on time-outs up to
    ``slurm.max_requeues`` times (submitit's ``max_num_timeout``; it fails the job after that)."""
    executor = submitit.AutoExecutor(folder=folder, cluster=cluster, slurm_max_num_timeout=opts.slurm.max_requeues,
                                     local_max_num_timeout=opts.slurm.max_requeues)
    executor.update_parameters(**params)
    return executor


class SlurmLauncher:
    """``execute`` for :func:`usebench.run.grid.run_benchmark`: units as SLURM jobs (or local processes)."""

    name = "slurm"
    remote = True  # the baselines run as jobs too, not on this login node

    def __init__(self, opts: LaunchOptions, unit_fn: UnitFn = run_unit, cluster: str | None = None):
        self.opts, self.unit_fn, self.cluster = opts, unit_fn, cluster or choose_executor(opts)

    def __call__(self, units: Sequence[UnitSpec], data_root: Path, results_dir: Path) -> list[UnitResult]:
        data_root, results_dir = Path(data_root).resolve(), Path(results_dir).resolve()
        params = executor_parameters(self.opts, self.cluster, units[0].device if units else None)
        executor = make_executor(self.opts, self.cluster, launch_dir(results_dir) / "slurm", params)
        gpus = params.get("gpus_per_node", 0)
        if self.cluster == "local" and gpus and not local_gpus():
            raise LaunchError("--slurm-executor local with GPU units, but this machine has no GPU; use --device cpu")
        say(f"submitit ({'SLURM' if self.cluster == 'slurm' else 'local executor'}): {len(units)} job(s), "
            f"{params['cpus_per_task']} CPU and {gpus} GPU each, at most {self._limit(gpus) or 'all'} at once")
        run = _Run(self, executor, UnitJob(self.unit_fn, params["cpus_per_task"], gpus), units, data_root,
                   results_dir)
        return run.until_done()

    def _limit(self, gpus: int) -> int | None:
        """Jobs at once: max_parallel; on this machine also at most one per GPU (GPU units) or per CPU."""
        if self.cluster == "slurm":
            return self.opts.max_parallel
        cap = len(local_gpus()) if gpus else usable_cpus()
        return min(self.opts.max_parallel or cap, cap)


class _Run:
    """The submission loop of one launch: reattach, submit, poll, retry, watch held units, collect."""

    def __init__(self, launcher: SlurmLauncher, executor: Any, job_fn: UnitJob, units: Sequence[UnitSpec],
                 data_root: Path, results_dir: Path):
        self.opts, self.cluster, self.executor, self.job_fn = launcher.opts, launcher.cluster, executor, job_fn
        self.units, self.data_root, self.results_dir = list(units), data_root, results_dir
        self.limit = launcher._limit(job_fn.gpus)
        self.attempts = {i: 0 for i in range(1, len(units) + 1)}
        self.inflight: dict[int, tuple[Any, float]] = {}  # unit number -> (job, submitted at)
        self.gpu_of: dict[int, int] = {}  # local executor: the GPU each running job holds
        self.done: dict[int, UnitResult] = {}
        self.held = HeldUnits(data_root, results_dir, len(units))
        self.progress = GridProgress(units, results_dir)

    def until_done(self) -> list[UnitResult]:
        pending = [i for i in self.attempts if not self._reattach(i)]
        if self.cluster == "slurm":  # arrays; SLURM throttles them to max_parallel
            self._submit_arrays(pending)
            pending = []
        try:
            while pending or self.inflight or self.held:
                room = len(pending) if self.limit is None else max(0, self.limit - len(self.inflight))
                for i in pending[:room]:
                    self._submit_one(i)
                pending = pending[room:]
                time.sleep(POLL_S[self.cluster])
                again = self._poll()
                resubmit, finished = self.held.due()
                self.done.update(finished)
                if self.cluster == "slurm":
                    self._submit_arrays(again + resubmit)
                else:
                    pending += again + resubmit
        except KeyboardInterrupt:
            self._stop()
            raise
        return [self.done[i] for i in sorted(self.done)]

    def _reattach(self, i: int) -> bool:
        """Follow the unit's recorded job if it is still pending or running (a rerun of the driver); a recorded
        job that is over gives up the unit's lock before the unit is submitted again."""
        spec, record = self._spec(i), read_job(self.results_dir, self._spec(i).run_id)
        if not record or record.get("launcher") != f"submitit-{self.cluster}":
            return False
        job, state = attach(self.executor.folder, self.cluster, str(record["job_id"]))
        if state not in ACTIVE:
            release_attempt(spec, self.results_dir, f"{self.cluster}:{record['job_id']}")
            return False
        self.attempts[i] = 1
        self.inflight[i] = (job, time.time())
        announce(i, len(self.units), spec, f"reattached to job {record['job_id']} ({state.lower()}), submitted "
                                           f"{record.get('submitted_at')}")
        return True

    def _submit_arrays(self, numbers: list[int]) -> None:
        """Submit ``numbers`` as job arrays of at most MaxArraySize jobs, the throttle shared among them."""
        if not numbers:
            return
        size = max_array_size()
        chunks = [numbers[k:k + size] for k in range(0, len(numbers), size)]
        if self.opts.max_parallel:
            share = max(1, self.opts.max_parallel // len(chunks))
            self.executor.update_parameters(slurm_array_parallelism=share)
        for chunk in chunks:
            with self.executor.batch():
                jobs = [self.executor.submit(self.job_fn, self._spec(i), self.data_root, self.results_dir)
                        for i in chunk]
            for i, job in zip(chunk, jobs):
                self._submitted(i, job)

    def _submit_one(self, i: int) -> None:
        if self.cluster == "local" and self.job_fn.gpus:
            free = [g for g in local_gpus() if g not in self.gpu_of.values()]
            self.gpu_of[i] = free[0]  # the limit keeps one free for each job submitted
            self.executor._executor.update_parameters(visible_gpus=(free[0],))  # AutoExecutor does not pass it on
        self._submitted(i, self.executor.submit(self.job_fn, self._spec(i), self.data_root, self.results_dir))

    def _submitted(self, i: int, job: Any) -> None:
        self.attempts[i] += 1
        self.inflight[i] = (job, time.time())
        record_job(self.results_dir, self._spec(i).run_id, f"submitit-{self.cluster}", str(job.job_id),
                   job.paths.stderr)
        gpu = f" on GPU {self.gpu_of[i]}" if i in self.gpu_of else ""
        announce(i, len(self.units), self._spec(i), f"submitted as job {job.job_id}{gpu} (attempt {self.attempts[i]})")

    def _poll(self) -> list[int]:
        """Collect finished jobs; returns the units to submit again."""
        again = []
        for i, (job, since) in list(self.inflight.items()):
            if not job.done():
                continue
            del self.inflight[i]
            self.gpu_of.pop(i, None)
            spec = self._spec(i)
            try:
                result = job.result()
                result.attempts = self.attempts[i]
            except Exception as e:  # noqa: BLE001  (the job failed: the unit raised, or the job died)
                release_attempt(spec, self.results_dir, job_label(self.cluster, job))  # the job is over
                result = failure(spec, self.results_dir, e, self.attempts[i], since, Path(job.paths.stderr))
                if self.attempts[i] <= self.opts.retries:
                    announce(i, len(self.units), spec, f"job {job.job_id} failed ({result.error}); retrying")
                    again.append(i)
                    continue
            if result.state == "locked":
                self.held.add(i, spec)
                continue
            self.done[i] = result
            announce(i, len(self.units), spec, self.progress.finished(spec, result, running=len(self.inflight) + 1,
                                                                      where=f"job {job.job_id}"))
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
                f"`scancel` stops them; running this command again reattaches to them")

