"""The step path without overheads (issue 20) trains the same weights, bit for bit, as the path before it.

The reference below is the loop as it was before: the batch collated in the step (no workers), the loss and the
gradient norm read back every step, torch's per-parameter optimizers (``foreach=False``) and BERT's Adam written
out of place. The loop now collates in worker processes, reads numbers back only at log/dev/save points, uses
foreach optimizers and clipping and a BertAdam with a scratch buffer. Both must end with identical weights.
"""
from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.registry import METHODS
from usebench.train.batches import collate_step, default_workers
from usebench.train.loop import train
from usebench.train.optim import BertAdam, build_scheduler, param_groups
from usebench.train.optim import unique_parameters
from usebench.train.runtime import seed_everything, to_device
from tests.methods.helpers import one_thread, tiny_config, toy_data


class OldBertAdam(torch.optim.Optimizer):
    """BertAdam before the scratch buffer: every temporary allocated out of place."""

    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"], state["exp_avg_sq"] = torch.zeros_like(p), torch.zeros_like(p)
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                update = m / (v.sqrt() + group["eps"])
                if group["weight_decay"]:
                    update = update + group["weight_decay"] * p
                p.add_(update, alpha=-group["lr"])


def old_optimizer(cfg, named) -> torch.optim.Optimizer:
    groups = param_groups(named, cfg.weight_decay)
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.adam_betas, eps=cfg.eps, foreach=False)
    if cfg.optimizer == "rmsprop":
        return torch.optim.RMSprop(groups, lr=cfg.lr, alpha=cfg.rmsprop_alpha, eps=cfg.eps, foreach=False)
    return OldBertAdam(groups, lr=cfg.lr, betas=cfg.adam_betas, eps=cfg.eps)


def old_loop(method, cfg, data, seed: int) -> dict[str, torch.Tensor]:
    """The step path before issue 20, kept as the reference: weights after ``cfg.max_steps`` steps."""
    seed_everything(seed)
    module = method.build(cfg, torch.device("cpu"))
    named = unique_parameters(method.trainable_parameters(module))
    params = [p for _, p in named]
    optimizer = old_optimizer(cfg, named)
    scheduler = build_scheduler(cfg, optimizer, cfg.max_steps)
    module.train()
    for step in range(cfg.max_steps):
        batch = to_device(collate_step(method, cfg, module.tokenizer, data, step, seed), torch.device("cpu"))
        if isinstance(batch, dict):
            batch.pop("mask_positions", None)  # DenoSent: the [MASK] found in the forward, as before
            batch.pop("view_inputs", None)  # ConSERT: the augmentations drawn in the forward, as before
        out = module(batch)
        loss = out["loss"] if isinstance(out, dict) else out
        loss.backward()
        if cfg.grad_clip is not None:
            float(torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip))
        float(loss.detach())
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    return {k: v.clone() for k, v in module.state_dict().items()}


# Every optimizer (adamw: tsdae, paser, sbert-mnrl; bert_adam with weight decay: mlm, consert; rmsprop: ct) and
# every kind of collate-time randomness (deletion noise, masking, CT's sampler, ConSERT's augmentation seed, RAKE);
# DenoSent's [MASK] positions and ConSERT's augmentations drawn in collate, BERT-flow's ActNorm flag read once.
CASES = {"tsdae": {}, "mlm": {"weight_decay": 0.01}, "ct": {}, "consert": {}, "paser": {}, "sbert-mnrl": {}, "denosent": {},
         "bertflow": {}}


@pytest.mark.parametrize("name", sorted(CASES))
def test_weights_after_n_steps_equal_the_old_path(name, tiny_bert_dir, tmp_path):
    method = METHODS.get(name)
    cfg = tiny_config(method, tiny_bert_dir, max_steps=4, log_every=3, **CASES[name])
    data = toy_data(method)
    with one_thread():
        expected = old_loop(method, cfg, data, seed=7)
        for workers in (0, 2):
            got = train(method, cfg, data, tmp_path / str(workers), seed=7, show_progress=False, resume=False,
                        workers=workers, device="cpu").module.state_dict()
            assert got.keys() == expected.keys()
            for k in expected:
                assert torch.equal(got[k], expected[k]), (workers, k)


def test_bert_adam_scratch_buffer_equals_out_of_place_updates():
    def run(cls: Callable) -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(0)
        ps = [torch.nn.Parameter(torch.randn(s, generator=g)) for s in [(50, 8), (8,), (3, 8)]]
        opt = cls([{"params": ps[:1] + ps[2:], "weight_decay": 0.01}, {"params": ps[1:2], "weight_decay": 0.0}],
                  lr=1e-2)
        for _ in range(3):
            for p in ps:
                p.grad = torch.randn(p.shape, generator=g)
            opt.step()
        return [p.detach() for p in ps]

    for a, b in zip(run(BertAdam), run(OldBertAdam)):
        assert torch.equal(a, b)


def test_a_collate_error_in_a_worker_is_raised_with_its_own_type(tiny_bert_dir, tmp_path, monkeypatch):
    from usebench.errors import DataFormatError

    method = METHODS.get("mlm")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=2)

    def bad_collate(*args, **kwargs):
        raise DataFormatError("training corpus", 3, "a sentence")

    monkeypatch.setattr(type(method), "collate", bad_collate)  # forked workers inherit the patch
    with one_thread(), pytest.raises(DataFormatError, match="training corpus:3: expected a sentence"):
        train(method, cfg, toy_data(method), tmp_path, show_progress=False, workers=1, device="cpu")


def test_default_workers(monkeypatch):
    monkeypatch.setenv("BENCH_TRAIN_WORKERS", "3")
    assert default_workers(torch.device("cpu")) == 3
    monkeypatch.delenv("BENCH_TRAIN_WORKERS")
    with one_thread():
        assert default_workers(torch.device("cpu")) == (1 if len(__import__("os").sched_getaffinity(0)) > 1 else 0)
