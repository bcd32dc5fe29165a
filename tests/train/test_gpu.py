"""GPU checks of the training step path (``-m gpu``; skipped without CUDA). Written without a GPU at hand
(issue 20's session had none): run them with ``python -m pytest -m gpu tests/train/test_gpu.py``."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.registry import METHODS
from usebench.train.loop import train
from tests.methods.helpers import tiny_config, toy_corpus

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["mlm", "tsdae", "paser", "denosent"])
def test_bf16_training_on_the_gpu_with_pinned_prefetched_batches(name, tiny_bert_dir, tmp_path):
    method = METHODS.get(name)
    cfg = tiny_config(method, tiny_bert_dir, max_steps=4, amp="bf16", log_every=2)
    result = train(method, cfg, toy_corpus(), tmp_path, device="cuda", show_progress=False, workers=2)
    assert [line["step"] for line in result.history] == [2, 4]
    assert all(torch.isfinite(torch.tensor(line["loss"])) for line in result.history)


# Run in a fresh interpreter: CUBLAS_WORKSPACE_CONFIG only counts when set before the process' first cuBLAS handle,
# and earlier tests of this session have made one.
DETERMINISM = """
import json, sys
from pathlib import Path
import torch
from usebench import methods
from usebench.registry import METHODS
from usebench.doctor import QUICK, determinism
from usebench.train.loop import train
from tests.methods.helpers import tiny_config, toy_corpus

model = sys.argv[1]
out = {"resume": determinism("cuda", QUICK, model)}
method = METHODS.get("mlm")
cfg = tiny_config(method, Path(model), max_steps=4, amp="off")
states = [train(method, cfg, toy_corpus(), Path(sys.argv[2]) / str(w), device="cuda", show_progress=False,
                workers=w, deterministic=True).module.state_dict() for w in (0, 2)]
out["workers_max_abs"] = max(float((states[0][k] - states[1][k]).abs().max()) for k in states[0]
                             if states[0][k].dtype.is_floating_point)
print(json.dumps(out))
"""


def test_deterministic_gpu_training_is_bit_identical_across_runs_resumes_and_workers(tiny_bert_dir, tmp_path):
    """With deterministic kernels (train(deterministic=True), CUBLAS_WORKSPACE_CONFIG set before any cuBLAS
    handle): two runs, a crash-and-resume and a run with collate workers end with the same weights, atol 0."""
    import json
    import os

    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "CUBLAS_WORKSPACE_CONFIG": ":4096:8", "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-c", DETERMINISM, str(tiny_bert_dir), str(tmp_path)], env=env,
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["resume"]["deterministic"] == {"run_to_run_max_abs": 0.0, "resume_max_abs": 0.0}, out
    assert out["workers_max_abs"] == 0.0, out


def test_fp16_training_on_the_gpu_with_loss_scaling(tiny_bert_dir, tmp_path):
    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=4, amp="fp16", log_every=2)
    result = train(method, cfg, toy_corpus(), tmp_path, device="cuda", show_progress=False)
    assert result.steps == 4 and all(torch.isfinite(torch.tensor(line["loss"])) for line in result.history)


def test_bench_train_fp16_with_sentence_transformers_references_on_the_gpu(tiny_bert_dir):
    """The ST references run on CUDA (sentence-transformers 6 left the model on the CPU) in fp16 with a scaler."""
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_train.py"), "--model", str(tiny_bert_dir),
                          "--methods", "tsdae,simcse,sbert-cosine", "--steps", "3", "--warmup", "1", "--repeats",
                          "1", "--device", "cuda", "--amp", "fp16", "--paths", "old"], capture_output=True, text=True,
                         cwd=ROOT, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    table = [line for line in out.stdout.splitlines() if line.startswith("| tsdae ")]
    assert table and "ST DenoisingAutoEncoderLoss" in table[0]


def test_quick_doctor_on_the_gpu(tmp_path):
    """Every section on CUDA; the training section with both step paths side by side (the new one compiles: one
    trainer, one precision keeps it short), ST's step and the lean loop, each column with its peak memory."""
    import json

    out = tmp_path / "doctor.json"
    done = subprocess.run([sys.executable, "-m", "usebench.cli", "doctor", "--quick", "--device", "cuda", "--json",
                           str(out), "--methods", "simcse", "--precisions", "bf16", "--paths", "old,new"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert [name for name in ("matmul", "search", "encode", "determinism", "training") if "error" in report[name]] \
        == []
    assert {r["backend"] for r in report["search"]["rows"]} >= {"torch", "numpy"}
    assert all(r["same_top_k_as_first"] for r in report["search"]["rows"])
    (row,) = report["training"]["rows"]
    for name in ("old", "new", "st", "lean"):
        assert row[name].get("median_ms", 0) > 0 and row[name]["peak_gpu_mb"] is not None, (name, row[name])
    assert row["old"]["step_path"]["fast"] is False and row["new"]["step_path"]["fast"] is True


def test_bench_train_runs_on_the_gpu_and_reports_mfu(tiny_bert_dir):
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_train.py"), "--model", str(tiny_bert_dir),
                          "--methods", "mlm,simcse", "--steps", "3", "--warmup", "1", "--repeats", "1",
                          "--device", "cuda", "--amp", "bf16", "--paths", "old", "--peak-tflops", "100"],
                         capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "| MFU old |" in out.stdout and "| mlm | bf16 |" in out.stdout
