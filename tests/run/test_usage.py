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
    clock = UsageClock()
    clock.record(tmp_path, ["training"])
    clock.record(tmp_path, [])  # a resumed unit: one entry per finished attempt
    first, second = json.loads((tmp_path / "usage.json").read_text())["attempts"]
    assert first["unit_peak_rss_mb"] < before - 150 and "process_peak_rss_mb" not in first
    assert first["training"] == ["training"] and second["training"] == [] and first["wall_s"] >= 0


def test_without_the_reset_the_process_peak_is_recorded_under_its_own_name(tmp_path):
    from usebench.run.usage import record_usage

    record_usage(tmp_path, 1.0, 2.0, [], None)
    (attempt,) = json.loads((tmp_path / "usage.json").read_text())["attempts"]
    assert attempt["process_peak_rss_mb"] > 0 and "unit_peak_rss_mb" not in attempt
