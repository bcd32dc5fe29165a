"""GPU checks of the fast path (issue 36; ``-m gpu``, skipped without CUDA). Written without a GPU at hand: run them
with ``python -m pytest -m gpu tests/train/test_fast_path_gpu.py``.

- ``auto`` on CUDA takes the fast path with every part on (TF32 for fp32 presets only), records it, and restores the
  TF32 setting afterwards;
- the compiled step trains like eager (dropout off): fp32 within 2e-2 relative (TF32 products), bf16 within 5e-2;
- no host synchronisation inside a step (``torch.cuda.set_sync_debug_mode("error")`` between log points), fp32,
  bf16 and fp16 (ConSERT: the compiled BertAdam takes the GradScaler's found_inf on the device; the scale is read
  one step late, an event wait on the previous step, which that mode does not count);
- cross-entropy under CUDA autocast upcasts bf16 logits itself (the labelled head's explicit fp32 copy is not an
  extra one).

About ten small compiles in all (a few minutes on an H100).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.registry import METHODS
from usebench.train.loop import train
from tests.methods.helpers import tiny_config, toy_data
from tests.train.fast_path_helpers import losses

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_auto_on_cuda_is_the_fast_path_with_tf32_for_fp32_runs(tiny_bert_dir, tmp_path):
    method = METHODS.get("simcse")
    before = torch.get_float32_matmul_precision()
    fp32 = train(method, tiny_config(method, tiny_bert_dir, max_steps=3, amp="off"), toy_data(method), tmp_path / "a",
                 device="cuda", show_progress=False, fast_path="auto")
    assert torch.get_float32_matmul_precision() == before  # restored
    path = fp32.step_path
    assert (path["fast"], path["compile"], path["static_shapes"], path["fused_optimizer"], path["tf32"]) == (True,) * 5
    bf16 = train(method, tiny_config(method, tiny_bert_dir, max_steps=3, amp="bf16"), toy_data(method),
                 tmp_path / "b", device="cuda", show_progress=False)
    assert bf16.step_path["compile"] and not bf16.step_path["tf32"]


@pytest.mark.parametrize("name,amp,rtol", [("tsdae", "bf16", 5e-2), ("mlm", "off", 2e-2), ("ct", "off", 2e-2)])
def test_the_compiled_step_trains_like_eager_on_the_gpu(name, amp, rtol, tiny_bert_dir, tmp_path, without_dropout):
    method = without_dropout(METHODS.get(name))
    cfg = tiny_config(method, tiny_bert_dir, max_steps=6, log_every=1, amp=amp, dropout=False)
    runs = {fp: train(method, cfg, toy_data(method), tmp_path / fp, device="cuda", show_progress=False,
                      fast_path=fp, seed=1) for fp in ("off", "on")}
    assert runs["on"].step_path["compile"], runs["on"].step_path
    np.testing.assert_allclose(losses(runs["on"]), losses(runs["off"]), rtol=rtol)


@pytest.mark.parametrize("name,amp", [("simcse", "off"), ("tsdae", "bf16"), ("consert", "fp16")])
def test_no_host_synchronisation_inside_a_step(name, amp, tiny_bert_dir, tmp_path):
    """Steps 4-9 of 10 run with CUDA's sync debug mode set to error: any host synchronisation raises. The log point
    (step 10, where the loss is read back) is outside."""
    method = METHODS.get(name)
    cfg = tiny_config(method, tiny_bert_dir, max_steps=10, log_every=10, amp=amp)

    def switch(step: int) -> None:
        torch.cuda.set_sync_debug_mode("error" if 3 <= step < 9 else "default")

    try:
        result = train(method, cfg, toy_data(method), tmp_path, device="cuda", show_progress=False, fast_path="on",
                       on_step=switch, workers=2)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert result.steps == 10 and result.step_path["compile"], result.step_path


def test_cross_entropy_under_cuda_autocast_upcasts_bf16_logits_itself():
    logits = torch.randn(64, 30522, device="cuda").bfloat16()
    targets = torch.randint(0, 30522, (64,), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        implicit = torch.nn.functional.cross_entropy(logits, targets)
        explicit = torch.nn.functional.cross_entropy(logits.float(), targets)
    assert implicit.dtype == torch.float32 and torch.equal(implicit, explicit)
