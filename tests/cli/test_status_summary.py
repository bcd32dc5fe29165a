"""`bench status` on a grid larger than a screen: counts by state (overall and per method), the running units (step,
loss, elapsed) and the failed ones (error, log); --all lists every unit, --json and --csv are for scripts; a unit's
log.jsonl is read from its end."""
from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

import usebench.cli.status as status_cmd
import usebench.store.unit_state as status_module
from usebench.cli.main import main
from usebench.store.locks import LOCK_FILE
from usebench.store.manifest import SCHEMA
from usebench.store.unit_state import unit_state
from usebench.store import write_json_atomic
from tests.store.test_status import _unit_dir

UNITS = {"simcse__t__00000000__s0": ("simcse", "done"), "simcse__t__00000000__s1": ("simcse", "running"),
         "mlm__t__00000001__s0": ("mlm", "failed"), "mlm__t__00000001__s1": ("mlm", "missing")}


@pytest.fixture()
def store(tmp_path):
    """A grid of four units: done, running (a live lock of this process' parent), failed, not started."""
    import os
    import socket

    results = tmp_path / "results"
    write_json_atomic(results / ".launch" / "grid-abc.json", {
        "schema": SCHEMA, "written_at": "2026-01-01T00:00:00+00:00", "argv": ["bench", "run"], "launcher": "local",
        "units": [{"run_id": u, "label": m, "seed": int(u[-1]), "task": "stsb", "evals": ["stsb"]}
                  for u, (m, _) in UNITS.items()]})
    ids = list(UNITS)
    _unit_dir(results, ids[0], 10, files=("method.json",))
    _unit_dir(results, ids[1], 4, seed=1)
    (results / ids[1] / LOCK_FILE).write_text(json.dumps({"host": socket.gethostname(), "pid": os.getppid()}))
    _unit_dir(results, ids[2], 3, method="mlm")
    write_json_atomic(results / ids[2] / "failed.json", {"state": "failed", "error": "OutOfMemoryError: CUDA"})
    return results


def test_the_default_shows_counts_the_running_and_the_failed_units(store, monkeypatch):
    monkeypatch.setattr(status_cmd, "LISTED", 2)  # the grid is "larger than a screen"
    out = CliRunner().invoke(main, ["status", "--results-dir", str(store)])
    assert out.exit_code == 0, out.output
    assert "4 unit(s): 1 done, 1 failed, 1 missing, 1 running" in out.output
    group_rows = [" ".join(line.replace("│", " ").split()) for line in out.output.splitlines()]
    assert "simcse 2 1 1" in group_rows and "mlm 2 1 1" in group_rows  # units, then done/running/failed/missing
    assert "simcse__t__00000000__s1" in out.output and "4/10" in out.output and "0:00:08" in out.output
    assert "mlm__t__00000001__s0: failed: OutOfMemoryError: CUDA" in out.output
    assert str(store / "mlm__t__00000001__s0" / "unit.log") in out.output  # the failed unit's log
    assert "simcse__t__00000000__s0" not in out.output and "mlm__t__00000001__s1" not in out.output
    assert "bench status --all" in out.output
    every = CliRunner().invoke(main, ["status", "--results-dir", str(store), "--all"])
    assert all(u in every.output for u in UNITS)


def test_json_and_csv_for_scripts(store):
    out = CliRunner().invoke(main, ["status", "--results-dir", str(store), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["counts"] == {"done": 1, "failed": 1, "missing": 1, "running": 1}
    assert data["groups"] == {"simcse": {"done": 1, "running": 1}, "mlm": {"failed": 1, "missing": 1}}
    assert {u["run_id"]: u["state"] for u in data["units"]} == {u: s for u, (_, s) in UNITS.items()}
    running = next(u for u in data["units"] if u["state"] == "running")
    assert (running["step"], running["total_steps"], running["last_loss"], running["elapsed_s"]) == (4, 10, 0.25, 8.0)

    out = CliRunner().invoke(main, ["status", "--results-dir", str(store), "--csv", "--state", "failed,running"])
    rows = list(csv.DictReader(io.StringIO(out.output)))
    assert [(r["run_id"], r["state"], r["step"]) for r in rows] == [("simcse__t__00000000__s1", "running", "4"),
                                                                  ("mlm__t__00000001__s0", "failed", "3")]
    assert rows[1]["detail"] == "OutOfMemoryError: CUDA"
    both = CliRunner().invoke(main, ["status", "--results-dir", str(store), "--csv", "--json"])
    assert both.exit_code == 2 and "give one of them" in both.output


def test_only_the_tail_of_a_log_is_read(tmp_path, monkeypatch):
    """A log longer than the tail: its head (here not even JSON) is never parsed; a fast-path fallback before the
    tail comes from the finished export's method.json."""
    run = _unit_dir(tmp_path, "simcse__t__00000002__s0", None, files=())
    lines = [json.dumps({"step": s, "loss": 1.0 / s, "elapsed_s": 2.0 * s}) for s in range(1, 201)]
    (run / "log.jsonl").write_text("not json: the head of a large log\n" + "\n".join(lines) + "\n")
    (run / "checkpoint").mkdir()
    write_json_atomic(run / "checkpoint" / "method.json", {"step_path": {"fallbacks": [
        {"part": "compile", "step": 3, "error": "OutOfMemoryError"}]}})
    monkeypatch.setattr(status_module, "TAIL_BYTES", 500)
    state = unit_state(run)
    assert (state.step, state.last_loss, state.elapsed_s) == (200, 1 / 200, 400.0)
    assert state.warning == "compile eager from step 3 (OutOfMemoryError)"
    assert (run / "log.jsonl").stat().st_size > 10 * 500
