"""The `ray` launcher's behaviour on a real cluster, simulated on a local Ray: one fresh worker per unit, no GPU
visible to a unit given none, the lock of a dead node's attempt taken over by the retry of the same task, Ctrl-C
releasing the locks of force-cancelled tasks, a native crash shown in the unit's log, CPUs sized per GPU node, and
the per-node preflight."""
from __future__ import annotations

import functools
import json
import subprocess
import sys
import time

import pytest

from usebench.launch import LaunchError, LaunchOptions
from usebench.launch.preflight import check_probes, forwarded_env, probe, write_marker
from usebench.run.console import attempts
from usebench.run.grid import run_benchmark
from usebench.store.locks import LOCK_FILE
from tests.launch.helpers import (
    ASSETS, fake_spec, grid_options, hold_as_another_host, kill_once_at_step, record_unit, segfault_unit,
    store_digest,
)

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")

pytestmark = pytest.mark.timeout(900)  # a launcher that hangs fails the test instead


def test_each_unit_gets_a_fresh_worker_no_gpu_and_its_task_id(local_ray, tmp_path, capfd):
    """max_calls=1: two units one after the other run in two processes (a reused worker keeps the CUDA context
    of its first GPU); a unit with no GPU sees CUDA_VISIBLE_DEVICES empty (Ray 2.60 leaves it as it is for
    num_gpus=0); its lock records the Ray task id; the preflight probed the node."""
    from usebench.launch.ray_launcher import RayLauncher

    specs = [fake_spec(f"unit{k}") for k in range(2)]
    launcher = RayLauncher(LaunchOptions(launcher="ray", max_parallel=1, cpus_per_unit=1, gpus_per_unit=0),
                           unit_fn=functools.partial(record_unit, 0.0))
    results = launcher(specs, tmp_path, tmp_path / "results")
    assert [r.state for r in results] == ["done"] * 2
    seen = [json.loads((tmp_path / "results" / s.run_id / "seen.json").read_text()) for s in specs]
    assert len({s["pid"] for s in seen}) == 2, seen
    assert all(s["cuda_visible_devices"] == "" and s["job"].startswith("ray:") and s["threads"] == 1 for s in seen)
    assert "preflight: 1 node(s) import the same code" in capfd.readouterr().err


def test_the_retry_of_a_task_whose_node_died_takes_its_lock_over(tiny_bert_dir, grid_corpus, local_grid,
                                                                 local_ray, tmp_path, monkeypatch):
    """The first attempt is SIGKILLed after step 2 and its lock made to name another host (as a node that died
    leaves it): the retry (same task id) takes the unit over at once and resumes to the same weights. Before,
    the retry saw a fresh foreign lock and the unit ended "locked" with exit 0."""
    from usebench.launch import held
    from usebench.launch.ray_launcher import RayLauncher

    def never_held(self, i, spec):
        raise AssertionError(f"{spec.run_id} was left held instead of taken over")

    monkeypatch.setattr(held.HeldUnits, "add", never_held)
    opts = grid_options(tiny_bert_dir, grid_corpus, methods=("simcse",), seeds=1)
    marker = tmp_path / "killed"
    launcher = RayLauncher(LaunchOptions(launcher="ray", retries=1, cpus_per_unit=1),
                           unit_fn=functools.partial(kill_once_at_step, marker, 2, as_host="dead-node"))
    (unit,) = run_benchmark(opts, ASSETS, tmp_path / "results", execute=launcher).units
    assert marker.is_file() and unit.state == "done" and unit.training == ["resuming from its last train state"]
    assert [a[2] for a in attempts(unit.log)] == ["killed", "ok"]
    assert store_digest(tmp_path / "results")[unit.run_id] == store_digest(local_grid)[unit.run_id]


def test_ctrl_c_releases_the_locks_of_the_tasks_it_force_cancels(local_ray, tmp_path):
    from usebench.launch.ray_launcher import RayLauncher, _Run

    launcher = RayLauncher(LaunchOptions(launcher="ray", cpus_per_unit=1),
                           unit_fn=functools.partial(hold_as_another_host, 120.0))
    run = _Run(launcher, [fake_spec("held")], [(1, 0)], tmp_path, tmp_path)
    run._submit(1)
    lock = tmp_path / "held" / LOCK_FILE
    deadline = time.time() + 60
    while not (lock.is_file() and "far-node" in lock.read_text()) and time.time() < deadline:
        time.sleep(0.2)
    assert "far-node" in lock.read_text()  # a lock no pid check can clear, and its holder is killed
    run._stop()
    assert not lock.exists()


