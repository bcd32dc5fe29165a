"""`bench status` from the store alone (planned, submitted, running, failed, done units), the lock heartbeat that
lets another host take over a dead unit, and the unit console log."""
from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.store import iter_results, write_json_atomic
from usebench.store import locks as lock_module
from usebench.run.console import attempts, unit_console
from usebench.store.locks import LOCK_FILE, STALE_AFTER_S, UnitLock
from usebench.store.manifest import SCHEMA, record_job
from usebench.store.unit_state import grid_status


def _unit_dir(results: Path, run_id: str, steps_done: int | None, *, method: str = "simcse", seed: int = 0,
              files: tuple[str, ...] = ()) -> Path:
    """A run directory as run_unit leaves it: config.json, log.jsonl up to ``steps_done``, and ``files``."""
    run = results / run_id
    run.mkdir(parents=True)
    write_json_atomic(run / "config.json", {"method": method, "config": {"max_steps": 10}, "seed": seed,
                                            "run_id": run_id})
    if steps_done:
        lines = [{"step": s, "loss": 1.0 / s, "elapsed_s": 2.0 * s} for s in range(1, steps_done + 1)]
        (run / "log.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (run / "unit.log").write_text("=== start ...\n")
    for name in files:
        (run / name).write_text("{}")
    return run


def test_status_shows_every_planned_unit_from_the_store_alone(tmp_path):
    results = tmp_path / "results"
    units = [f"simcse__tiny__0000000{i}__s0" for i in range(5)]
    write_json_atomic(results / ".launch" / "grid-abc.json", {
        "schema": SCHEMA, "written_at": "2026-01-01T00:00:00+00:00", "argv": ["bench", "run"], "launcher": "slurm",
        "units": [{"run_id": u, "label": "simcse", "seed": 0, "task": "stsb", "evals": ["stsb"]} for u in units]})
    _unit_dir(results, units[0], 10, files=("method.json",))
    _unit_dir(results, units[1], 4)
    (results / units[1] / LOCK_FILE).write_text(json.dumps({"host": socket.gethostname(), "pid": os.getppid()}))
    _unit_dir(results, units[2], 3)
    write_json_atomic(results / units[2] / "failed.json", {"state": "failed", "error": "OutOfMemoryError: CUDA"})
    record_job(results, units[3], "submitit-slurm", "4242_3", results / ".launch" / "slurm" / "4242_3_0_log.err")
    _unit_dir(results, "mlm__tiny__99999999__s1", 2, method="mlm", seed=1)  # run earlier, not in the manifest
    (results / "base__minilm__12345678__s0" / "stsb").mkdir(parents=True)  # a `bench eval` store: not a unit

    states = {u.run_id: u for u in grid_status(results)}
    assert [(states[u].state, states[u].step, states[u].total_steps) for u in units] == [
        ("done", 10, 10), ("running", 4, 10), ("failed", 3, 10), ("submitted", None, None), ("missing", None, None)]
    assert states[units[2]].console == results / units[2] / "unit.log" and states[units[1]].elapsed_s == 8.0
    assert "4242_3" in states[units[3]].detail and states[units[3]].console.name == "4242_3_0_log.err"
    assert states["mlm__tiny__99999999__s1"].state == "stopped" and set(states) == {*units, "mlm__tiny__99999999__s1"}

    out = CliRunner().invoke(main, ["status", "--results-dir", str(results)])
    assert out.exit_code == 0, out.output
    assert "6 unit(s): 1 done, 1 failed, 1 missing, 1 running, 1 stopped, 1 submitted" in out.output
    assert "OutOfMemoryError: CUDA" in out.output and "4/10" in out.output and "0:00:08" in out.output
    failed_only = CliRunner().invoke(main, ["status", "--results-dir", str(results), "--state", "failed"])
    assert units[2] in failed_only.output and units[0] not in failed_only.output


def test_status_of_a_store_that_is_not_there_or_a_bad_state_is_an_error(tmp_path):
    out = CliRunner().invoke(main, ["status", "--results-dir", str(tmp_path / "nowhere")])
    assert out.exit_code == 2 and "no results store" in out.output
    out = CliRunner().invoke(main, ["status", "--results-dir", str(tmp_path), "--state", "done,faild"])
    assert out.exit_code == 2 and "--state faild: not a state" in out.output


def test_the_launchers_folder_holds_no_results(tmp_path):
    record_job(tmp_path, "simcse__x__1__s0", "ray", "abc", None)  # .launch/jobs/<run>.json is */*/*.json
    assert list(iter_results(tmp_path)) == []


def test_status_judges_another_hosts_lock_on_the_stores_clock_not_this_machines(tmp_path, monkeypatch):
    """This machine's clock two hours ahead: a lock of another host touched just now is still running, one
    untouched for longer than the stale time (on the store's clock) is not."""
    run = _unit_dir(tmp_path, "simcse__x__1__s0", 3)
    (run / LOCK_FILE).write_text(json.dumps({"host": "node-17", "pid": 1, "since": "then"}))
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 7200)
    assert [u.state for u in grid_status(tmp_path)] == ["running"]
    old = real() - STALE_AFTER_S - 5
    os.utime(run / LOCK_FILE, (old, old))
    assert [u.state for u in grid_status(tmp_path)] == ["stopped"]


