"""What one call of the shared training loop (:mod:`usebench.train.loop`) holds and writes: the run's objects
(module, optimizer, schedule, loss scaler) built by :func:`setup_run`, the resumable train state saved every
``save_every`` steps and restored on resume, the dev evaluation that keeps the best encoder, and the final
export."""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from usebench.errors import BenchError
from usebench.fp32_policy import fp32_matmul_policy
from usebench.train.checkpoint import builtin_writer, export_checkpoint, rng_state, save_train_state, set_rng_state
from usebench.train.config import TrainConfig
from usebench.train.compiled_step import CompiledStep
from usebench.train.fast_path import apply_fallbacks, compile_dynamic, for_method
from usebench.train.optim import build_optimizer, build_scheduler
from usebench.train.optim import unique_parameters
from usebench.train.plugin import Method
from usebench.train.runtime import Dist, seed_everything
from usebench.train.step_path import REFERENCE, StepPath

CHECKPOINT_DIR, STATE_DIR, LOG_FILE, BEST_DIR = "checkpoint", "train_state", "log.jsonl", "dev_best"
CURVE_PROBE = ".curve_probe"  # the export a curve point scores, removed after it


@dataclass
class RunState:
    """Everything one training call holds (keeps the step function short)."""

    method: Method
    cfg: TrainConfig
    texts: list[str]
    seed: int
    dist: Dist
    device: torch.device
    module: Any
    forward: Any  # the module, or its DDP wrapper
    params: list[torch.nn.Parameter]
    optimizer: torch.optim.Optimizer
    scheduler: Any
    total: int
    state_dir: Path
    run_hash: str
    scaler: Any = None  # torch.amp.GradScaler: active with amp=fp16 only
    last_scale: float | None = None  # the scaler's scale after the previous step (fp16: a drop = a skipped step)
    dev_best: dict[str, Any] | None = None
    dev_stale: int = 0  # dev evaluations since the last new best (early stopping)
    workers: int = 0  # collate worker processes (usebench.train.batches); the weights do not depend on it
    step_path: StepPath = REFERENCE  # how each step runs (usebench.train.step_path); recorded in method.json
    pending_scale: Any = None  # fp16 on the fast path: the last step's loss scale, on its way to the host
    skipped_steps: int = 0  # fp16: optimizer steps the loss scaler skipped (overflowed gradients) so far


def setup_run(method: Method, cfg: TrainConfig, texts: list[str], seed: int, dist: Dist, dev: torch.device,
              total: int, out_dir: Path, run_hash: str, scaler: Any, step_path: StepPath = REFERENCE,
              schedule_steps: int | None = None) -> RunState:
    """Seed, build the plugin's module, its optimizer and schedule, wrap it in DDP on several ranks. ``scaler``
    comes from the caller (:func:`usebench.train.runtime.grad_scaler`), where tests replace it. ``total``: the
    steps this run trains; ``schedule_steps`` (default ``total``): the budget the LR schedule is laid out over
    (longer when ``stop_at_step`` truncates the run)."""
    seed_everything(seed)  # before build: new heads (decoder cross-attention, MLP) initialise reproducibly
    module = method.build(cfg, dev).to(dev)
    named = unique_parameters(method.trainable_parameters(module))
    step_path = for_method(step_path, method, cfg, dev)
    optimizer = build_optimizer(cfg, named, fused=step_path.fused_optimizer)
    scheduler = build_scheduler(cfg, optimizer, total if schedule_steps is None else schedule_steps)
    forward = module
    if step_path.compile:  # the fast path: DDP (below) wraps the compiled module
        forward = CompiledStep(module, step_path.compile_mode, compile_dynamic(step_path, method),
                               eager_calls=method.eager_steps)
    if dist.world > 1:
        from torch.nn.parallel import DistributedDataParallel

        forward = DistributedDataParallel(forward, device_ids=[dev.index] if dev.type == "cuda" else None,
                                          find_unused_parameters=method.ddp_find_unused_parameters)
    return RunState(method, cfg, texts, seed, dist, dev, module, forward, [p for _, p in named], optimizer,
                    scheduler, total, out_dir / STATE_DIR, run_hash, scaler, step_path=step_path)


