"""The fast path (issue 36) on the CPU, around the step: the fused optimizers and BertAdam's update, fp16's late
scale read, TF32 for the run only, the runtime overrides undone after it, DDP's compiled inner module."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.registry import METHODS
from usebench.train import loop
from usebench.train.step_path import StepPath
from tests.methods.helpers import tiny_config
from tests.train.fast_path_helpers import (LONG, run)


# --- optimizers, fp16, the runtime overrides --------------------------------------------------------------------

def test_the_fast_optimizers(tiny_bert_dir):
    from usebench.train.optim import BertAdam, build_optimizer

    model = torch.nn.Linear(4, 3)
    named = list(model.named_parameters())
    for name, expected in (("adamw", "fused"), ("rmsprop", "foreach"), ("bert_adam", "compiled")):
        cfg = tiny_config(METHODS.get("simcse"), tiny_bert_dir, optimizer=name)
        opt = build_optimizer(cfg, named, fused=True)
        got = ("fused" if opt.defaults.get("fused") else "compiled" if getattr(opt, "compiled", False)
               else "foreach")
        assert got == expected, name
        assert not getattr(build_optimizer(cfg, named), "compiled", False)
        assert not build_optimizer(cfg, named).defaults.get("fused")
    # the GradScaler hands a compiled BertAdam its overflow flag instead of reading it on the host
    assert BertAdam([p for _, p in named], lr=1e-3, compiled=True)._step_supports_amp_scaling
    assert not BertAdam([p for _, p in named], lr=1e-3)._step_supports_amp_scaling


def test_bert_adam_update_equals_the_foreach_step_and_skips_on_inf():
    from usebench.train.optim import BertAdam, bert_adam_update

    g = torch.Generator().manual_seed(0)
    ps = [torch.randn(5, 3, generator=g) for _ in range(2)]
    grads = [torch.randn(5, 3, generator=g) for _ in range(2)]
    reference = [torch.nn.Parameter(p.clone()) for p in ps]
    opt = BertAdam([{"params": reference, "weight_decay": 0.01}], lr=1e-2, foreach=True)
    for p, grad in zip(reference, grads):
        p.grad = grad.clone()
    opt.step()
    mine = [p.clone() for p in ps]
    ms, vs = [torch.zeros_like(p) for p in ps], [torch.zeros_like(p) for p in ps]
    bert_adam_update(mine, grads, ms, vs, torch.tensor(1e-2), 0.9, 0.999, 1e-6, 0.01)
    for a, b in zip(mine, reference):
        torch.testing.assert_close(a, b.detach(), rtol=1e-6, atol=1e-7)
    before = [p.clone() for p in mine], [m.clone() for m in ms]
    bert_adam_update(mine, grads, ms, vs, torch.tensor(1e-2), 0.9, 0.999, 1e-6, 0.01, found_inf=torch.ones(1))
    assert all(torch.equal(a, b) for a, b in zip(mine, before[0])) and all(torch.equal(a, b) for a, b in
                                                                            zip(ms, before[1]))
    bert_adam_update(mine, grads, ms, vs, torch.tensor(1e-2), 0.9, 0.999, 1e-6, 0.01, found_inf=torch.zeros(1))
    assert not torch.equal(mine[0], before[0][0])


def test_fp16_reads_the_scale_one_step_late_and_skips_the_same_schedule_steps(tiny_bert_dir, tmp_path, monkeypatch):
    """Fused AdamW under fp16 on the fast path (compile off here): with every step overflowing, the schedule stays
    put as on the reference path; with the default scale both advance every step."""
    from tests.train.test_gpu_paths import _scheduler_steps_at_2

    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, amp="fp16", max_steps=4, save_every=2, warmup_steps=10)
    monkeypatch.setattr(loop, "resolve_step_path", lambda *a, **k: StepPath(fast=True, fused_optimizer=True))
    steps, _ = _scheduler_steps_at_2(method, cfg, tmp_path / "default")
    assert steps == 2
    monkeypatch.setattr(loop, "grad_scaler", lambda cfg, dev: torch.amp.GradScaler(dev.type, init_scale=2.0**127))
    steps, after = _scheduler_steps_at_2(method, cfg, tmp_path / "overflow")
    assert steps == 0
    built = method.build(cfg, torch.device("cpu"))
    for k, v in built.state_dict().items():
        if k in after and v.dtype.is_floating_point and "mlp" not in k:
            torch.testing.assert_close(after[k], v, rtol=0, atol=0, msg=k)


def test_tf32_is_on_for_the_run_only(tiny_bert_dir, tmp_path, monkeypatch):
    """The policy a CUDA fp32 run gets (forced here on the CPU, where matmul precision has no effect): set while the
    loop runs, the previous setting back afterwards, and recorded."""
    method = METHODS.get("simcse")
    before = torch.get_float32_matmul_precision()
    seen: list[str] = []
    monkeypatch.setattr(loop, "resolve_step_path", lambda *a, **k: StepPath(fast=True, tf32=True))
    result = run(method, tiny_config(method, tiny_bert_dir, max_steps=2), tmp_path, "on",
                 on_step=lambda step: seen.append(torch.get_float32_matmul_precision()))
    assert seen == ["high", "high"] and torch.get_float32_matmul_precision() == before
    assert result.step_path["tf32"]


def test_pooler_skip_and_padded_vocabulary_heads_are_undone_after_the_run(tiny_bert_dir):
    from usebench.train.fast_path import padded_vocabulary_heads, skipped_poolers

    method = METHODS.get("mlm")
    module = method.build(tiny_config(method, tiny_bert_dir), torch.device("cpu"))
    model = module.encoder.model
    ids = torch.randint(1000, 2000, (2, 7))
    mask = torch.ones_like(ids)
    head = module.head
    hidden = torch.randn(5, model.config.hidden_size)
    with torch.no_grad():
        logits = head(hidden)
        with skipped_poolers(module), padded_vocabulary_heads(module):
            assert model(input_ids=ids, attention_mask=mask).pooler_output is None
            padded = head(hidden)
        assert model(input_ids=ids, attention_mask=mask).pooler_output is not None
    assert padded.shape == logits.shape == (5, model.config.vocab_size)
    torch.testing.assert_close(padded, logits, rtol=1e-6, atol=1e-6)
    assert not any("forward" in vars(m) for m in module.modules())


@pytest.mark.slow
@LONG
def test_ddp_compiles_the_inner_module(tiny_bert_dir, tmp_path):
    """torchrun with 2 gloo ranks on the fast path (``$BENCH_FAST_PATH=on``): DDP wraps the compiled step, both
    ranks end with the same weights and the checkpoint records a compiled step."""
    import subprocess
    import sys

    worker = Path(__file__).with_name("ddp_worker.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           "BENCH_FAST_PATH": "on"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(worker),
           str(tiny_bert_dir), str(tmp_path / "run")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    meta = json.loads((tmp_path / "run" / "checkpoint" / "method.json").read_text())
    assert meta["step_path"]["compile"] and meta["step_path"]["static_shapes"], meta["step_path"]
    r0, r1 = (torch.load(tmp_path / "run" / f"rank{r}.pt") for r in (0, 1))
    for k in r0:
        torch.testing.assert_close(r0[k], r1[k], rtol=0, atol=0, msg=k)
