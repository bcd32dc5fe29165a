"""The store under faults, units run by the Ray launcher and by submitit's local executor (issue 32).

The grid of ``tests/store/test_store_faults.py`` (4 units, 6 distinct stages) is run by ``--launcher ray`` (a local
Ray the command starts: each unit a Ray task in a worker process of its own) and by ``--launcher slurm
--slurm-executor local`` (each unit a submitit job: a process of its own, no SLURM needed), two units at a time.
One unit's process is SIGKILLed after the first training step of the whole run (``train-step:1``, counted across
the workers by ``USEBENCH_FAULT_SHARED``): it dies holding its unit's lock and its stage's lock, a train state at
step 1 on disk. Under Ray that is a task whose worker died; under submitit a job that ended without a result.
The command must report that unit failed (exit 1) and leave no lock behind; run again without the fault, it must
exit 0, and the store must equal a clean run's exactly as in the local launcher's test.

The clean store is made once, by the local launcher (a module fixture), so the faulty store of each launcher is
compared with a reference its own launcher did not make, and the file costs two Ray start-ups, not three. These are
also each launcher's grid test (issue 57: the launcher matrix once per behaviour): the restart fills the local
launcher's store, never more than ``--max-parallel`` units at once, each job recorded with its launcher, the
launcher's files in the results folder and none in the home directory.
"""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from usebench.run.console import UNIT_LOG, attempts
from usebench.run.faults import SHARED_ENV
from usebench.store.manifest import read_job
from tests.launch.helpers import max_overlap
from tests.store import test_store_faults as local_faults
from tests.store.test_store_faults import _start, assert_same_as_clean, fresh_trainings

two_task_root = local_faults.two_task_root  # the same fixture (pytest finds it by its name in this module)

FAULT = "train-step:1"  # the first training step of the run: unit lock, stage lock and a train state held
TWO_AT_A_TIME = ("--max-parallel", "2", "--cpus-per-unit", "1")
LAUNCHERS = {  # name: (the module it needs, the options that choose it)
    "ray": ("ray", ("--launcher", "ray", *TWO_AT_A_TIME)),
    "submitit-local": ("submitit", ("--launcher", "slurm", "--slurm-executor", "local", *TWO_AT_A_TIME)),
}


@pytest.fixture(scope="module")
def clean_store(tiny_bert_dir, two_task_root, tmp_path_factory) -> Path:
    """The grid run once without faults by the local launcher (one thread per unit, as the launchers below)."""
    results = tmp_path_factory.mktemp("clean") / "results"
    log = results.parent / "clean.log"
    code = _start(tiny_bert_dir, two_task_root, results, None, log, extra=("--cpus-per-unit", "1")).wait(300)
    assert code == 0, log.read_text()[-4000:]
    return results


def unit_output(results: Path) -> str:
    """Everything the units of ``results`` printed, every attempt (their ``unit.log``), without the tails of dead
    workers' own stderr a Ray driver appends there (those repeat the attempt's lines)."""
    out = []
    for log in sorted(results.glob(f"*/{UNIT_LOG}")):
        native = False
        for line in log.read_text(encoding="utf-8").splitlines():
            if line.startswith("=== "):
                native = line.startswith("=== native output of pid ")
            elif not native:
                out.append(line)
    return "\n".join(out) + "\n"


def killed_attempts(results: Path) -> dict[str, list[str]]:
    """Run id -> how each attempt in its unit log ended ("killed": no end line), for units with a killed one."""
    ends = {log.parent.name: [a[2] for a in attempts(log)] for log in results.glob(f"*/{UNIT_LOG}")}
    return {run: e for run, e in ends.items() if "killed" in e}


def _with_extra(name: str):
    """The launcher as a parameter that skips before any fixture runs when its extra is absent (the clean store
    costs a grid run: the README's base install must not pay it for tests that then skip)."""
    module = LAUNCHERS[name][0]
    missing = importlib.util.find_spec(module) is None
    return pytest.param(name, marks=pytest.mark.skipif(missing, reason=f"the {module} extra is not installed"))


