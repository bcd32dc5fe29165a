"""``scripts/count_step_ops.py`` at its smallest: one trainer, fp32, a 1-layer BERT; the fast path dispatches fewer
operations than eager and reads nothing back outside the optimizer. Marked slow: it compiles a step (~40 s cold)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_count_step_ops_counts_fewer_operations_on_the_fast_path(tmp_path):
    out = tmp_path / "ops.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "count_step_ops.py"), "--methods", "simcse",
                           "--layers", "1", "--hidden", "32", "--precisions", "off", "--warmup", "1",
                           "--json", str(out)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["path"]: r for r in json.loads(out.read_text())}
    assert rows["on"]["step_path"]["compile"] and not rows["off"]["step_path"]["fast"]
    assert 0 < rows["on"]["ops"] < rows["off"]["ops"]
    assert rows["off"]["host_reads"] >= 1 and rows["on"]["host_reads"] == 0  # transformers' padding_mask.all()
    assert "| simcse | fp32 | fast |" in done.stdout
