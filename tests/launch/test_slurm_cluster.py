"""The `slurm` launcher against a fake SLURM (tests/launch/fakeslurm.py: sbatch/scontrol/sacct on the PATH, no job
ever runs) and submitit's local executor: srun gets --cpus-per-task, [slurm.additional] keeps its types, no
--gpus-per-node=0, arrays split at MaxArraySize, a rerun reattaches to pending and running jobs, a failed job's
lock is released before it is submitted again, a requeue is recorded as requeued, the local executor is an
explicit choice that gives each job its own GPU."""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.errors import ConfigError
from usebench.launch import LaunchOptions, launch_options
from usebench.launch.options import SlurmOptions
from usebench.store.locks import LOCK_FILE
from usebench.store.manifest import read_job, record_job
from tests.launch import fakeslurm
from tests.launch.helpers import fake_spec, grid_args, record_unit, segfault_unit

submitit = pytest.importorskip("submitit", reason="the slurm extra is not installed (pip install -e '.[slurm]')")

pytestmark = pytest.mark.timeout(900)  # a launcher that hangs fails the test instead


def _script(opts: LaunchOptions, tmp_path: Path, device: str | None = None) -> str:
    from usebench.launch.slurm import executor_parameters, make_executor

    executor = make_executor(opts, "slurm", tmp_path / "jobs", executor_parameters(opts, "slurm", device))
    return executor._executor._make_submission_file_text("python -m job", "uid")  # submitit's own renderer


def test_srun_gets_the_cpus_and_additional_options_keep_their_types(tmp_path, monkeypatch):
    fakeslurm.install(tmp_path, monkeypatch)
    config = tmp_path / "launch.toml"
    config.write_text('cpus_per_unit = 6\n[slurm]\nmax_requeues = 7\n[slurm.additional]\nrequeue = true\n'
                      'nice = 10\nexclude = "node17"\n')
    opts = launch_options({"launcher": "slurm"}, config)
    script = _script(opts, tmp_path)
    srun = next(line for line in script.splitlines() if line.startswith("srun "))
    assert "--cpus-per-task 6" in srun, srun  # SLURM 22.05+: srun does not inherit it from sbatch
    assert "#SBATCH --requeue\n" in script and "--requeue=True" not in script
    assert "#SBATCH --nice=10" in script and "#SBATCH --exclude=node17" in script
    assert "#SBATCH --gpus-per-node=1" in script
    assert "gpus-per-node" not in _script(opts, tmp_path, device="cpu")  # a CPU job: no --gpus-per-node=0
    from usebench.launch.slurm import make_executor

    assert make_executor(opts, "slurm", tmp_path / "j", {})._executor.max_num_timeout == 7


@pytest.mark.parametrize("line, message", [("requeue = false", "sbatch has no negative form"),
                                           ("exclude = ['a', 'b']", "must be true, a number or a string")])
def test_additional_values_sbatch_would_reject_are_refused(tmp_path, line, message):
    config = tmp_path / "launch.toml"
    config.write_text(f"[slurm.additional]\n{line}\n")
    with pytest.raises(ConfigError, match=message):
        launch_options({}, config)


def test_torch_threads_follow_the_cpus_the_process_may_use(monkeypatch):
    """srun binds the step to the job's CPUs: a unit asked for 8 threads on 1 usable CPU gets 1."""
    import torch

    from usebench.launch.common import run_attempt

    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {3})
    seen = run_attempt(lambda spec, d, r: torch.get_num_threads(), None, Path("."), Path("."), threads=8)
    assert seen == 1


def _run(tmp_path, opts, specs):
    from usebench.launch.slurm import SlurmLauncher, UnitJob, _Run, executor_parameters, make_executor

    launcher = SlurmLauncher(opts, unit_fn=functools.partial(record_unit, 0.0), cluster="slurm")
    params = executor_parameters(opts, "slurm", None)
    executor = make_executor(opts, "slurm", tmp_path / "results" / ".launch" / "slurm", params)
    return _Run(launcher, executor, UnitJob(launcher.unit_fn, 1, 1), specs, tmp_path, tmp_path / "results")


def test_arrays_are_split_at_the_clusters_max_array_size(tmp_path, monkeypatch):
    state = fakeslurm.install(tmp_path, monkeypatch, first_id=700, max_array=3)
    specs = [fake_spec(f"unit{k}") for k in range(7)]
    run = _run(tmp_path, LaunchOptions(launcher="slurm", max_parallel=6), specs)
    run._submit_arrays(list(range(1, 8)))
    scripts = [(state / f"script-{n}.sh").read_text().splitlines() for n in (700, 701, 702)]
    arrays = [[ln for ln in s if "--array" in ln] for s in scripts]
    assert arrays == [["#SBATCH --array=0-2%2"], ["#SBATCH --array=0-2%2"], []]  # 6 shared; the last: a plain job
    assert not (state / "script-703.sh").exists()
    assert [read_job(tmp_path / "results", s.run_id)["job_id"] for s in specs] == [
        "700_0", "700_1", "700_2", "701_0", "701_1", "701_2", "702"]


