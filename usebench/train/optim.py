"""Optimizers and learning-rate schedules named by a :class:`~usebench.train.config.TrainConfig`.

- ``adamw``: ``torch.optim.AdamW`` (HF Trainer / sentence-transformers default).
- ``rmsprop``: ``torch.optim.RMSprop`` (CT; the official TF code uses Keras defaults rho 0.9, eps 1e-7, which
  its presets set via ``rmsprop_alpha``/``eps``; Keras adds eps inside the square root, torch outside, which
  only matters for near-zero second moments).
- ``bert_adam``: BERT's ``AdamWeightDecay`` (no bias correction, decoupled weight decay), as the BERT-flow code.
Weight decay never applies to biases and LayerNorm weights (the BERT / HF convention).
Schedules are multipliers of ``lr`` per optimizer step (``LambdaLR``): constant, linear warm-up + linear
decay to 0, warm-up then constant, and piecewise-constant (CT: factors at milestones).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch
from torch import nn

from usebench.train.blocked_optim import BlockedAdamW, BlockedRMSprop, blocks, takes
from usebench.train.compiled_step import describe
from usebench.train.config import TrainConfig
from usebench.errors import ConfigError

NO_DECAY = ("bias", "LayerNorm.weight", "LayerNorm.bias", "layer_norm.weight", "layer_norm.bias", "norm.weight")


def unique_parameters(named: Iterable[tuple[str, nn.Parameter]]) -> list[tuple[str, nn.Parameter]]:
    """Drop repeated parameter objects (tied weights), keeping the first name."""
    seen: set[int] = set()
    out = []
    for n, p in named:
        if id(p) not in seen:
            seen.add(id(p))
            out.append((n, p))
    return out


def param_groups(named: Iterable[tuple[str, nn.Parameter]], weight_decay: float) -> list[dict]:
    """Two groups: decayed weights and the rest (biases, LayerNorm)."""
    decay, no_decay = [], []
    for name, p in named:
        (no_decay if weight_decay == 0 or name.endswith(NO_DECAY) or p.ndim < 2 else decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]


class BertAdam(torch.optim.Optimizer):
    """BERT's AdamWeightDecay: Adam moments without bias correction, decoupled weight decay.

    The update is computed in one scratch buffer reused for every parameter and step: the same float operations
    in the same order as ``m / (v.sqrt() + eps) + wd * p`` written out of place (so the same bits), without
    allocating parameter-sized temporaries each step, which on a CPU cost more than the arithmetic (fresh pages
    from the OS for every large tensor). The per-parameter loop runs over cache-sized blocks, as the CPU's AdamW
    (:mod:`usebench.train.blocked_optim`)."""

    def __init__(self, params, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-6,
                 weight_decay: float = 0.0, foreach: bool | None = None, compiled: bool = False):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})
        self._scratch: torch.Tensor | None = None
        # None: the multi-tensor path for parameters on a GPU, where the per-parameter loop's ~1,200 small kernel
        # launches per BERT-base step dominate; the loop on a CPU, where it avoids parameter-sized temporaries
        self.foreach = foreach
        # compiled (the fast path): the update as one torch.compile'd graph (a few fused kernels per group), the
        # learning rate a device tensor so a changing schedule does not recompile it, and under fp16 the
        # GradScaler's skip decided on the device (no host read): see compiled_bert_adam_update
        self.compiled = compiled
        self._step_supports_amp_scaling = compiled  # GradScaler then hands over found_inf instead of reading it
        self._lr: dict[int, torch.Tensor] = {}
        # why the compiled update could not be compiled (then the same update runs eagerly): the run's step path
        # records it (usebench.train.fast_path.note_fallbacks)
        self.update_failure: str | None = None

    def _buffers(self, p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Two views shaped like ``p`` (a block, or a whole parameter) into the scratch buffer, grown as needed."""
        n = p.numel()
        if self._scratch is None or self._scratch.numel() < 2 * n or self._scratch.device != p.device \
                or self._scratch.dtype != p.dtype:
            self._scratch = torch.empty(2 * n, device=p.device, dtype=p.dtype)
        return self._scratch[:n].view_as(p), self._scratch[n : 2 * n].view_as(p)

    @torch.no_grad()
    def step(self, closure: Callable | None = None):
        """One update: m, v moving averages; p -= lr * (m / (sqrt(v) + eps) + wd * p)."""
        loss = closure() if closure is not None else None
        for index, group in enumerate(self.param_groups):
            params = [p for p in group["params"] if p.grad is not None]
            if params and self.compiled:
                self._step_compiled(index, group, params)
                continue
            if params and (self.foreach if self.foreach is not None else params[0].is_cuda):
                self._step_foreach(group, params)
                continue
            for p in params:
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                tensors = (p, p.grad, state["exp_avg"], state["exp_avg_sq"])
                if not all(t.is_contiguous() for t in tensors):
                    self._update(group, *tensors)
                    continue
                # elementwise operations, so block by block is the same bits: a block's tensors stay in the
                # cache between the operations (usebench.train.blocked_optim)
                flat = [t.view(-1) for t in tensors]
                for block in blocks(p.numel()):
                    self._update(group, *(t[block] for t in flat))
        return loss

    def _update(self, group: dict, p: torch.Tensor, grad: torch.Tensor, m: torch.Tensor, v: torch.Tensor) -> None:
        """The update of one parameter, or of one block of it."""
        b1, b2 = group["betas"]
        m.mul_(b1).add_(grad, alpha=1 - b1)
        v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
        update, decay = self._buffers(p)
        torch.sqrt(v, out=update)
        update.add_(group["eps"])
        torch.div(m, update, out=update)  # m / (sqrt(v) + eps)
        if group["weight_decay"]:
            torch.mul(p, group["weight_decay"], out=decay)  # wd * p, rounded, then added (as written)
            update.add_(decay)
        p.add_(update, alpha=-group["lr"])

    def _step_foreach(self, group: dict, params: list[torch.Tensor]) -> None:
        """The same update with torch's multi-tensor kernels: the same elementwise operations in the same order as
        the loop (so the same bits), a handful of launches per group instead of ~10 per parameter."""
        b1, b2 = group["betas"]
        for p in params:
            if not self.state[p]:
                self.state[p]["exp_avg"] = torch.zeros_like(p)
                self.state[p]["exp_avg_sq"] = torch.zeros_like(p)
        grads = [p.grad for p in params]
        ms = [self.state[p]["exp_avg"] for p in params]
        vs = [self.state[p]["exp_avg_sq"] for p in params]
        torch._foreach_mul_(ms, b1)
        torch._foreach_add_(ms, grads, alpha=1 - b1)
        torch._foreach_mul_(vs, b2)
        torch._foreach_addcmul_(vs, grads, grads, value=1 - b2)
        update = torch._foreach_sqrt(vs)
        torch._foreach_add_(update, group["eps"])
        update = torch._foreach_div(ms, update)  # m / (sqrt(v) + eps)
        if group["weight_decay"]:
            torch._foreach_add_(update, torch._foreach_mul(params, group["weight_decay"]))  # + wd * p, rounded first
        torch._foreach_add_(params, update, alpha=-group["lr"])

    def _step_compiled(self, index: int, group: dict, params: list[torch.Tensor]) -> None:
        """The update through :func:`compiled_bert_adam_update`; ``found_inf`` (fp16) comes from the GradScaler."""
        for p in params:
            if not self.state[p]:
                self.state[p]["exp_avg"] = torch.zeros_like(p)
                self.state[p]["exp_avg_sq"] = torch.zeros_like(p)
        lr = self._lr.get(index)
        if lr is None or lr.device != params[0].device:
            lr = self._lr[index] = torch.zeros((), dtype=torch.float32, device=params[0].device)
        lr.fill_(group["lr"])  # a kernel argument, not a copy from the host: no synchronisation
        b1, b2 = group["betas"]
        grads = [p.grad for p in params]
        if getattr(self, "grad_scale", None) is not None:  # GradScaler.step without unscale_ first: unscale here
            grads = torch._foreach_div(grads, self.grad_scale)
        args = (params, grads, [self.state[p]["exp_avg"] for p in params],
                [self.state[p]["exp_avg_sq"] for p in params], lr, b1, b2, group["eps"], group["weight_decay"],
                getattr(self, "found_inf", None))
        if self.update_failure is None:
            try:
                compiled_bert_adam_update()(*args)
                return
            except Exception as e:  # noqa: BLE001  sorted below
                if not compile_error(e):  # failed while running: parameters may be half updated, no rerun
                    raise
                self.update_failure = describe(e)  # failed while compiling: nothing ran, the eager update does
        bert_adam_update(*args)