def test_a_native_crash_of_a_worker_is_in_the_units_log(local_ray, tmp_path):
    from usebench.launch.ray_launcher import RayLauncher

    launcher = RayLauncher(LaunchOptions(launcher="ray", cpus_per_unit=1), unit_fn=segfault_unit)
    (result,) = launcher([fake_spec("crash")], tmp_path, tmp_path / "results")
    text = (tmp_path / "results" / "crash" / "unit.log").read_text()
    assert result.state == "failed" and result.log == tmp_path / "results" / "crash" / "unit.log"
    assert "Fatal Python error: Segmentation fault" in text and "segfault_unit" in text  # the stack, by faulthandler
    assert "=== native output of pid" in text  # the worker's own stderr, from the local Ray's logs


def test_a_gpu_units_cpus_come_from_the_gpu_nodes_not_a_cpu_only_head():
    """A 32-CPU head without GPUs and a 96-CPU node with 16 GPUs: 6 CPUs per unit, so all 16 GPUs hold a unit.
    From the cluster's totals (128 / 16 = 8 CPUs) only 12 units fit on the GPU node: 4 GPUs idle."""
    from usebench.launch.ray_launcher import unit_resources

    spec = fake_spec("u")
    nodes = [{"CPU": 32.0}, {"CPU": 96.0, "GPU": 16.0}]
    cpus, gpus = unit_resources(LaunchOptions(launcher="ray"), spec, 100, nodes)
    assert (cpus, gpus) == (6, 1) and 96 // cpus >= 16
    two = [{"CPU": 64.0, "GPU": 8.0}, {"CPU": 32.0, "GPU": 8.0}]  # the smaller share fits every GPU node
    assert unit_resources(LaunchOptions(launcher="ray"), spec, 100, two) == (4, 1)
    assert unit_resources(LaunchOptions(launcher="ray", max_parallel=2), spec, 100, two) == (16, 1)
    cpu_spec = fake_spec("c", device="cpu")
    assert unit_resources(LaunchOptions(launcher="ray"), cpu_spec, 4, nodes) == (32, 0)


def _driver(tmp_path):
    token = write_marker(tmp_path / "results")
    return token, probe(str(tmp_path), str(tmp_path / "results"), token)


def test_the_preflight_names_each_node_that_differs_from_the_driver(tmp_path):
    token, driver = _driver(tmp_path)
    assert driver["marker"] and driver["data_root"] and driver["code_hash"]
    other = {**driver, "host": "gpu-07", "git_sha": "0" * 40, "code": "/home/old/usebench", "marker": False,
             "data_root": False, "caches": {"HF_HOME": False}}
    with pytest.raises(LaunchError) as e:
        check_probes(driver, {"a" * 56: driver, "b" * 56: other})
    text = str(e.value)
    assert "1 node(s)" in text and "gpu-07" in text and "imports other code (/home/old/usebench" in text
    assert "does not see the data root" in text and "results dir must be one folder shared" in text
    assert "no folder at HF_HOME" in text
    check_probes(driver, {"a" * 56: driver})


def test_a_node_with_its_own_results_folder_does_not_see_the_drivers_marker(tmp_path):
    """The probe as a separate process whose results dir is another folder at the same path (simulated: another
    folder), in another working directory."""
    token, _ = _driver(tmp_path)
    elsewhere = tmp_path / "node2"
    (elsewhere / "results").mkdir(parents=True)
    code = ("import json, sys; from usebench.launch.preflight import probe; "
            "print(json.dumps(probe(sys.argv[1], sys.argv[2], sys.argv[3])))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path), str(elsewhere / "results"), token],
                         capture_output=True, text=True, check=True, cwd=elsewhere)
    found = json.loads(out.stdout)
    assert found["marker"] is False and found["data_root"] is True


def test_the_environment_is_forwarded_by_prefix():
    env = {"HF_HOME": "/c/hf", "HF_DATASETS_CACHE": "/c/ds", "SENTENCE_TRANSFORMERS_HOME": "/c/st",
           "HF_HUB_OFFLINE": "1", "BENCH_DATA": "/d", "TOKENIZERS_PARALLELISM": "false", "PATH": "/bin",
           "HOME": "/root", "USEBENCH_JOB_ID": "ray:1", "MLFLOW_TRACKING_URI": "http://mlflow:5000",
           "WANDB_MODE": "online", "BENCH_LOG_TO": "mlflow,wandb"}  # the trackers' settings: --log-to on the workers
    assert forwarded_env(env) == {k: v for k, v in env.items() if k not in ("PATH", "HOME", "USEBENCH_JOB_ID")}


def test_each_local_ray_gets_its_own_short_temp_dir_outside_the_results(tmp_path):
    from usebench.launch.ray_launcher import MAX_TEMP_DIR, run_temp_dir

    a, b = run_temp_dir(), run_temp_dir()
    try:
        assert a != b and len(str(a)) <= MAX_TEMP_DIR and len(str(b)) <= MAX_TEMP_DIR
        assert tmp_path not in a.parents
    finally:
        a.rmdir()
        b.rmdir()
