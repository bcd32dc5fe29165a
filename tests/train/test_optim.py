"""Optimizers and LR schedules against independent references (transformers' schedules, hand computation)."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from usebench.train.config import TrainConfig
from usebench.train.optim import BertAdam, build_optimizer, lr_multiplier, param_groups


@pytest.mark.parametrize("warmup", [0, 10])
def test_linear_schedule_matches_transformers(warmup):
    from transformers import get_linear_schedule_with_warmup

    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
    ref = get_linear_schedule_with_warmup(opt, warmup, 100)
    ours = lr_multiplier(TrainConfig(scheduler="linear", warmup_steps=warmup), 100)
    for step in range(100):
        assert ours(step) == pytest.approx(ref.lr_lambdas[0](step), abs=1e-12)


def test_warmup_constant_matches_transformers_and_ratio():
    from transformers import get_constant_schedule_with_warmup

    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
    ref = get_constant_schedule_with_warmup(opt, 20)
    ours = lr_multiplier(TrainConfig(scheduler="warmup_constant", warmup_ratio=0.1), 200)  # 10% of 200 = 20
    assert [ours(s) for s in range(40)] == pytest.approx([ref.lr_lambdas[0](s) for s in range(40)])


def test_piecewise_is_the_ct_paper_schedule():
    # TSDAE paper App. B: 1e-5 for steps 1-500, 8e-6 for 501-1000, 6e-6 1001-1500, 4e-6 1501-2000, 2e-6 after.
    cfg = TrainConfig(lr=1e-5, scheduler="piecewise", lr_milestones=(500, 1000, 1500, 2000),
                      lr_factors=(1.0, 0.8, 0.6, 0.4, 0.2))
    f = lr_multiplier(cfg, 100_000)
    lr_at = {1: 1e-5, 500: 1e-5, 501: 8e-6, 1000: 8e-6, 1001: 6e-6, 1501: 4e-6, 2000: 4e-6, 2001: 2e-6, 99_999: 2e-6}
    for one_based, lr in lr_at.items():
        assert cfg.lr * f(one_based - 1) == pytest.approx(lr)


def test_bert_adam_step_by_hand():
    p = nn.Parameter(torch.tensor([1.0]))
    opt = BertAdam([p], lr=0.1, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01)
    p.grad = torch.tensor([0.5])
    opt.step()
    m, v = 0.1 * 0.5, 0.001 * 0.25  # no bias correction
    update = m / (math.sqrt(v) + 1e-6) + 0.01 * 1.0
    assert p.item() == pytest.approx(1.0 - 0.1 * update, rel=1e-6)


def test_no_weight_decay_on_bias_and_layernorm():
    model = nn.ModuleDict({"dense": nn.Linear(4, 4), "LayerNorm": nn.LayerNorm(4)})
    groups = param_groups(model.named_parameters(), 0.01)
    decayed = {id(p) for g in groups if g["weight_decay"] for p in g["params"]}
    assert decayed == {id(model["dense"].weight)}
    opt = build_optimizer(TrainConfig(optimizer="rmsprop", rmsprop_alpha=0.9, eps=1e-7), model.named_parameters())
    assert isinstance(opt, torch.optim.RMSprop) and opt.defaults["alpha"] == 0.9 and opt.defaults["eps"] == 1e-7


def test_bert_adam_multi_tensor_path_gives_the_loops_bits():
    """The foreach path (taken on a GPU: one launch per operation, not ~10 per parameter) is the loop's update bit
    for bit, weight decay and parameters without gradients included."""
    torch.manual_seed(0)
    shapes = [(7, 5), (5,), (3, 4, 2), (1,)]
    start = [torch.randn(s) for s in shapes]
    runs = []
    for foreach in (False, True):
        params = [torch.nn.Parameter(t.clone()) for t in start]
        opt = BertAdam([{"params": params[:2], "weight_decay": 0.01}, {"params": params[2:], "weight_decay": 0.0}],
                       lr=0.05, eps=1e-6, foreach=foreach)
        gen = torch.Generator().manual_seed(1)
        for step in range(4):
            for k, p in enumerate(params):
                p.grad = None if (k == 3 and step % 2) else torch.randn(p.shape, generator=gen)
            opt.step()
        runs.append([p.detach().clone() for p in params])
    for a, b in zip(*runs):
        assert torch.equal(a, b)
    assert not torch.equal(runs[0][0], start[0])  # it trained


def test_log_lines_carry_peak_gpu_memory_only_where_a_gpu_is_used(tmp_path, monkeypatch):
    from usebench.train import trainlog

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # CUDA in use in this process (a GPU host)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 3 * 2**20)
    cpu_run = trainlog.TrainLog(tmp_path / "cpu.jsonl", every=1, start=0, enabled=True, device="cpu")
    cpu_run.add(1, 0.5, {}, 1e-3)
    assert "gpu_peak_mb" not in cpu_run.lines[0]  # a CPU run: no GPU key at all, whatever else uses CUDA
    gpu_run = trainlog.TrainLog(tmp_path / "gpu.jsonl", every=1, start=0, enabled=True, device="cuda:0")
    gpu_run.add(1, 0.4, {}, 1e-3)
    assert gpu_run.lines[0]["gpu_peak_mb"] == 3.0