def compile_error(error: BaseException) -> bool:
    """Whether ``error`` came from compiling (dynamo, AOTAutograd, inductor: e.g. no working C++ compiler), before
    the compiled code ran, as opposed to an error of the compiled code itself (a CUDA out-of-memory)."""
    try:
        from torch._dynamo.exc import TorchDynamoException
    except ImportError:
        return False
    return isinstance(error, TorchDynamoException)


@torch.no_grad()
def bert_adam_update(params: list[torch.Tensor], grads: list[torch.Tensor], ms: list[torch.Tensor],
                     vs: list[torch.Tensor], lr: torch.Tensor, b1: float, b2: float, eps: float, wd: float,
                     found_inf: torch.Tensor | None = None) -> None:
    """BertAdam's update in place (m, v, p); ``lr`` a 0-dim tensor. With ``found_inf`` (GradScaler's flag, fp16)
    nothing changes where it is set, decided on the device. The same operations as :meth:`BertAdam._step_foreach`
    except ``p - lr * u`` for ``p + (-lr) * u`` (a rounding apart), the form a tensor learning rate takes."""
    if found_inf is None:
        torch._foreach_mul_(ms, b1)
        torch._foreach_add_(ms, grads, alpha=1 - b1)
        torch._foreach_mul_(vs, b2)
        torch._foreach_addcmul_(vs, grads, grads, value=1 - b2)
        update = torch._foreach_sqrt(vs)
        torch._foreach_add_(update, eps)
        update = torch._foreach_div(ms, update)  # m / (sqrt(v) + eps)
        if wd:
            torch._foreach_add_(update, torch._foreach_mul(params, wd))
        torch._foreach_sub_(params, torch._foreach_mul(update, lr))
        return
    skip = found_inf.reshape(()) > 0
    for p, g, m, v in zip(params, grads, ms, vs):
        m_new = m * b1 + g * (1 - b1)
        v_new = v * b2 + g * g * (1 - b2)
        update = m_new / (v_new.sqrt() + eps) + (p * wd if wd else 0.0)
        m.copy_(torch.where(skip, m, m_new))
        v.copy_(torch.where(skip, v, v_new))
        p.copy_(torch.where(skip, p, p - lr * update))