def save_state(run: RunState, step: int) -> None:
    """Write the resumable train state after ``step`` steps (main rank; every rank waits for it)."""
    if run.dist.main:
        save_train_state(run.state_dir, {
            "method": run.method.name, "config_hash": run.run_hash, "step": step,
            "module": run.module.state_dict(), "optimizer": run.optimizer.state_dict(),
            "scheduler": run.scheduler.state_dict(), "rng": rng_state(run.device), "dev_best": run.dev_best,
            "scaler": run.scaler.state_dict(),
            "dev_stale": run.dev_stale,
            "skipped_steps": run.skipped_steps,
            # what ran so far (fallbacks included) and what the setup chose: a resume must choose the same
            "step_path": run.step_path.record(), "planned_step_path": run.step_path.planned(),
            # The data position is a function of the step (see Method.batch_indices); stored for readers.
            "data_position": {"step": step, "sentences_seen": step * run.method.sentences_per_step(run.cfg)
                              * run.dist.world},
        })
    if run.dist.world > 1:
        torch.distributed.barrier()


class StepPathMismatchError(BenchError):
    """A train state saved on one step path (or precision), resumed on another."""


def check_resumed_path(run: RunState, state: dict[str, Any]) -> None:
    """Refuse to resume a train state saved on another step path or precision: the optimizer's fused/foreach state
    and the numbers so far belong to that path, and the record could not say what ran. A state that carries the
    same path hands its record on (what ran before the resume, fallbacks and all: a part that had failed stays
    eager). A state saved before the path was recorded is taken, with a note."""
    saved = state.get("planned_step_path")
    if saved is None:
        run.step_path = run.step_path.with_note(f"resumed at step {state['step']} from a train state that did not "
                                                "record its step path")
        return
    now = run.step_path.planned()
    if saved != now:
        diffs = ", ".join(f"{k} {saved.get(k)!r} -> {now[k]!r}" for k in now if saved.get(k) != now[k])
        raise StepPathMismatchError(
            f"{run.state_dir}: this train state was saved after step {state['step']} on another step path or "
            f"precision than this run takes ({diffs}). Resume it as it ran (the same --fast-path / "
            f"$BENCH_FAST_PATH, $BENCH_TF32, $BENCH_COMPILE_MODE, amp and device type), or train the run afresh "
            f"(delete {run.state_dir}).")
    run.step_path = StepPath.from_record(state["step_path"]).with_note(f"resumed at step {state['step']}")
    apply_fallbacks(run, run.step_path.fallbacks)


def restore(run: RunState, state: dict[str, Any]) -> int:
    """Load a saved train state into ``run`` (on the step path it was saved on: :func:`check_resumed_path`);
    returns the step it was saved after."""
    check_resumed_path(run, state)
    run.module.load_state_dict(state["module"])
    run.optimizer.load_state_dict(state["optimizer"])
    run.scheduler.load_state_dict(state["scheduler"])
    if state.get("scaler"):
        run.scaler.load_state_dict(state["scaler"])
    set_rng_state(state["rng"], run.device)
    run.dev_best = state.get("dev_best")
    run.dev_stale = int(state.get("dev_stale", 0))
    run.skipped_steps = int(state.get("skipped_steps", 0))
    return int(state["step"])


def export(run: RunState, target: Path, run_config: dict[str, Any], extra: dict[str, Any],
           pooling: str | None = None) -> Path:
    """Export the current weights with the method's pooling, or with the stateless ``pooling`` (a dev probe)."""
    method, cfg = run.method, run.cfg
    model, tokenizer = method.export_module(run.module)
    own = pooling is None or pooling == method.eval_pooling(cfg)
    return export_checkpoint(model, tokenizer, target, method=method.name,
                             pooling=method.eval_pooling(cfg) if own else pooling,
                             max_length=eval_max_length(cfg, model), config=run_config, base_model=cfg.model,
                             extra={**(method.method_json(cfg) if own else {}), **extra,
                                    "step_path": run.step_path.record()},
                             write_extra=(lambda d: method.export_extra(run.module, cfg, d)) if own else None,
                             pooling_writer=method.pooling_writer(cfg) if own else builtin_writer(pooling),
                             dropout_from=cfg.model)


