"""What the driver decides before and after the units run: --force applied once (a retry resumes), a unit
another process holds is waited for (never reported done, never exit 0), contradictory GPU options refused
before anything runs, local paths made absolute, no cluster work (matmul, baseline encoding) on the driver, and
Ray units of a dead driver shown as missing."""
from __future__ import annotations

import json
import os
import socket
import threading
import time

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.errors import ConfigError
from usebench.launch import LaunchOptions, check_device
from usebench.launch.local import LocalLauncher
from usebench.store import locks as lock_module
from usebench.run.console import attempts
from usebench.run.grid import run_benchmark
from usebench.store.locks import LOCK_FILE
from usebench.store.manifest import SCHEMA, record_job
from usebench.store.unit_state import grid_status
from usebench.store import write_json_atomic
from usebench.store.unit_state import UnitResult
from tests.launch.helpers import ASSETS, fail_once_at_step, grid_args, grid_options, store_digest

pytestmark = pytest.mark.timeout(900)  # a launcher that hangs fails the test instead


def test_force_is_applied_once_so_a_retry_resumes_instead_of_starting_over(tiny_bert_dir, grid_corpus,
                                                                          local_grid, tmp_path, monkeypatch):
    """--force --retries 1, the first attempt dies after saving its train state at step 2: the retry resumes
    from it (before, force travelled with the unit and every attempt wiped it and restarted from step 0)."""

    opts = grid_options(tiny_bert_dir, grid_corpus, methods=("mlm",), seeds=1)
    opts = type(opts)(**{**opts.__dict__, "force": True})
    (run_dir,) = [tmp_path / u for u in store_digest(local_grid) if u.startswith("mlm") and u.endswith("s0")]
    run_dir.mkdir(parents=True)
    (run_dir / "method.json").write_text("{}")  # an old finished run: --force must redo it
    (run_dir / "unit.log").write_text("=== start 2020-01-01T00:00:00+00:00 on old pid 1\n")
    fail_once_at_step(monkeypatch, 2)
    outcome = run_benchmark(opts, ASSETS, tmp_path, execute=LocalLauncher(LaunchOptions(retries=1, cpus_per_unit=1)))
    (unit,) = outcome.units
    assert unit.run_dir == run_dir and unit.state == "done" and unit.attempts == 2
    assert unit.training == ["resuming from its last train state"]
    assert store_digest(tmp_path)[unit.run_id] == store_digest(local_grid)[unit.run_id]
    assert "on old pid 1" in (run_dir / "unit.log").read_text()  # the log is kept