def test_the_holder_keeps_its_lock_fresh(tmp_path, monkeypatch):
    monkeypatch.setattr(lock_module, "HEARTBEAT_S", 0.05)
    with UnitLock(tmp_path / "unit") as lock:
        old = time.time() - 3600
        os.utime(lock.path, (old, old))
        deadline = time.time() + 10
        while lock.path.stat().st_mtime < time.time() - 60 and time.time() < deadline:
            time.sleep(0.05)
        assert lock.path.stat().st_mtime > time.time() - 60


def test_the_unit_log_keeps_final_lines_and_the_traceback(tmp_path, capsys):
    with unit_console(tmp_path):
        print("progress 1/3\rprogress 2/3\rprogress 3/3")
        print("a warning", file=sys.stderr)
    with pytest.raises(ValueError):
        with unit_console(tmp_path):
            raise ValueError("bad value in unit")
    text = (tmp_path / "unit.log").read_text()
    assert "progress 3/3\na warning\n" in text and "progress 1/3" not in text
    assert "Traceback" in text and "ValueError: bad value in unit" in text
    assert [a[2] for a in attempts(tmp_path / "unit.log")] == ["ok", "ValueError"]
    assert "progress 1/3" in capsys.readouterr().out  # the terminal still sees everything


def test_a_stream_kept_from_a_finished_unit_writes_into_the_next_units_log(tmp_path):
    with unit_console(tmp_path / "a"):
        kept = sys.stderr  # as a logging handler created during unit a would keep it
    with unit_console(tmp_path / "b"):
        kept.write("from a handler\n")
    assert "from a handler" in (tmp_path / "b" / "unit.log").read_text()
    assert "from a handler" not in (tmp_path / "a" / "unit.log").read_text()


def test_status_reads_the_store_without_importing_torch(tmp_path):
    """`bench status` is run often on a big grid: it reads the store's files and never imports the training engine
    (torch alone took 1.6 of its 2.5 seconds on a store of 1,895 units)."""
    import subprocess

    results = tmp_path / "results"
    run = "simcse__tiny__00000000__s0"
    write_json_atomic(results / ".launch" / "grid-abc.json", {
        "schema": SCHEMA, "written_at": "2026-01-01T00:00:00+00:00", "argv": ["bench", "run"], "launcher": "local",
        "units": [{"run_id": run, "label": "simcse", "seed": 0, "task": "stsb", "evals": ["stsb"]}]})
    _unit_dir(results, run, 10, files=("method.json",))
    code = ("import sys\nfrom usebench.cli.main import main\n"
            f"try:\n    main(['status', '--results-dir', {str(results)!r}])\nexcept SystemExit as e:\n"
            "    assert e.code in (0, None), e.code\n"
            "print('torch imported' if 'torch' in sys.modules else 'no torch')\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert run in done.stdout and "1 unit(s): 1 done" in done.stdout
    assert done.stdout.strip().endswith("no torch"), done.stdout[-500:]


def test_status_names_a_fast_path_part_that_fell_back_mid_run(tmp_path):
    """A compiled step that failed at step 3 went on eagerly (issue 50): the unit is done, and `bench status` says
    what fell back and from which step (log.jsonl's fallback line); the progress comes from the loss lines."""
    results = tmp_path / "results"
    run = _unit_dir(results, "simcse__tiny__00000001__s0", 4, files=("method.json",))
    lines = [json.loads(ln) for ln in (run / "log.jsonl").read_text().splitlines()]
    lines.insert(3, {"step": 3, "event": "fallback", "part": "compile", "error": "OutOfMemoryError: CUDA out of memory"})
    (run / "log.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (state,) = grid_status(results)
    assert (state.state, state.step, state.last_loss) == ("done", 4, 0.25)
    assert state.warning == "compile eager from step 3 (OutOfMemoryError: CUDA out of memory)"
    out = CliRunner().invoke(main, ["status", "--results-dir", str(results)])
    assert "simcse__tiny__00000001__s0: done: fell back mid-run: compile eager from step 3 (OutOfMemoryError: " \
           "CUDA out of memory)" in out.output


def test_a_dev_line_ending_the_log_keeps_the_last_loss(tmp_path):
    from usebench.store.unit_state import unit_state

    run = _unit_dir(tmp_path, "simcse__tiny__00000001__s0", 4)
    with (run / "log.jsonl").open("a") as fh:  # usebench/train/trainlog.py writes a dev score after its step
        fh.write(json.dumps({"step": 4, "dev_score": 0.61, "dev_metric": "main score", "dev_task": "stsb"}) + "\n")
    state = unit_state(run)
    assert (state.step, state.last_loss, state.elapsed_s) == (4, 0.25, 8.0)
