"""One optimizer step of the shared training loop (:mod:`usebench.train.loop`) and its bookkeeping: the forward
under autocast, loss scaling (fp16), clipping, the LR schedule advanced only when the optimizer really stepped,
and the step's numbers read back from the device at log points only, with the NaN/inf guard."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from usebench.errors import BenchError
from usebench.train.config import TrainConfig
from usebench.train.loop_state import RunState
from usebench.train.runtime import autocast_context, to_device
from usebench.train.trainlog import TrainLog


class TrainingDivergedError(BenchError):
    """The loss or the gradient norm became NaN/inf."""


@dataclass
class StepDone:
    """A finished step whose numbers are still on the device: read at the next log, dev or save point (one
    host synchronisation there, none per step)."""

    step: int  # 1-based
    loss: torch.Tensor
    grad_norm: torch.Tensor | None
    extras: dict[str, Any]
    lr: float


def split_output(out: Any) -> tuple[torch.Tensor, dict[str, Any]]:
    """(loss, extras); tensor extras stay on the device (detached) until the next log point reads them."""
    if isinstance(out, torch.Tensor):
        return out, {}
    if isinstance(out, dict) and "loss" in out:
        return out["loss"], {k: v.detach() if isinstance(v, torch.Tensor) else float(v)
                             for k, v in out.items() if k != "loss"}
    raise BenchError("TrainModule.forward must return a loss tensor or a dict with a 'loss' entry")


def one_step(run: RunState, step: int, batch: Any) -> StepDone:
    """One optimizer step on ``batch`` (0-based ``step``), without reading any number back from the device."""
    cfg = run.cfg
    batch = to_device(batch, run.device)
    with autocast_context(cfg, run.device):
        loss, extras = split_output(run.forward(batch))
    run.scaler.scale(loss).backward()
    run.scaler.unscale_(run.optimizer)  # no-op unless fp16: clipping sees the true gradients
    grad_norm = None
    if cfg.grad_clip is not None:
        grad_norm = torch.nn.utils.clip_grad_norm_(run.params, cfg.grad_clip, foreach=True)
        if run.scaler.is_enabled():
            # Under fp16 an overflowing step is expected: the scaler skips it and lowers the scale (as the
            # references do), so only the loss is guarded.
            grad_norm = None
    settle_scale(run)  # fp16 fast path: the previous step's skip decision, read one step late
    lr = run.optimizer.param_groups[0]["lr"]
    run.scaler.step(run.optimizer)
    run.scaler.update()
    if run.step_path.fast and run.scaler.is_enabled():
        watch_scale(run)
    elif optimizer_stepped(run):
        run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    return StepDone(step + 1, loss.detach(), grad_norm, extras, lr)


def track_scale(run: RunState) -> None:
    """Remember the loss scale before this call's first step (fp16 only): see :func:`optimizer_stepped`."""
    run.last_scale = run.scaler.get_scale() if run.scaler.is_enabled() else None


def optimizer_stepped(run: RunState) -> bool:
    """Whether the last ``scaler.step`` stepped the optimizer. Under fp16 the GradScaler skips a step whose
    gradients overflowed and halves its scale; the LR schedule must not advance then (as torch's AMP recipe and
    the references' loops do), else the skipped steps shorten warm-up. Reading the scale costs one host sync per
    step, under fp16 only (the fast path reads it one step late instead: :func:`watch_scale`)."""
    if not run.scaler.is_enabled():
        return True
    scale = run.scaler.get_scale()
    stepped = run.last_scale is None or scale >= run.last_scale
    run.last_scale = scale
    run.skipped_steps += not stepped
    return stepped


def watch_scale(run: RunState) -> None:
    """fp16 on the fast path: start copying the scale after this step's update to the host, to be read by
    :func:`settle_scale` once the next step is queued. The skip decision and the schedule are exactly
    :func:`optimizer_stepped`'s, without a host synchronisation per step: the wait is for a step the device has
    long finished while the next one's kernels keep it busy."""
    scale = run.scaler._get_scale_async()  # the scaler's device tensor (get_scale() would synchronise here)
    if scale.device.type == "cuda":
        host = torch.empty_like(scale, device="cpu", pin_memory=True)
        host.copy_(scale, non_blocking=True)
        done = torch.cuda.Event()
        done.record()
        run.pending_scale = (host, done)
    else:
        run.pending_scale = (float(scale), None)  # already on the host: nothing to wait for


def settle_scale(run: RunState) -> None:
    """Take the pending scale (:func:`watch_scale`): advance the LR schedule if the optimizer stepped, as
    :func:`optimizer_stepped` decides. Called before the next step's update and at every log/save point."""
    if run.pending_scale is None:
        return
    value, done = run.pending_scale
    run.pending_scale = None
    if done is not None:
        done.synchronize()
        value = float(value)
    stepped = run.last_scale is None or value >= run.last_scale
    run.last_scale = value
    run.skipped_steps += not stepped
    if stepped:
        run.scheduler.step()


def settle(run: RunState, pending: list[StepDone], log: TrainLog) -> float | None:
    """Read the pending steps' numbers back (one synchronisation), stop at the first non-finite loss or
    gradient norm with its step, and log them in order. Returns the last loss (None when nothing pended)."""
    settle_scale(run)  # the schedule is up to date wherever the train state may be saved
    if run.scaler.is_enabled():  # fp16: every line says how many steps the loss scaler skipped so far
        log.counters["skipped_steps"] = run.skipped_steps
    if not pending:
        return None
    values = torch.stack([d.loss.float() for d in pending]).tolist()
    norms = [d.grad_norm for d in pending]
    norm_values = torch.stack([n.float() for n in norms]).tolist() if norms[0] is not None else [None] * len(norms)
    extras = [{k: float(v) for k, v in d.extras.items()} for d in pending]
    for d, value, norm, extra in zip(pending, values, norm_values, extras):
        guard(run.method.name, d.step, value, norm, run.cfg, run.state_dir)
        log.add(d.step, value, extra if norm is None else {**extra, "grad_norm": norm}, d.lr)
    pending.clear()
    return values[-1]


def guard(method: str, step: int, loss: float, grad_norm: float | None, cfg: TrainConfig, state_dir: Path) -> None:
    """Raise :class:`TrainingDivergedError` naming the step and what to change when the loss or the gradient
    norm is NaN/inf."""
    bad = None if math.isfinite(loss) else f"loss is {loss}"
    if bad is None and grad_norm is not None and not math.isfinite(grad_norm):
        bad = f"gradient norm is {grad_norm}"
    if bad:
        where = f"; the last train state is in {state_dir}" if (state_dir / "state.pt").is_file() else ""
        raise TrainingDivergedError(
            f"{method}: {bad} at step {step} (lr {cfg.lr}, amp {cfg.amp}, batch {cfg.batch_size}){where}. "
            f"Lower lr (--set lr=...), set amp=off, or check the corpus for degenerate lines.")
