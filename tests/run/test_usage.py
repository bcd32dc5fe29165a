"""usage.json's memory: a unit's own peak is measured from its start (VmHWM reset), not the process' peak so far."""
from __future__ import annotations

import json
import sys

import pytest

from usebench.run.usage import UsageClock, peak_rss_mb, reset_peak_rss

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self: Linux only")


def test_a_reset_peak_forgets_an_earlier_larger_allocation():
    assert reset_peak_rss()
    base = peak_rss_mb()
    block = b"\x01" * (300 * 1024 * 1024)  # 300 MiB written, so resident (a zeroed block may not be)
    high = peak_rss_mb()
    del block
    assert high - base > 250
    assert reset_peak_rss()
    assert peak_rss_mb() < high - 250  # the next unit is not charged with the 300 MiB


def test_the_usage_record_holds_the_units_own_peak_not_an_earlier_units(tmp_path):
    block = b"\x01" * (200 * 1024 * 1024)
    before = peak_rss_mb()  # an earlier unit's 200 MiB, held before this unit started
    del block
    UsageClock().record(tmp_path, ["training"])
    UsageClock().record(tmp_path, [])  # a resumed unit: one entry per attempt
    first, second = json.loads((tmp_path / "usage.json").read_text())["attempts"]
    assert first["unit_peak_rss_mb"] < before - 150 and "process_peak_rss_mb" not in first
    assert first["training"] == ["training"] and second["training"] == [] and first["wall_s"] >= 0


def test_without_the_reset_the_process_peak_is_recorded_under_its_own_name(tmp_path):
    from usebench.run.usage import record_usage

    record_usage(tmp_path, 1.0, 2.0, [], None)
    (attempt,) = json.loads((tmp_path / "usage.json").read_text())["attempts"]
    assert attempt["process_peak_rss_mb"] > 0 and "unit_peak_rss_mb" not in attempt


def test_an_attempt_is_an_entry_from_its_start_and_a_killed_one_is_counted_with_its_last_heartbeat(tmp_path,
                                                                                               monkeypatch):
    """A unit killed with kill -9 leaves its entry running; the next attempt marks it killed, and the page sums
    every attempt's time (the killed one's up to its last heartbeat)."""
    import time

    import usebench.run.usage as usage

    monkeypatch.setattr(usage, "HEARTBEAT_S", 0.05)
    killed = UsageClock()
    killed.begin(tmp_path)
    time.sleep(0.3)  # heartbeats rewrite the entry; then the process "dies": no record, no end
    killed._stop.set()
    killed._beat.join()
    (entry,) = json.loads((tmp_path / "usage.json").read_text())["attempts"]
    assert entry["state"] == "running" and entry["wall_s"] >= 0.1
    again = UsageClock()
    again.begin(tmp_path)
    again.record(tmp_path, ["resumed at 200"])
    first, second = json.loads((tmp_path / "usage.json").read_text())["attempts"]
    assert first["state"] == "killed" and first["wall_s"] == entry["wall_s"]
    assert second["state"] == "finished" and second["training"] == ["resumed at 200"]
    failed = UsageClock()
    failed.begin(tmp_path)
    failed.end(tmp_path, "failed")
    assert json.loads((tmp_path / "usage.json").read_text())["attempts"][-1]["state"] == "failed"


def test_other_processes_cpu_time_is_measured_and_flags_an_attempt_beside_other_work(tmp_path):
    """others_cpu_s = the machine's busy time (/proc/stat) minus this process' CPU time: a busy child process (other
    work) shows up there, and the attempt is flagged; a quiet attempt's share stays under the threshold here only if
    the machine is idle, so the flag is computed from recorded numbers by hand."""
    import subprocess
    import time

    from usebench.run.usage import BESIDE_SHARE, beside_other_work

    clock = UsageClock()
    clock.begin(tmp_path)
    busy = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 1.0: pass"])
    busy.wait()
    time.sleep(0.05)
    clock.record(tmp_path, [])
    (attempt,) = json.loads((tmp_path / "usage.json").read_text())["attempts"]
    assert attempt["others_cpu_s"] >= 0.7 and attempt["machine_cores"] >= 1  # the child's second of CPU
    assert beside_other_work(attempt) is (attempt["others_cpu_s"] / (attempt["wall_s"] * attempt["machine_cores"])
                                          > BESIDE_SHARE)
    assert beside_other_work({"wall_s": 100.0, "others_cpu_s": 30.0, "machine_cores": 2}) is True  # 15% of 2 cores
    assert beside_other_work({"wall_s": 100.0, "others_cpu_s": 10.0, "machine_cores": 2}) is False
    assert beside_other_work({"wall_s": 100.0, "cpu_s": 150.0}) is None  # recorded before this field existed