@pytest.mark.slow
@pytest.mark.parametrize("launcher", [_with_extra(name) for name in LAUNCHERS])
def test_a_unit_killed_under_a_launcher_is_reported_and_a_restart_equals_a_clean_run(
        launcher, tiny_bert_dir, two_task_root, clean_store, tmp_path):
    options = LAUNCHERS[launcher][1]
    faulty, visits, log, home = tmp_path / "results", tmp_path / "visits", tmp_path / "driver.log", tmp_path / "home"
    home.mkdir()
    t0 = time.monotonic()

    first = _start(tiny_bert_dir, two_task_root, faulty, FAULT, log, extra=options,
                   env={SHARED_ENV: str(visits), "HOME": str(home)})
    assert first.wait(300) == 1, log.read_text()[-4000:]
    t1 = time.monotonic()
    # one process was killed, at the first training step of the run: the unit it ran is reported failed
    assert sorted(p.name for p in visits.iterdir())[0] == "train-step.1"
    pid = (visits / "train-step.1").read_text().split()[1]
    ((killed, ends),) = killed_attempts(faulty).items()  # one unit, one attempt killed (no end line in its log)
    assert ends == ["killed"]
    assert f" pid {pid}\n" in (faulty / killed / UNIT_LOG).read_text()
    driver = log.read_text()
    assert re.search(rf"{re.escape(killed)} .*: failed: ", driver), driver[-4000:]
    assert sum(line.endswith(": failed") or ": failed: " in line for line in driver.splitlines()) == 1
    if launcher == "ray":  # the dead worker's own stderr, copied into the unit's log by the driver
        assert f"=== native output of pid {pid}" in (faulty / killed / UNIT_LOG).read_text()
        # the failure says a worker died (Ray's error), not some other error after it
        (failed,) = [line for line in driver.splitlines() if ": failed: " in line]
        assert "Worker" in failed, failed
    # the launcher knows that process is over: it leaves no lock behind, the unit's nor the stage's it trained
    assert not sorted(faulty.rglob(".lock*")), f"orphan lock: {sorted(faulty.rglob('.lock*'))}"

    second = _start(tiny_bert_dir, two_task_root, faulty, None, log, extra=options, env={"HOME": str(home)})
    assert second.wait(300) == 0, log.read_text()[-4000:]
    t2 = time.monotonic()
    assert killed_attempts(faulty) == {killed: ["killed", "ok"]}  # the restart ran it once more, to the end
    assert "resuming from its last train state" in unit_output(faulty)  # the killed training resumed at step 1
    print(f"{launcher}: 1 fault ({FAULT}), 1 killed ({killed}), 1 restart; first run {t1 - t0:.0f} s (exit 1), "
          f"restart {t2 - t1:.0f} s (exit 0); fresh stage trainings {len(fresh_trainings(unit_output(faulty)))}")
    assert_same_as_clean(faulty, clean_store, tiny_bert_dir, two_task_root, unit_output(faulty))
    assert_launched_as_asked(launcher, faulty, log.read_text(), home)


def assert_launched_as_asked(launcher: str, results: Path, driver: str, home: Path) -> None:
    """What each launcher's own grid test asserted of a clean grid, here of this grid's two runs (each launcher's
    grid is run once, here, not once more in tests/launch): never more than ``--max-parallel`` units at once, each
    unit's job recorded with its launcher, the launcher's files in the results folder and none in the home
    directory. That two units do run at once is tests/launch/test_ray.py's (a rendezvous, timing-free)."""
    assert 1 <= max_overlap(results) <= 2
    runs = [p.name for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert runs
    if launcher == "ray":
        assert re.search(r"started a local Ray in [\d.]+ s \(\d+ CPU, \d+ GPU\)", driver), driver[-4000:]
        assert list((results / ".launch" / "ray").glob("session_*/logs")), "Ray's temp dir is not in the results dir"
        assert all(read_job(results, run)["launcher"] == "ray" for run in runs)
    else:
        assert "submitit (local executor)" in driver and "at most 2 at once" in driver, driver[-4000:]
        for run in runs:  # each job's own stdout/stderr, recorded for `bench status`
            job = read_job(results, run)
            assert job["launcher"] == "submitit-local" and Path(job["log"]).is_file()
            assert Path(job["log"]).parent == results / ".launch" / "slurm"
    assert not list(home.iterdir()), f"files in the home directory: {list(home.rglob('*'))}"


def test_a_driver_frees_the_stage_locks_of_an_attempt_that_is_over(tmp_path):
    """A worker killed on another node in a stage leaves the unit's lock and the stage's; no pid check can clear
    them from here. The driver, which knows the attempt is over, removes both (not only the unit's, which left
    every unit needing the stage waiting ``STALE_AFTER_S``), and leaves a lock another job holds alone."""
    from usebench.launch.common import release_attempt
    from usebench.store.locks import LOCK_FILE
    from usebench.store.unit_files import STAGE_LOCK_DIR

    def lock(folder: Path, job: str) -> Path:
        folder.mkdir(parents=True)
        (folder / LOCK_FILE).write_text(json.dumps({"host": "far-node", "pid": 1, "token": "t", "job": job}))
        return folder / LOCK_FILE

    spec = SimpleNamespace(run_id="chain__x__s0", stages=(SimpleNamespace(home=".stages/nli__a__s0"),
                                                          SimpleNamespace(home=".stages/tsdae__b__s0")))
    unit = lock(tmp_path / spec.run_id, "ray:dead")
    stage = lock(tmp_path / ".stages" / "nli__a__s0" / STAGE_LOCK_DIR, "ray:dead")
    other = lock(tmp_path / ".stages" / "tsdae__b__s0" / STAGE_LOCK_DIR, "ray:alive")  # another unit's worker
    assert release_attempt(spec, tmp_path, "ray:dead") == [unit.parent, stage.parent]
    assert not unit.exists() and not stage.exists() and other.exists()


def test_a_restart_follows_a_killed_jobs_pid_only_while_it_runs_submitits_controller(tmp_path):
    """A restart under submitit's local executor reattaches to the recorded job of a unit by its controller's pid.
    Once that controller is gone its pid may name any process (pids wrap around): the restart must not wait for
    that process as if it were the job, nor interrupt it on Ctrl-C."""
    pytest.importorskip("submitit", reason="the submitit extra is not installed")
    from usebench.launch.slurm_jobs import CONTROLLER, attach

    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    stranger, controller = subprocess.Popen(sleep), subprocess.Popen([*sleep, CONTROLLER])
    try:
        job, state = attach(tmp_path, "local", str(stranger.pid))
        assert state == "FINISHED" and job.done()
        job.cancel()
        with pytest.raises(subprocess.TimeoutExpired):  # not interrupted
            stranger.wait(timeout=0.5)
        assert attach(tmp_path, "local", str(controller.pid))[1] == "RUNNING"  # a controller's pid is followed
    finally:
        for p in (stranger, controller):
            p.kill()
            p.wait()
