"""GPU checks of the training step path (``-m gpu``; skipped without CUDA). Written without a GPU at hand
(issue 20's session had none): run them with ``python -m pytest -m gpu tests/train/test_gpu.py``."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

import methods  # noqa: F401
from benchmark.registry import METHODS
from benchmark.train.loop import train
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


def test_gpu_weights_do_not_depend_on_the_collate_workers(tiny_bert_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        method = METHODS.get("mlm")
        cfg = tiny_config(method, tiny_bert_dir, max_steps=4, amp="off")
        states = [train(method, cfg, toy_corpus(), tmp_path / str(w), device="cuda", show_progress=False,
                        workers=w).module.state_dict() for w in (0, 2)]
    finally:
        torch.use_deterministic_algorithms(False)
    for k in states[0]:
        torch.testing.assert_close(states[0][k], states[1][k], rtol=0, atol=1e-6, msg=k)


def test_bench_train_runs_on_the_gpu_and_reports_mfu(tiny_bert_dir):
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_train.py"), "--model", str(tiny_bert_dir),
                          "--methods", "mlm,simcse", "--steps", "1", "--warmup", "1", "--repeats", "1",
                          "--device", "cuda", "--amp", "bf16", "--peak-tflops", "100"],
                         capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "| MFU |" in out.stdout and "| mlm (plain) |" in out.stdout