_COMPILED_UPDATE: list = []


def compiled_bert_adam_update():
    """:func:`bert_adam_update` through ``torch.compile`` (built once per process; shapes are fixed per run)."""
    if not _COMPILED_UPDATE:
        _COMPILED_UPDATE.append(torch.compile(bert_adam_update, dynamic=False))
    return _COMPILED_UPDATE[0]


def build_optimizer(cfg: TrainConfig, named: Iterable[tuple[str, nn.Parameter]],
                    fused: bool = False) -> torch.optim.Optimizer:
    """The optimizer ``cfg.optimizer`` over ``named`` parameters; ``fused`` (the fast path): fused or compiled
    update kernels where there are some (:func:`fused_kind`), the reference path's updates otherwise."""
    groups = param_groups(named, cfg.weight_decay)
    if not groups:
        raise ConfigError("no trainable parameters (every parameter has requires_grad=False)")
    device = groups[0]["params"][0].device
    kind = fused_kind(cfg, device) if fused else None
    # The reference path's updates are torch's per-parameter loop bit for bit (tests/train/test_step_path.py): on a
    # CPU that loop run over cache-sized blocks (usebench.train.blocked_optim: 67 -> 23 ms a MiniLM step), on a
    # GPU (or for a parameter the blocks cannot take) the multi-tensor foreach kernels (one launch for many
    # tensors). torch's fused kernels round differently, so only the fast path uses them.
    blocked = takes(p for g in groups for p in g["params"])  # a CPU's contiguous float parameters
    if cfg.optimizer == "adamw":
        if kind:
            return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.adam_betas, eps=cfg.eps, fused=True)
        return (BlockedAdamW(groups, lr=cfg.lr, betas=cfg.adam_betas, eps=cfg.eps) if blocked else
                torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.adam_betas, eps=cfg.eps, foreach=True))
    if cfg.optimizer == "rmsprop":
        return (BlockedRMSprop(groups, lr=cfg.lr, alpha=cfg.rmsprop_alpha, eps=cfg.eps) if blocked else
                torch.optim.RMSprop(groups, lr=cfg.lr, alpha=cfg.rmsprop_alpha, eps=cfg.eps, foreach=True))
    if cfg.optimizer == "bert_adam":
        return BertAdam(groups, lr=cfg.lr, betas=cfg.adam_betas, eps=cfg.eps, compiled=kind is not None)
    raise ConfigError(f"unknown optimizer {cfg.optimizer!r}")