def eval_max_length(cfg: TrainConfig, model: Any) -> int:
    """Max tokens at evaluation: ``cfg.eval_max_length``, else the base checkpoint's declared limit (e.g. 256
    for MiniLM), else 512, never above the position table. Training lengths (SimCSE 32, CT 75) are a training
    choice: the reference evaluations do not truncate there."""
    from usebench.eval.models import resolve_model

    declared = cfg.eval_max_length or resolve_model(cfg.model).max_length or 512
    return int(min(declared, getattr(model.config, "max_position_embeddings", declared)))


def dev_step(run: RunState, step: int, out_dir: Path, run_config: dict[str, Any],
             dev_eval: Callable[[Path], float]) -> bool:
    """Export, score on the dev task with the method's dev pooling, keep the encoder (exported with its own
    pooling) if it is the best so far (main rank only). Returns whether patience ran out (early stop)."""
    stop = torch.zeros(1)
    if run.dist.main:
        info = {"seed": run.seed, "steps": step}
        dev_pooling = run.method.dev_pooling(run.cfg)
        probe = export(run, out_dir / ".dev_probe", run_config, info, pooling=dev_pooling)
        with fp32_matmul_policy(tf32=False):  # dev selection at full fp32, also in a TF32 run (docs/scale-out.md)
            score = float(dev_eval(probe))
        if run.dev_best is None or score > run.dev_best["score"]:
            run.dev_best = {"task": run.cfg.dev_task, "step": step, "score": score, "pooling": dev_pooling,
                            "metric": run.cfg.dev_metric or "main score",  # loss: score = -validation loss
                            "tf32": False}  # scored with fp32 matmuls at full precision, whatever the run's
            run.dev_stale = 0
            shutil.rmtree(out_dir / BEST_DIR, ignore_errors=True)
            if dev_pooling == run.method.eval_pooling(run.cfg):
                os.replace(probe, out_dir / BEST_DIR)
            else:  # the same weights, exported with the pooling the checkpoint declares
                export(run, out_dir / BEST_DIR, run_config, info)
        else:
            run.dev_stale += 1
        shutil.rmtree(probe, ignore_errors=True)
        stop[0] = float(run.cfg.dev_patience is not None and run.dev_stale >= run.cfg.dev_patience)
    if run.dist.world > 1:
        stop = stop.to(run.device)
        torch.distributed.broadcast(stop, src=0)  # every rank stops at the same step
    return bool(stop.item())


def curve_step(run: RunState, step: int, out_dir: Path, run_config: dict[str, Any],
               curve_eval: Callable[[Path], dict[str, Any]]) -> dict[str, Any] | None:
    """Score the weights after ``step`` on the curve task (main rank): export them with the method's own pooling,
    score, remove the export. Every RNG (python, numpy, torch) is put back as it was, so the run goes on exactly
    as one without the curve. Returns the log line (None on other ranks)."""
    line = None
    if run.dist.main:
        saved = rng_state(run.device)
        probe = out_dir / CURVE_PROBE
        try:
            export(run, probe, run_config, {"seed": run.seed, "steps": step})
            with fp32_matmul_policy(tf32=False), torch.no_grad():
                line = {"step": step, **curve_eval(probe)}
        finally:
            shutil.rmtree(probe, ignore_errors=True)
            set_rng_state(saved, run.device)
    if run.dist.world > 1:
        torch.distributed.barrier()
    return line


def finish(run: RunState, out_dir: Path, run_config: dict[str, Any], dev_eval: Any, done: int) -> Path:
    """Export the final (or dev-best) encoder after ``done`` steps, then drop the train state."""
    target = out_dir / CHECKPOINT_DIR
    if run.dist.main:
        best = out_dir / BEST_DIR
        if dev_eval is not None and run.dev_best is not None and best.is_dir():
            from usebench.store import write_json_atomic

            meta = json.loads((best / "method.json").read_text(encoding="utf-8"))
            meta.update({"dev": run.dev_best, "steps": run.dev_best["step"], "steps_trained": done,
                         "step_path": run.step_path.record()})  # with the notes of the whole run
            write_json_atomic(best / "method.json", meta)
            shutil.rmtree(target, ignore_errors=True)
            os.replace(best, target)
        else:
            export(run, target, run_config, {"seed": run.seed, "steps": done})
        shutil.rmtree(run.state_dir, ignore_errors=True)
    if run.dist.world > 1:
        torch.distributed.barrier()
    return target
