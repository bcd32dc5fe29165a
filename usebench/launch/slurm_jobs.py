"""What the `slurm` launcher asks of SLURM and of this machine, apart from submitting: the state of a recorded job
(to reattach to it), the cluster's ``MaxArraySize``, this machine's GPUs for the local executor, and the marker of
a requeued unit."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import submitit
from submitit.local.local import LocalJob

from usebench.store import now_iso, write_json_atomic
from usebench.store.locks import owner_alive
from usebench.store.unit_files import FAILED_FILE

# sacct states of a job that will still run or is running (a requeued job is PENDING or REQUEUED again).
ACTIVE = frozenset({"PENDING", "RUNNING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "COMPLETING",
                    "SUSPENDED", "RESIZING", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD"})
DEFAULT_MAX_ARRAY_SIZE = 1001  # SLURM's default MaxArraySize


def job_label(cluster: str, job: Any) -> str:
    """The job identity a unit's lock records for ``job`` (see :class:`usebench.launch.slurm.UnitJob`)."""
    return f"{cluster}:{job.job_id}"


CONTROLLER = "submitit.local._local"  # the module a local-executor job's controller process runs


class ReattachedLocalJob(LocalJob):
    """A local-executor job started by an earlier driver: followed by its controller's pid, as long as that pid
    still runs submitit's controller (pids wrap around: once the controller is gone its pid may name any process,
    which a rerun would otherwise wait for, and interrupt on Ctrl-C)."""

    def done(self, force_check: bool = False) -> bool:  # noqa: ARG002  (submitit's signature)
        return self.paths.result_pickle.exists() or not self.controller_alive()

    def controller_alive(self) -> bool:
        """Whether the job's pid is alive and runs submitit's controller (where /proc shows its command line)."""
        if not owner_alive({"host": socket.gethostname(), "pid": int(self.job_id)}):
            return False
        try:
            command = Path(f"/proc/{int(self.job_id)}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
        except OSError:
            return True  # no /proc (macOS), or gone this instant: the pid is all there is to go by
        return CONTROLLER in command

    def cancel(self, check: bool = True) -> None:  # noqa: ARG002
        if not self.controller_alive():
            return
        try:
            os.kill(int(self.job_id), signal.SIGINT)
        except (ProcessLookupError, ValueError):
            pass


def attach(folder: Path, cluster: str, job_id: str) -> tuple[Any, str]:
    """(job, its state) of a job an earlier driver submitted: SLURM's state from sacct (first word: "CANCELLED by
    0" is CANCELLED; UNKNOWN when sacct does not know it), or RUNNING/FINISHED for a local-executor controller."""
    if cluster == "slurm":
        job = submitit.SlurmJob(folder=folder, job_id=job_id)
        try:
            state = job.get_info(mode="force").get("State") or "UNKNOWN"
        except Exception:  # noqa: BLE001  (sacct missing or failing: nothing to reattach to)
            state = "UNKNOWN"
        return job, state.split()[0].upper() if state.split() else "UNKNOWN"
    job = ReattachedLocalJob(folder=folder, job_id=job_id)
    return job, "FINISHED" if job.done() else "RUNNING"


def max_array_size() -> int:
    """The cluster's MaxArraySize (``scontrol show config``), or SLURM's default where it cannot be read."""
    try:
        out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return DEFAULT_MAX_ARRAY_SIZE
    found = re.search(r"^\s*MaxArraySize\s*=\s*(\d+)", out, re.MULTILINE)
    return max(1, int(found.group(1))) if found else DEFAULT_MAX_ARRAY_SIZE


def local_gpus() -> list[int]:
    """This machine's GPUs as the indices the local executor puts in CUDA_VISIBLE_DEVICES: the ones this process
    may use (its own CUDA_VISIBLE_DEVICES when that lists indices), else 0..N-1."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and all(p.strip().isdigit() for p in visible.split(",") if p.strip()):
        return [int(p) for p in visible.split(",") if p.strip()]
    import torch

    return list(range(torch.cuda.device_count()))


def mark_requeued(run_dir: Path, job: str) -> None:
    """Record that the unit's job was requeued (preempted or out of time): `bench status` shows it requeued and it
    resumes from its train state when the job runs again."""
    if not Path(run_dir).is_dir():
        return
    write_json_atomic(Path(run_dir) / FAILED_FILE, {
        "state": "requeued", "error": f"job {job} was preempted or reached its time limit and was requeued; it "
                                      "resumes from its train state", "at": now_iso()})