def fused_kind(cfg: TrainConfig, device: torch.device) -> str | None:
    """How ``cfg.optimizer`` runs fused on ``device``: ``"fused"`` (torch's fused AdamW kernel, CUDA and CPU),
    ``"compiled"`` (BertAdam through torch.compile), or None (RMSprop: torch has no fused kernel, so the
    reference path's update)."""
    if cfg.optimizer == "adamw":
        from torch.optim.optimizer import _get_fused_kernels_supported_devices

        return "fused" if device.type in _get_fused_kernels_supported_devices() else None
    if cfg.optimizer == "bert_adam":
        return "compiled"
    return None


def lr_multiplier(cfg: TrainConfig, total_steps: int) -> Callable[[int], float]:
    """step (0-based, the step about to be taken) -> factor of ``cfg.lr``."""
    warmup = cfg.warmup_steps or math.ceil(cfg.warmup_ratio * total_steps)
    if cfg.scheduler == "constant":
        return lambda step: 1.0
    if cfg.scheduler == "warmup_constant":
        return lambda step: min(1.0, step / warmup) if warmup else 1.0  # as HF get_constant_schedule_with_warmup
    if cfg.scheduler == "linear":
        def linear(step: int) -> float:
            if step < warmup:
                return step / warmup  # as HF get_linear_schedule_with_warmup (the first step has lr 0)
            return max(0.0, (total_steps - step) / max(1, total_steps - warmup))
        return linear
    if cfg.scheduler == "piecewise":
        milestones, factors = list(cfg.lr_milestones), list(cfg.lr_factors)

        def piecewise(step: int) -> float:
            # milestones count 1-based steps as the CT paper does: steps 1-500 -> factors[0], 501-1000 -> [1]...
            return factors[sum(step + 1 > m for m in milestones)]
        return piecewise
    raise ConfigError(f"unknown scheduler {cfg.scheduler!r}")


def build_scheduler(cfg: TrainConfig, optimizer: torch.optim.Optimizer,
                    total_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` stepping once per optimizer step."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_multiplier(cfg, total_steps))