def _held_lock(run_dir, touch: threading.Event | None = None) -> threading.Thread | None:
    """A lock of a process on another host (node-17); while ``touch`` is not set, a thread beats for it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / LOCK_FILE).write_text(json.dumps({"host": "node-17", "pid": 4242, "token": "t", "since": "then"}))
    if touch is None:
        return None

    def beat():
        k = 0
        while not touch.wait(0.05):
            k += 1
            os.utime(run_dir / LOCK_FILE, (time.time() + k, time.time() + k))
    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    return thread


def test_a_unit_held_by_a_live_process_elsewhere_is_waited_for_then_run(tiny_bert_dir, grid_corpus, tmp_path,
                                                                       monkeypatch):
    """The holder's heartbeat goes on for a while, so the unit is waited for (not reported "locked" with exit
    0); when the holder stops touching its lock (it died), the lock is taken over and the unit runs."""
    from usebench.launch import held

    monkeypatch.setattr(held, "POLL_S", 0.1)
    monkeypatch.setattr(lock_module, "STALE_AFTER_S", 1.0)
    opts = grid_options(tiny_bert_dir, grid_corpus, methods=("mlm",), seeds=1)
    from usebench.plan.planner import plan_run

    (spec,) = plan_run(opts, ASSETS).units
    stop = threading.Event()
    _held_lock(tmp_path / spec.run_id, stop)
    threading.Timer(1.5, stop.set).start()  # the holder dies after 1.5 s
    t0 = time.monotonic()
    outcome = run_benchmark(opts, ASSETS, tmp_path, execute=LocalLauncher(LaunchOptions(cpus_per_unit=1)))
    (unit,) = outcome.units
    assert unit.state == "done" and time.monotonic() - t0 >= 2.5  # 1.5 s alive + 1 s unchanged
    assert [a[2] for a in attempts(unit.log)][-1] == "ok" and not (unit.run_dir / LOCK_FILE).exists()


def test_a_unit_another_process_finishes_is_collected_not_run_again(tiny_bert_dir, grid_corpus, local_grid, tmp_path,
                                                                    monkeypatch):
    import shutil

    from usebench.launch import held
    from usebench.plan.planner import plan_run

    monkeypatch.setattr(held, "POLL_S", 0.1)
    (spec,) = plan_run(grid_options(tiny_bert_dir, grid_corpus, methods=("mlm",), seeds=1), ASSETS).units
    stop = threading.Event()
    _held_lock(tmp_path / spec.run_id, stop)

    def finish_elsewhere():  # the other process writes the finished unit, then releases its lock
        stop.set()
        for child in (local_grid / spec.run_id).iterdir():
            target = tmp_path / spec.run_id / child.name
            shutil.copytree(child, target) if child.is_dir() else shutil.copyfile(child, target)
        (tmp_path / spec.run_id / LOCK_FILE).unlink()

    threading.Timer(1.0, finish_elsewhere).start()
    opts = grid_options(tiny_bert_dir, grid_corpus, methods=("mlm",), seeds=1)
    (unit,) = run_benchmark(opts, ASSETS, tmp_path, execute=LocalLauncher(LaunchOptions(cpus_per_unit=1))).units
    assert unit.state == "done" and unit.training == ["done earlier"]


def test_the_command_never_exits_0_with_a_unit_left_locked(tiny_bert_dir, grid_corpus, tmp_path, monkeypatch):
    def all_locked(self, units, data_root, results_dir):
        return [UnitResult(u.run_id, results_dir / u.run_id, u.row, state="locked", error="held by pid 9 on far")
                for u in units]

    monkeypatch.setattr(LocalLauncher, "__call__", all_locked)
    result = CliRunner().invoke(main, grid_args(tiny_bert_dir, grid_corpus, tmp_path))
    assert result.exit_code == 1 and "held by another process: held by pid 9 on far" in result.output


def test_contradictory_gpu_options_are_refused_before_anything_runs(tiny_bert_dir, grid_corpus, tmp_path):
    for launcher in ("local", "ray", "slurm"):
        with pytest.raises(ConfigError, match="--gpus-per-unit 0"):
            check_device("cuda", LaunchOptions(launcher=launcher, gpus_per_unit=0))
    args = grid_args(tiny_bert_dir, grid_corpus, tmp_path / "r", "--launcher", "ray", "--gpus-per-unit", "0")
    args[args.index("--device") + 1] = "cuda"
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "a unit given no GPU cannot train on one" in result.output
    assert not (tmp_path / "r").exists()


def test_local_model_paths_are_made_absolute(tmp_path, monkeypatch):
    from usebench.cli.run import absolute_paths

    (tmp_path / "ckpt").mkdir()
    monkeypatch.chdir(tmp_path)
    model, overrides = absolute_paths("ckpt", ("tsdae.model=./ckpt", "lr=1e-5", "model=minilm"))
    assert model == str(tmp_path / "ckpt")
    assert overrides == (f"tsdae.model={tmp_path / 'ckpt'}", "lr=1e-5", "model=minilm")
    assert absolute_paths("bert-base-uncased", ()) == ("bert-base-uncased", ())  # a hub id stays one
    (tmp_path / "dev.txt").write_text("a held-out sentence\n")
    _, overrides = absolute_paths(None, ("dev_corpus=dev.txt", "tsdae.decoder_model=ckpt", "dev_task=stsb"))
    assert overrides == (f"dev_corpus={tmp_path / 'dev.txt'}", f"tsdae.decoder_model={tmp_path / 'ckpt'}",
                         "dev_task=stsb")


def test_the_cost_estimate_measures_nothing_on_a_clusters_driver(grid_corpus, monkeypatch):
    import usebench.plan.planner as plan_module
    from usebench.plan import cost
    from usebench.plan.specs import RunOptions
    from usebench.plan.planner import plan_run

    monkeypatch.setattr(plan_module, "_require_model", lambda name: None)  # as with bert-base-uncased cached
    plan = plan_run(RunOptions(methods=("tsdae",), tasks="stsb", corpus=(grid_corpus,)), ASSETS)
    monkeypatch.setattr(cost, "_matmul_flops", lambda *a: pytest.fail("a matmul on the driver"))
    note = cost.paper_preset_note(plan, "cuda", "slurm")
    assert "not timed on this driver (--launcher slurm" in note and "training FLOPs" in note


def test_baselines_are_handed_to_a_cluster_launcher_not_encoded_on_the_driver(tiny_bert_dir, grid_corpus, tmp_path,
                                                                             monkeypatch):
    from usebench.launch.common import run_attempt
    from usebench.run import grid
    from usebench.run.baseline_job import BaselineJob
    from usebench.plan.specs import RunOptions

    monkeypatch.setattr(grid, "_run_baseline", lambda *a, **k: pytest.fail("the driver evaluated a baseline"))
    given = []

    class Cluster:  # what a Ray or SLURM launcher does, in this process
        remote = True

        def __call__(self, units, data_root, results_dir):
            given.extend(units)
            return [run_attempt(None, u, data_root, results_dir, 1) for u in units]

    opts = RunOptions(methods=("base",), tasks="stsb", model=str(tiny_bert_dir), corpus=(grid_corpus,),
                      device="cpu", show_progress=False)
    outcome = run_benchmark(opts, ASSETS, tmp_path, execute=Cluster())
    assert [type(u) for u in given] == [BaselineJob] and given[0].device == "cpu"
    assert list(outcome.cells) == [(f"base ({tiny_bert_dir})", "stsb")] and not outcome.units


def test_ray_units_of_a_dead_driver_are_missing_not_submitted(tmp_path):
    write_json_atomic(tmp_path / ".launch" / "grid-x.json", {
        "schema": SCHEMA, "written_at": "2026-01-01T00:00:00+00:00", "argv": [], "launcher": "ray",
        "units": [{"run_id": u, "label": "simcse", "seed": 0, "task": "stsb", "evals": ["stsb"]} for u in "ab"]})
    here = socket.gethostname()
    record_job(tmp_path, "a", "ray", "t1", None, driver={"host": here, "pid": os.getpid()})
    record_job(tmp_path, "b", "ray", "t2", None, driver={"host": here, "pid": 2**22 + 7})
    states = {u.run_id: u for u in grid_status(tmp_path)}
    assert states["a"].state == "submitted" and states["b"].state == "missing"
    assert "its driver, pid 4194311" in states["b"].detail and "is gone" in states["b"].detail


def test_a_unit_whose_lock_is_taken_over_stops_training_and_leaves_the_unit_alone(tiny_bert_dir, grid_corpus,
                                                                                 tmp_path, monkeypatch):
    """After step 1 another process takes the unit over (its lock now names another token); the next heartbeat
    sees it, training stops after the step it is in, the unit is returned "locked" (waited for, not failed), no
    failure marker is written over the new holder's unit, and the new holder's lock stays."""
    import usebench.train.loop as loop
    from usebench.plan.planner import plan_run
    from usebench.run.unit import run_unit
    from usebench.store.unit_files import FAILED_FILE

    monkeypatch.setattr(lock_module, "HEARTBEAT_S", 0.05)
    (spec,) = plan_run(grid_options(tiny_bert_dir, grid_corpus, methods=("mlm",), seeds=1), ASSETS).units
    lock, real, steps = tmp_path / spec.run_id / LOCK_FILE, loop.train, []

    def taken_over_after_step_1(method, cfg, corpus, out_dir, **kw):
        check = kw["on_step"]

        def on_step(step: int) -> None:
            steps.append(step)
            if step == 1:
                lock.write_text(json.dumps({"host": "node-17", "pid": 1, "token": "new-holder"}))
                time.sleep(0.5)  # a heartbeat or more
            check(step)
        return real(method, cfg, corpus, out_dir, **{**kw, "on_step": on_step})

    monkeypatch.setattr(loop, "train", taken_over_after_step_1)
    result = run_unit(spec, ASSETS, tmp_path)
    assert result.state == "locked" and "was taken over" in result.error and steps == [1]
    assert not (tmp_path / spec.run_id / FAILED_FILE).exists()
    assert json.loads(lock.read_text())["token"] == "new-holder"
