"""The `slurm` launcher: on a cluster the options become the job script's #SBATCH lines. Without SLURM, submitit's
local executor runs the grid as jobs, two at a time, into the same store as `--launcher local`: that grid is run
once, in tests/store/test_store_faults_launchers.py, with a unit killed and the grid restarted."""
from __future__ import annotations

import os

import pytest

from usebench.launch import LaunchOptions, launch_options

submitit = pytest.importorskip("submitit", reason="the slurm extra is not installed (pip install -e '.[slurm]')")


def test_options_become_the_sbatch_script(tmp_path, monkeypatch):
    from usebench.launch.slurm import SlurmLauncher, detect_cluster, executor_parameters

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sbatch", "srun"):  # present but never run: only the job script is rendered
        (bin_dir / tool).write_text("#!/bin/sh\nexit 1\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert detect_cluster() == "slurm" and SlurmLauncher(LaunchOptions(launcher="slurm")).cluster == "slurm"
    config = tmp_path / "launch.toml"
    config.write_text('[slurm]\npartition = "gpu"\naccount = "nlp"\nsetup = ["module load cuda/12.1"]\n'
                      '[slurm.additional]\nexclude = "node17"\n')
    opts = launch_options({"launcher": "slurm", "max_parallel": 4, "slurm_time_min": 90, "slurm_mem_gb": 32.0},
                          config)
    params = executor_parameters(opts, "slurm", device=None)
    assert params["cpus_per_task"] == 8 and params["gpus_per_node"] == 1
    assert "gpus_per_node" not in executor_parameters(opts, "slurm", device="cpu")  # no --gpus-per-node=0 line
    executor = submitit.AutoExecutor(folder=tmp_path / "jobs", cluster="slurm")
    executor.update_parameters(**params)
    script = executor._executor._make_submission_file_text("python -m job", "uid")  # submitit's own renderer
    for line in ("#SBATCH --partition=gpu", "#SBATCH --time=90", "#SBATCH --gpus-per-node=1",
                 "#SBATCH --cpus-per-task=8", "#SBATCH --mem=32GB", "#SBATCH --account=nlp",
                 "#SBATCH --exclude=node17", "#SBATCH --job-name=usebench", "module load cuda/12.1"):
        assert line in script, f"{line!r} not in:\n{script}"


def test_the_local_executor_divides_the_cpus_among_the_jobs():
    from usebench.launch.slurm import executor_parameters

    n = len(os.sched_getaffinity(0))
    params = executor_parameters(LaunchOptions(launcher="slurm", max_parallel=1), "local", device="cpu")
    assert params["cpus_per_task"] == n and "gpus_per_node" not in params and "slurm_partition" not in params
    assert executor_parameters(LaunchOptions(launcher="slurm", max_parallel=2 * n), "local", "cpu")["cpus_per_task"] == 1


def test_a_preempted_job_gives_its_lock_up_before_it_is_requeued(tmp_path):
    from usebench.launch.slurm import UnitJob
    from usebench.store.locks import UnitLock
    from usebench.run.unit import run_unit

    from usebench.store.unit_files import STAGE_LOCK_DIR

    stage = type("Stage", (), {"home": ".stages/nli__ab__s0"})()
    other = type("Stage", (), {"home": ".stages/stsb__cd__s0"})()
    spec = type("Spec", (), {"run_id": "simcse__x__1__s0", "stages": (stage, other)})()
    UnitLock(tmp_path / spec.run_id).acquire()  # as run_unit holds it while training
    UnitLock(tmp_path / stage.home / STAGE_LOCK_DIR).acquire()  # and the lock of the stage it is training
    foreign = tmp_path / other.home / STAGE_LOCK_DIR  # a stage another job is training: its lock stays
    foreign.mkdir(parents=True)
    (foreign / ".lock").write_text('{"host": "node-7", "pid": 1, "job": "slurm:99"}', encoding="utf-8")
    job = UnitJob(run_unit, threads=1)
    resubmission = job.checkpoint(spec, tmp_path, tmp_path)
    assert not (tmp_path / spec.run_id / ".lock").exists()
    assert not (tmp_path / stage.home / STAGE_LOCK_DIR / ".lock").exists()
    assert (foreign / ".lock").exists()
    assert resubmission.function is job and resubmission.args == (spec, tmp_path, tmp_path)