def test_a_rerun_reattaches_to_pending_and_running_jobs_instead_of_submitting_them_again(tmp_path, monkeypatch):
    """The driver died; its three jobs: 500_0 running, 500_1 pending (requeued), 500_2 failed (its lock, on a
    node that is gone, left behind). The rerun follows the first two and submits only the third, its lock
    released first."""
    import cloudpickle
    from submitit.core.utils import JobPaths

    from usebench.launch import slurm
    from usebench.store.unit_state import UnitResult

    state = fakeslurm.install(tmp_path, monkeypatch, first_id=501)
    monkeypatch.setitem(slurm.POLL_S, "slurm", 0.05)
    results, specs = tmp_path / "results", [fake_spec(f"unit{k}") for k in range(3)]
    for spec, job in zip(specs, ("500_0", "500_1", "500_2")):
        record_job(results, spec.run_id, "submitit-slurm", job, None)
    (results / "unit2").mkdir(parents=True)
    (results / "unit2" / LOCK_FILE).write_text(json.dumps({"host": "gone-node", "pid": 1, "job": "slurm:500_2"}))
    fakeslurm.set_states(state, {"500_0": "RUNNING", "500_1": "PENDING", "500_2": "FAILED"})
    run = _run(tmp_path, LaunchOptions(launcher="slurm"), specs)
    folder = results / ".launch" / "slurm"
    folder.mkdir(parents=True, exist_ok=True)
    for spec, job in zip(specs, ("500_0", "500_1", "501")):  # what the jobs will leave when they finish
        with open(JobPaths(folder, job, 0).result_pickle, "wb") as f:
            cloudpickle.dump(("success", UnitResult(spec.run_id, results / spec.run_id, spec.row)), f)
    done = run.until_done()
    assert [r.state for r in done] == ["done"] * 3
    assert sorted(p.name for p in state.glob("script-*.sh")) == ["script-501.sh"]  # one new submission
    assert read_job(results, "unit2")["job_id"] == "501" and read_job(results, "unit0")["job_id"] == "500_0"
    assert not (results / "unit2" / LOCK_FILE).exists()


def test_a_failed_job_gives_up_its_units_lock_before_the_retry(tmp_path, monkeypatch):
    """The job was OOM-killed on another node: its lock names that job; the retry must not find it held."""
    fakeslurm.install(tmp_path, monkeypatch)
    run = _run(tmp_path, LaunchOptions(launcher="slurm", retries=1), [fake_spec("unit0")])
    lock = tmp_path / "results" / "unit0" / LOCK_FILE
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"host": "gpu-12", "pid": 77, "job": "slurm:600_0"}))

    def result():
        raise RuntimeError("job 600_0 has not produced any output (state: OUT_OF_MEMORY)")

    job = SimpleNamespace(job_id="600_0", done=lambda: True, result=result,
                          paths=SimpleNamespace(stderr=tmp_path / "600_0.err"))
    run.inflight[1], run.attempts[1] = (job, 0.0), 1
    assert run._poll() == [1] and not lock.exists()


def test_a_requeue_is_recorded_as_requeued_not_failed(tiny_bert_dir, grid_corpus, tmp_path, monkeypatch):
    """The job's time limit: submitit's handler calls checkpoint() (requeue) then sys.exit(-1) in the middle of
    training. The unit is marked requeued (bench status: requeued), its lock given up, its train state kept;
    the requeued job (SLURM_RESTART_COUNT=1) resumes it."""
    import usebench.train.loop as loop
    from usebench.launch import slurm
    from usebench.plan.planner import plan_run
    from usebench.store.unit_state import unit_state
    from usebench.run.unit import run_unit
    from tests.launch.helpers import ASSETS, grid_options

    for var, value in (("SUBMITIT_EXECUTOR", "slurm"), ("SLURM_JOB_ID", "4250"), ("SLURM_ARRAY_JOB_ID", "4242"),
                       ("SLURM_ARRAY_TASK_ID", "3"), ("USEBENCH_JOB_ID", ""),
                       ("CUDA_VISIBLE_DEVICES", "")):
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)  # the first attempt: SLURM sets no count yet
    monkeypatch.setattr(slurm, "_REQUEUEING", False)
    (spec,) = plan_run(grid_options(tiny_bert_dir, grid_corpus, methods=("mlm",), seeds=1), ASSETS).units
    # crash_log=False: this is the test process, not a job's own (its native fault handlers stay as they are)
    job, results = slurm.UnitJob(run_unit, threads=1, crash_log=False), tmp_path / "results"
    real = loop.train

    def time_limit_at_step_2(method, cfg, corpus, out_dir, **kw):
        def on_step(step):
            if step == 2:
                job.checkpoint(spec, ASSETS, results)  # what submitit's USR2 handler does, then exits
                sys.exit(-1)
        return real(method, cfg, corpus, out_dir, **{**kw, "on_step": on_step})

    monkeypatch.setattr(loop, "train", time_limit_at_step_2)
    with pytest.raises(SystemExit):
        job(spec, ASSETS, results)
    state = unit_state(results / spec.run_id)
    assert state.state == "requeued" and "requeued" in state.detail and "4242_3" in state.detail
    assert not (results / spec.run_id / LOCK_FILE).exists() and (results / spec.run_id / "train_state").is_dir()
    out = CliRunner().invoke(main, ["status", "--results-dir", str(results)])
    assert "1 requeued" in out.output, out.output
    monkeypatch.setattr(loop, "train", real)
    monkeypatch.setattr(slurm, "_REQUEUEING", False)
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    result = job(spec, ASSETS, results)
    assert result.state == "done" and result.training == ["resuming from its last train state"]
    assert unit_state(results / spec.run_id).state == "done"


