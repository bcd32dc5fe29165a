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


def test_bench_train_times_a_trainer_of_each_kind_and_its_reference(tiny_bert_dir, tmp_path):
    """The script's own parts (its options, the FLOP floor, its table and JSON) on three kinds of trainer: one with
    sentence-transformers' loss as reference (TSDAE), one with transformers' (MLM), one with none (clm-ae). Every
    trainer and every reference step is timed by the same `training_row` in tests/doctor/test_doctor.py's quick doctor
    (a config field renamed in the suite, TSDAE's deletion_ratio to noise_ratio, had broken the TSDAE reference
    without any test noticing); timing all 19 here again cost most of a minute of every CI run."""
    methods = ("tsdae", "mlm", "clm-ae")
    saved = tmp_path / "bench.json"
    stdout = run_script("bench_train.py", "--model", str(tiny_bert_dir), "--methods", ",".join(methods),
                        "--batch-size", "8", "--max-length", "16", "--steps", "2", "--warmup", "0", "--repeats", "1",
                        "--threads", "1", "--device", "cpu", "--json", str(saved))
    rows = {r["method"]: r for r in json.loads(saved.read_text())["rows"]}
    assert set(rows) == set(methods) and {r["precision"] for r in rows.values()} == {"fp32"}
    for r in rows.values():
        for name in ("old", "lean"):
            assert r[name]["steps"] == 2 and positive(r[name]["median_ms"]) and positive(r[name]["window_mean_ms"])
        assert "new" not in r  # the CPU's default: the old path only
        assert positive(r["gflop"]) and positive(r["floor_ms"]), r  # every row has a FLOP model
    assert rows["tsdae"]["st"]["label"] == "ST DenoisingAutoEncoderLoss"
    assert rows["mlm"]["st"]["library"] == "transformers"
    for method in ("tsdae", "mlm"):
        assert positive(rows[method]["st"]["median_ms"]) and positive(rows[method]["ratios"]["old_over_st"])
    assert "skipped" in rows["clm-ae"]["st"] and rows["clm-ae"]["ratios"]["old_over_st"] is None
    table = {line.split("|")[1].strip(): line for line in stdout.splitlines() if line.startswith("| ")}
    assert set(methods) <= set(table)
    assert "no installable reference" in table["clm-ae"] and "no FLOP model" not in stdout


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


def test_bench_optim_times_every_way_and_finds_the_blocked_updates_bit_for_bit_torch_s():
    """``scripts/bench_optim.py`` at a twentieth of MiniLM's width, two block sizes: a row per optimizer, way and
    block, each with a positive time; every blocked loop and foreach gives the weights of its optimizer's first row
    (torch's loop; BertAdam's loop at the first block)."""
    stdout = run_script("bench_optim.py", "--scale", "0.05", "--steps", "2", "--blocks", "10,12")
    row = re.compile(r"^(\w+)\s+(torch loop|foreach|blocked|fused)\s+(2\^\d+)?\s+([\d.]+)\s+(.+)$")
    rows = [row.match(line).groups() for line in stdout.splitlines()[2:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("adamw", "torch loop", None), ("adamw", "foreach", None), ("adamw", "blocked", "2^10"),
        ("adamw", "blocked", "2^12"), ("adamw", "fused", None),
        ("rmsprop", "torch loop", None), ("rmsprop", "foreach", None), ("rmsprop", "blocked", "2^10"),
        ("rmsprop", "blocked", "2^12"),
        ("bert_adam", "blocked", "2^10"), ("bert_adam", "blocked", "2^12"), ("bert_adam", "foreach", None)]
    assert all(positive(float(r[3])) for r in rows)
    firsts = {r[0] for r in rows if r[4] == "the reference"}
    assert firsts == {"adamw", "rmsprop", "bert_adam"}
    assert all(r[4] == "same bits" for r in rows if r[1] in ("blocked", "foreach") and r[4] != "the reference")
