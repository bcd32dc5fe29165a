"""AdamW and RMSprop for parameters on a CPU: torch's per-parameter updates, run over cache-sized blocks.

torch's per-parameter loop (what ``torch.optim.AdamW`` runs on a CPU) makes six passes over each parameter's
tensors, one per operation: for MiniLM's 22.6M parameters that is about 1 GB of memory traffic a step, 58 ms here,
against 10 ms for the fused kernel. The fused kernel rounds differently, so it would change every CPU run's weights.
These optimizers run the same operations, in the same order, with the same scalars, on one block of 256K elements
at a time, so a block's tensors stay in the cache between operations (23 ms for MiniLM). Every operation is
elementwise, so each element gets exactly the float operations of torch's loop: the same weights bit for bit
(``tests/train/test_blocked_optim.py``), and the same state, so a run resumes under either.

They take the options :func:`usebench.train.optim.build_optimizer` passes, and refuse the rest at construction
(amsgrad, maximize, momentum, centered, tensor hyperparameters, parameters off the CPU): torch's classes take those.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import torch
from torch.optim.optimizer import _get_scalar_dtype  # the step counter's dtype, as torch picks it

# 256K elements: a block's five float32 tensors (weights, gradient, two moments, scratch) take 5 MB, inside the L3
# cache (32 MB here). Measured for MiniLM's AdamW on 2 threads (`python scripts/bench_optim.py --threads 2 --blocks
# 15,16,18,20`): 2^15 40 ms (per-operation dispatch dominates), 2^16 28 ms, 2^18 22.7 ms, 2^20 22.8 ms; torch's loop
# 67 ms, foreach 61 ms.
BLOCK = 1 << 18


def takes(params: Iterable[torch.Tensor]) -> bool:
    """Whether the blocks can update every one of ``params``: contiguous floating-point tensors on the CPU (a block
    is a slice of the flat view). :func:`usebench.train.optim.build_optimizer` gives the rest to torch's classes."""
    return all(p.device.type == "cpu" and p.is_floating_point() and p.is_contiguous() for p in params)


def _check_parameters(optimizer: torch.optim.Optimizer) -> None:
    """Refuse what the blocks cannot take, naming it."""
    for group in optimizer.param_groups:
        for k, v in group.items():
            if k != "params" and (torch.is_tensor(v) or (isinstance(v, tuple) and any(map(torch.is_tensor, v)))):
                raise ValueError(f"{type(optimizer).__name__}: {k} as a tensor is not supported")
        for p in group["params"]:
            if not takes([p]):
                raise ValueError(f"{type(optimizer).__name__} updates contiguous floating-point CPU tensors, "
                                 f"not a {p.dtype} tensor on {p.device} (contiguous: {p.is_contiguous()})")


def blocks(n: int) -> Iterator[slice]:
    """The consecutive blocks of ``BLOCK`` elements (the last one shorter) that cover ``n`` elements."""
    for start in range(0, n, BLOCK):
        yield slice(start, min(start + BLOCK, n))


class _Blocked:
    """The step's frame, the refusals and the scratch block both optimizers share."""

    UNSUPPORTED: tuple[str, ...] = ()  # the torch options the block update does not implement
    _scratch: torch.Tensor | None = None

    def __init__(self, params, **kwargs):
        super().__init__(params, **kwargs)
        for option in self.UNSUPPORTED:
            if any(group[option] for group in self.param_groups):
                raise ValueError(f"{type(self).__name__}: {option} is not supported (torch's own class takes it)")
        _check_parameters(self)

    def _block_buffer(self, like: torch.Tensor) -> torch.Tensor:
        """One scratch block of ``like``'s dtype (the denominator, which torch's loop allocates per parameter)."""
        if self._scratch is None or self._scratch.dtype != like.dtype or self._scratch.numel() < BLOCK:
            self._scratch = torch.empty(BLOCK, dtype=like.dtype)
        return self._scratch

    @torch.no_grad()
    def step(self, closure=None):  # noqa: D102 (torch's signature and closure contract)
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
                # reshape: a view of the (contiguous) gradient autograd leaves, a copy otherwise; only read
                self._update(group, p.view(-1), p.grad.reshape(-1), self._state(p))
        return loss


class BlockedAdamW(_Blocked, torch.optim.AdamW):
    """``torch.optim.AdamW`` (per-parameter loop) with each parameter's update run block by block."""

    UNSUPPORTED = ("amsgrad", "maximize", "capturable", "differentiable", "foreach", "fused")

    def _state(self, p: torch.Tensor) -> dict:
        state = self.state[p]
        if not state:  # what torch's _init_group makes on a CPU without capturable or fused
            state["step"] = torch.tensor(0.0, dtype=_get_scalar_dtype())
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state

    def _update(self, group: dict, param: torch.Tensor, grad: torch.Tensor, state: dict) -> None:
        # the scalars exactly as torch's _single_tensor_adam computes them (python floats from the step tensor)
        beta1, beta2 = group["betas"]
        lr, weight_decay, eps = group["lr"], group["weight_decay"], group["eps"]
        state["step"] += 1
        step = state["step"].item()
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        exp_avg, exp_avg_sq = state["exp_avg"].view(-1), state["exp_avg_sq"].view(-1)
        scratch = self._block_buffer(param)
        for block in blocks(param.numel()):
            w, g, m, v = param[block], grad[block], exp_avg[block], exp_avg_sq[block]
            if weight_decay != 0:
                w.mul_(1 - lr * weight_decay)
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = torch.sqrt(v, out=scratch[: w.numel()])
            denom.div_(bias_correction2_sqrt).add_(eps)
            w.addcdiv_(m, denom, value=-step_size)


class BlockedRMSprop(_Blocked, torch.optim.RMSprop):
    """``torch.optim.RMSprop`` (per-parameter loop, no momentum, not centered) run block by block."""

    UNSUPPORTED = ("momentum", "centered", "maximize", "capturable", "differentiable", "foreach")

    def _state(self, p: torch.Tensor) -> dict:
        state = self.state[p]
        if not state:  # what torch's _init_group makes without capturable, momentum or centered
            state["step"] = torch.zeros((), dtype=_get_scalar_dtype())
            state["square_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state

    def _update(self, group: dict, param: torch.Tensor, grad: torch.Tensor, state: dict) -> None:
        lr, alpha, eps, weight_decay = group["lr"], group["alpha"], group["eps"], group["weight_decay"]
        state["step"] += 1
        square_avg = state["square_avg"].view(-1)
        scratch = self._block_buffer(param)
        for block in blocks(param.numel()):
            w, g, v = param[block], grad[block], square_avg[block]
            if weight_decay != 0:
                g = g.add(w, alpha=weight_decay)  # out of place, as torch's loop: the gradient itself is kept
            v.mul_(alpha).addcmul_(g, g, value=1 - alpha)
            avg = torch.sqrt(v, out=scratch[: w.numel()])
            avg.add_(eps)
            w.addcdiv_(g, avg, value=-lr)