def test_without_sbatch_the_slurm_launcher_refuses_instead_of_running_here(tiny_bert_dir, grid_corpus, tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr("usebench.launch.slurm.detect_cluster", lambda: "local")  # no sbatch on the PATH
    result = CliRunner().invoke(main, grid_args(tiny_bert_dir, grid_corpus, tmp_path / "r", "--launcher", "slurm"))
    assert result.exit_code == 2 and "no sbatch/srun on the PATH" in result.output
    assert "--slurm-executor local" in result.output and not (tmp_path / "r").exists()


def test_the_local_executor_runs_one_job_per_gpu_each_on_its_own(tmp_path, monkeypatch):
    """Two GPUs here (simulated: the driver's GPU list; the jobs see CUDA_VISIBLE_DEVICES and, having no real GPU,
    train on the CPU): four GPU units run two at a time, never two on one GPU. Before, every job got GPU 0 and
    as many ran at once as there were CPUs."""
    from usebench.launch.slurm import SlurmLauncher

    monkeypatch.setattr("usebench.launch.slurm.local_gpus", lambda: [0, 1])
    opts = LaunchOptions(launcher="slurm", cpus_per_unit=1, gpus_per_unit=1, slurm=SlurmOptions(executor="local"))
    specs = [fake_spec(f"unit{k}") for k in range(4)]
    results = SlurmLauncher(opts, unit_fn=functools.partial(record_unit, 2.0))(specs, tmp_path, tmp_path / "r")
    assert [r.state for r in results] == ["done"] * 4
    seen = [json.loads((tmp_path / "r" / s.run_id / "seen.json").read_text()) for s in specs]
    assert {s["cuda_visible_devices"] for s in seen} <= {"0", "1"} and all(s["job"].startswith("local:") for s in seen)
    for a in seen:
        for b in seen:
            if a is not b and a["start"] < b["end"] and b["start"] < a["end"]:
                assert a["cuda_visible_devices"] != b["cuda_visible_devices"], (a, b)
    assert max(sum(s["start"] <= t["start"] < s["end"] for s in seen) for t in seen) <= 2


def test_a_rerun_reattaches_to_a_running_local_executor_job(tmp_path):
    """submitit's local executor: the first driver submitted a job and died (simulated: its job object is
    dropped); the rerun follows the job's controller process and collects the unit instead of starting it again."""
    from usebench.launch.slurm import SlurmLauncher, UnitJob, _Run, executor_parameters, make_executor

    opts = LaunchOptions(launcher="slurm", cpus_per_unit=1, gpus_per_unit=0, slurm=SlurmOptions(executor="local"))
    launcher = SlurmLauncher(opts, unit_fn=functools.partial(record_unit, 3.0))
    results, spec = tmp_path / "results", fake_spec("unit0", device="cpu")

    def new_run():
        params = executor_parameters(opts, "local", "cpu")
        executor = make_executor(opts, "local", results / ".launch" / "slurm", params)
        return _Run(launcher, executor, UnitJob(launcher.unit_fn, 1, 0), [spec], tmp_path, results)

    first = new_run()
    first._submit_one(1)
    job_id = read_job(results, "unit0")["job_id"]
    first.inflight.clear()  # the first driver is gone
    second = new_run()
    assert second._reattach(1)
    (result,) = second.until_done()
    assert result.state == "done" and read_job(results, "unit0")["job_id"] == job_id  # nothing submitted again
    assert json.loads((results / "unit0" / "seen.json").read_text())["job"] == f"local:{job_id}"


def test_a_native_crash_of_a_job_is_in_the_units_log(tmp_path):
    """A job that dies of a native crash (a NULL read, as a CUDA or tokenizer bug would) is a failed unit whose
    `unit.log` holds the Python stack of the crash (faulthandler, set up in the job by isolated_attempt), and its
    lock does not outlive it: the same path a SLURM job takes, run by submitit's local executor."""
    from usebench.launch.slurm import SlurmLauncher

    opts = LaunchOptions(launcher="slurm", cpus_per_unit=1, gpus_per_unit=0, slurm=SlurmOptions(executor="local"))
    (result,) = SlurmLauncher(opts, unit_fn=segfault_unit)([fake_spec("crash", device="cpu")], tmp_path,
                                                             tmp_path / "results")
    log = tmp_path / "results" / "crash" / "unit.log"
    text = log.read_text()
    assert result.state == "failed" and result.log == log
    assert "about to crash" in text and "Fatal Python error: Segmentation fault" in text and "segfault_unit" in text
    assert not (tmp_path / "results" / "crash" / LOCK_FILE).exists()
