"""CPU smoke runs of the benchmark scripts (``scripts/bench_train.py``, ``scripts/bench_retrieval.py``) at their
smallest settings on the tiny random BERT: they run end to end and print rows with finite, positive numbers.
The scripts are entry points, not modules: each runs as a subprocess, as a user runs it."""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_script(name: str, *args: str) -> str:
    """stdout of ``python scripts/<name> args`` from the repository root, on one torch thread."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / name), *args], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def positive(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def test_bench_train_times_every_trainer_and_its_reference(tiny_bert_dir, tmp_path):
    """Every trainer (ours + FLOP floor) and every reference step (sentence-transformers' losses, HF's MLM, the
    plain MLM loop) takes a step: a config field renamed in the suite (TSDAE's deletion_ratio became noise_ratio)
    broke the TSDAE reference without any test noticing."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from bench_train import ALL
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    saved = tmp_path / "bench.json"
    stdout = run_script("bench_train.py", "--model", str(tiny_bert_dir), "--batch-size", "8", "--max-length", "16",
                        "--steps", "1", "--warmup", "1", "--repeats", "1", "--threads", "1", "--device", "cpu",
                        "--json", str(saved))
    rows = {(r["method"], r["plain"]): r for r in json.loads(saved.read_text())["rows"]}
    assert set(rows) == {(m, False) for m in ALL} | {("mlm", True)}
    for r in rows.values():
        assert len(r["ours"]) == 1 and positive(r["ours"][0])
        assert positive(r["flops"]) and positive(r["floor_s"]), r  # every row has a FLOP model
    with_reference = {"tsdae", "simcse", "ct", "ct-ibn", "mlm", "sbert-mnrl", "sbert-nli", "sbert-cosine",
                      "sbert-stsb"}
    for (method, plain), r in rows.items():
        if method in with_reference or plain:
            assert r["ref_label"] and positive(r["ref"][0]), r
        else:
            assert r["ref"] == [], r
    table = {line.split("|")[1].strip(): line for line in stdout.splitlines() if line.startswith("| ")}
    assert set(ALL) | {"mlm (plain)"} <= set(table)
    assert "no reference" in table["clm-ae"] and "no FLOP model" not in stdout


def test_bench_retrieval_on_a_tiny_corpus(tiny_bert_dir):
    pytest.importorskip("beir", reason="the script times BEIR's exact search too (pip install -e '.[beir]')")
    stdout = run_script("bench_retrieval.py", "--model", str(tiny_bert_dir), "--n", "500", "--queries", "10",
                        "--k", "5", "--encode-sample", "16", "--batch-size", "8", "--threads", "1")
    searches = {m.group(1).strip(): m.groups()[1:] for m in re.finditer(
        r"^(suite \S+|BEIR DenseRetrievalExactSearch)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+([\d.]+)%$",
        stdout, re.MULTILINE)}
    assert {"suite numpy", "suite torch", "suite faiss-cpu", "BEIR DenseRetrievalExactSearch"} <= set(searches)
    for name, (_, _, per_second, _, same) in searches.items():
        assert positive(float(per_second)), name
        assert float(same) == 100.0, name  # every backend finds numpy's top-k
    rates = re.findall(r"^\s+(documents|queries)\s+([\d.]+)/s", stdout, re.MULTILINE)
    assert [k for k, _ in rates] == ["documents", "queries"] and all(positive(float(v)) for _, v in rates)
