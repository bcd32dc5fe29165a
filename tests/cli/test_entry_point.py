"""The installed `bench` command (pyproject's [project.scripts]) starts and lists its commands: the README's
commands call it by that name. CI's regression check used to be the one place that ran it; the check now runs in
the suite through the CLI object, so this test keeps the installed script covered."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def test_the_installed_bench_command_runs():
    script = Path(sys.executable).parent / "bench"
    if not script.is_file():
        script = Path(shutil.which("bench") or "")
    if not script.name or not script.is_file():
        pytest.skip("usebench is not installed in this environment (pip install -e .): no `bench` script")
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    for command in ("eval", "run", "report", "check", "reproduce", "status", "doctor"):
        assert f"  {command} " in done.stdout or f"  {command}\n" in done.stdout, (command, done.stdout)
