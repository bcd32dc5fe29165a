"""The shared training loop: every method plugin trains through :func:`train`.

What it does for a plugin (see :mod:`usebench.train.plugin` for what the plugin supplies):
seeding (python, numpy, torch; each step's collate RNG is derived from (seed, step, rank)); batches collated
ahead of the step by worker processes (:mod:`usebench.train.batches`); optimizer and
schedule from the config (:mod:`usebench.train.optim`); fp32 unless ``amp`` asks for bf16 or fp16 (with loss
scaling) autocast; gradient clipping;
a tqdm bar with loss and steps/s; ``log.jsonl`` every ``log_every`` steps (losses and gradient norms stay on the
device between log, dev and save points: no host synchronisation per step); a resumable train state every
``save_every`` steps (module, optimizer, scheduler, RNG states, data position), from which an interrupted run
continues to the same final weights as an uninterrupted one on deterministic hardware; a stop with a clear
message on a NaN/inf loss or gradient; optional dev evaluation with best-checkpoint selection; and, when
launched by ``torchrun``/``accelerate launch`` (``WORLD_SIZE`` > 1), torch DistributedDataParallel.
Finally the plugin's export module is written by :func:`usebench.train.checkpoint.export_checkpoint`.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from usebench.train.checkpoint import (
    builtin_writer,
    export_checkpoint,
    load_train_state,
    rng_state,
    save_train_state,
    set_rng_state,
)
from usebench.train.config import VALIDATION_LOSS, TrainConfig, config_to_dict
from usebench.errors import BenchError
from usebench.train.optim import build_optimizer, build_scheduler
from usebench.train.plugin import Method, unique_parameters
from usebench.store import config_hash
from usebench.train.runtime import (
    Dist,
    autocast_context,
    deterministic_mode,
    deterministic_requested,
    grad_scaler,
    init_distributed,
    pick_device,
    seed_everything,
    to_device,
)
from usebench.train.batches import StepBatches, default_workers, step_batches
from usebench.train.trainlog import TrainLog
from usebench.train.validation import loss_evaluator, read_dev_corpus

CHECKPOINT_DIR, STATE_DIR, LOG_FILE, BEST_DIR = "checkpoint", "train_state", "log.jsonl", "dev_best"


class TrainingDivergedError(BenchError):
    """The loss or the gradient norm became NaN/inf."""


@dataclass
class TrainResult:
    """What :func:`train` returns."""

    checkpoint: Path
    steps: int
    resumed_from: int | None
    final_loss: float | None
    seconds: float
    steps_per_s: float
    dev_best: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)  # the log.jsonl lines of this call
    module: Any = field(default=None, repr=False)  # the trained TrainModule (None when nothing was trained)


def prepare_corpus(corpus: Sequence[str], cfg: TrainConfig, min_sentences: int) -> list[str]:
    """Strip lines, drop empty ones, clip lines longer than ``cfg.max_chars`` (tokenizers truncate at
    ``max_length`` tokens anyway); an empty corpus or one smaller than a batch is an error."""
    texts = [t.strip()[: cfg.max_chars] for t in corpus]
    texts = [t for t in texts if t]
    if not texts:
        raise BenchError("the training corpus is empty (no non-blank line)")
    if len(texts) < min_sentences:
        raise BenchError(f"the training corpus has {len(texts)} sentences, fewer than one batch ({min_sentences}); "
                         f"lower batch_size or use a larger corpus")
    return texts


def _split_output(out: Any) -> tuple[torch.Tensor, dict[str, Any]]:
    """(loss, extras); tensor extras stay on the device (detached) until the next log point reads them."""
    if isinstance(out, torch.Tensor):
        return out, {}
    if isinstance(out, dict) and "loss" in out:
        return out["loss"], {k: v.detach() if isinstance(v, torch.Tensor) else float(v)
                             for k, v in out.items() if k != "loss"}
    raise BenchError("TrainModule.forward must return a loss tensor or a dict with a 'loss' entry")


def _guard(method: str, step: int, loss: float, grad_norm: float | None, cfg: TrainConfig, state_dir: Path) -> None:
    bad = None if math.isfinite(loss) else f"loss is {loss}"
    if bad is None and grad_norm is not None and not math.isfinite(grad_norm):
        bad = f"gradient norm is {grad_norm}"
    if bad:
        where = f"; the last train state is in {state_dir}" if (state_dir / "state.pt").is_file() else ""
        raise TrainingDivergedError(
            f"{method}: {bad} at step {step} (lr {cfg.lr}, amp {cfg.amp}, batch {cfg.batch_size}){where}. "
            f"Lower lr (--set lr=...), set amp=off, or check the corpus for degenerate lines.")


def check_trainable(method: Method, cfg: TrainConfig, corpus: Sequence[Any], seed: int = 0, world: int = 1) -> int:
    """What :func:`train` checks about the corpus, without building a model: the examples survive cleaning,
    fill a batch, and the first batch can be drawn (e.g. BERT-flow's larger init batch). Returns the step
    budget. The run grid calls it for every unit before the first one trains."""
    method.pooling_writer(cfg)  # an unexportable pooling fails before any training
    texts = _prepare(method, cfg, corpus, method.sentences_per_step(cfg) * world)
    method.batch_indices(cfg, len(texts), 0, seed, 0, world)
    return method.total_steps(cfg, len(texts), world)


def _prepare(method: Method, cfg: TrainConfig, corpus: Sequence[Any], min_examples: int) -> list[Any]:
    """Sentences: cleaned here, then filtered by the method; labeled examples: the method's own checks."""
    if method.data_kind == "labeled":
        return method.prepare_examples(cfg, list(corpus), min_examples)
    return prepare_corpus(method.filter_corpus(cfg, prepare_corpus(corpus, cfg, 1)), cfg, min_examples)


def _corpus_fingerprint(examples: Sequence[Any]) -> str:
    """sha256 of the examples in order (labeled examples as JSON)."""
    import hashlib

    h = hashlib.sha256()
    for t in examples:
        line = t if isinstance(t, str) else json.dumps(t, sort_keys=True, default=str)
        h.update(line.encode("utf-8", "surrogatepass") + b"\n")
    return h.hexdigest()


@dataclass
class _Run:
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


@dataclass
class _Done:
    """A finished step whose numbers are still on the device: read at the next log, dev or save point (one
    host synchronisation there, none per step)."""

    step: int  # 1-based
    loss: torch.Tensor
    grad_norm: torch.Tensor | None
    extras: dict[str, Any]
    lr: float


def _one_step(run: _Run, step: int, batch: Any) -> _Done:
    """One optimizer step on ``batch`` (0-based ``step``), without reading any number back from the device."""
    cfg = run.cfg
    batch = to_device(batch, run.device)
    with autocast_context(cfg, run.device):
        loss, extras = _split_output(run.forward(batch))
    run.scaler.scale(loss).backward()
    run.scaler.unscale_(run.optimizer)  # no-op unless fp16: clipping sees the true gradients
    grad_norm = None
    if cfg.grad_clip is not None:
        grad_norm = torch.nn.utils.clip_grad_norm_(run.params, cfg.grad_clip, foreach=True)
        if run.scaler.is_enabled():
            # Under fp16 an overflowing step is expected: the scaler skips it and lowers the scale (as the
            # references do), so only the loss is guarded.
            grad_norm = None
    lr = run.optimizer.param_groups[0]["lr"]
    run.scaler.step(run.optimizer)
    run.scaler.update()
    if _optimizer_stepped(run):
        run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    return _Done(step + 1, loss.detach(), grad_norm, extras, lr)


def _optimizer_stepped(run: _Run) -> bool:
    """Whether the last ``scaler.step`` stepped the optimizer. Under fp16 the GradScaler skips a step whose
    gradients overflowed and halves its scale; the LR schedule must not advance then (as torch's AMP recipe and
    the references' loops do), else the skipped steps shorten warm-up. Reading the scale costs one host sync per
    step, under fp16 only."""
    if not run.scaler.is_enabled():
        return True
    scale = run.scaler.get_scale()
    stepped = run.last_scale is None or scale >= run.last_scale
    run.last_scale = scale
    return stepped


def _settle(run: _Run, pending: list[_Done], log: TrainLog) -> float | None:
    """Read the pending steps' numbers back (one synchronisation), stop at the first non-finite loss or
    gradient norm with its step, and log them in order. Returns the last loss (None when nothing pended)."""
    if not pending:
        return None
    values = torch.stack([d.loss.float() for d in pending]).tolist()
    norms = [d.grad_norm for d in pending]
    norm_values = torch.stack([n.float() for n in norms]).tolist() if norms[0] is not None else [None] * len(norms)
    extras = [{k: float(v) for k, v in d.extras.items()} for d in pending]
    for d, value, norm, extra in zip(pending, values, norm_values, extras):
        _guard(run.method.name, d.step, value, norm, run.cfg, run.state_dir)
        log.add(d.step, value, extra, d.lr)
    pending.clear()
    return values[-1]


def _save_state(run: _Run, step: int) -> None:
    if run.dist.main:
        save_train_state(run.state_dir, {
            "method": run.method.name, "config_hash": run.run_hash, "step": step,
            "module": run.module.state_dict(), "optimizer": run.optimizer.state_dict(),
            "scheduler": run.scheduler.state_dict(), "rng": rng_state(run.device), "dev_best": run.dev_best,
            "scaler": run.scaler.state_dict(),
            "dev_stale": run.dev_stale,
            # The data position is a function of the step (see Method.batch_indices); stored for readers.
            "data_position": {"step": step, "sentences_seen": step * run.method.sentences_per_step(run.cfg)
                              * run.dist.world},
        })
    if run.dist.world > 1:
        torch.distributed.barrier()


def _restore(run: _Run, state: dict[str, Any]) -> int:
    run.module.load_state_dict(state["module"])
    run.optimizer.load_state_dict(state["optimizer"])
    run.scheduler.load_state_dict(state["scheduler"])
    if state.get("scaler"):
        run.scaler.load_state_dict(state["scaler"])
    set_rng_state(state["rng"], run.device)
    run.dev_best = state.get("dev_best")
    run.dev_stale = int(state.get("dev_stale", 0))
    return int(state["step"])


def _export(run: _Run, target: Path, run_config: dict[str, Any], extra: dict[str, Any],
            pooling: str | None = None) -> Path:
    """Export the current weights with the method's pooling, or with the stateless ``pooling`` (a dev probe)."""
    method, cfg = run.method, run.cfg
    model, tokenizer = method.export_module(run.module)
    own = pooling is None or pooling == method.eval_pooling(cfg)
    return export_checkpoint(model, tokenizer, target, method=method.name,
                             pooling=method.eval_pooling(cfg) if own else pooling,
                             max_length=eval_max_length(cfg, model), config=run_config, base_model=cfg.model,
                             extra={**(method.method_json(cfg) if own else {}), **extra},
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


def _dev_step(run: _Run, step: int, out_dir: Path, run_config: dict[str, Any],
              dev_eval: Callable[[Path], float]) -> bool:
    """Export, score on the dev task with the method's dev pooling, keep the encoder (exported with its own
    pooling) if it is the best so far (main rank only). Returns whether patience ran out (early stop)."""
    stop = torch.zeros(1)
    if run.dist.main:
        info = {"seed": run.seed, "steps": step}
        dev_pooling = run.method.dev_pooling(run.cfg)
        probe = _export(run, out_dir / ".dev_probe", run_config, info, pooling=dev_pooling)
        score = float(dev_eval(probe))
        if run.dev_best is None or score > run.dev_best["score"]:
            run.dev_best = {"task": run.cfg.dev_task, "step": step, "score": score, "pooling": dev_pooling,
                            "metric": run.cfg.dev_metric or "main score"}  # loss: score = -validation loss
            run.dev_stale = 0
            shutil.rmtree(out_dir / BEST_DIR, ignore_errors=True)
            if dev_pooling == run.method.eval_pooling(run.cfg):
                os.replace(probe, out_dir / BEST_DIR)
            else:  # the same weights, exported with the pooling the checkpoint declares
                _export(run, out_dir / BEST_DIR, run_config, info)
        else:
            run.dev_stale += 1
        shutil.rmtree(probe, ignore_errors=True)
        stop[0] = float(run.cfg.dev_patience is not None and run.dev_stale >= run.cfg.dev_patience)
    if run.dist.world > 1:
        stop = stop.to(run.device)
        torch.distributed.broadcast(stop, src=0)  # every rank stops at the same step
    return bool(stop.item())


def train(method: Method, cfg: TrainConfig, corpus: Sequence[str], out_dir: str | Path, *, seed: int = 0,
          device: str | None = None, resume: bool = True, show_progress: bool = True,
          run_config: dict[str, Any] | None = None, dev_eval: Callable[[Path], float] | None = None,
          on_step: Callable[[int], None] | None = None, workers: int | None = None,
          deterministic: bool | None = None) -> TrainResult:
    """Train ``method`` with ``cfg`` on ``corpus`` and export ``<out_dir>/checkpoint``.

    ``run_config`` is the JSON-able description recorded in method.json (its hash identifies the run; default:
    method, config, seed and a corpus fingerprint). With ``resume`` a finished checkpoint of the same run is
    returned as is, and a saved train state is continued. ``dev_eval(checkpoint_dir) -> score`` (higher is
    better) is called when ``method.dev_due`` says (every ``cfg.dev_every`` steps by default); the best export is
    kept, and with ``cfg.dev_patience`` training stops after that many evaluations without a new best (the
    result's ``steps`` then counts the steps trained). ``on_step(step)`` runs after each
    step (tests use it to simulate a crash). ``workers``: collate worker processes (default
    :func:`usebench.train.batches.default_workers`); the trained weights are the same for any number.
    ``deterministic`` (default ``$BENCH_DETERMINISTIC``): deterministic kernels only
    (:func:`usebench.train.runtime.deterministic_mode`), what a bit-identical resume on a GPU needs.
    """
    with deterministic_mode(deterministic_requested(deterministic)):
        return _train(method, cfg, corpus, out_dir, seed=seed, device=device, resume=resume,
                      show_progress=show_progress, run_config=run_config, dev_eval=dev_eval, on_step=on_step,
                      workers=workers)


def _train(method: Method, cfg: TrainConfig, corpus: Sequence[str], out_dir: str | Path, *, seed: int,
           device: str | None, resume: bool, show_progress: bool, run_config: dict[str, Any] | None,
           dev_eval: Callable[[Path], float] | None, on_step: Callable[[int], None] | None,
           workers: int | None) -> TrainResult:
    """:func:`train` inside its determinism setting."""
    from usebench.train.checkpoint import finished_checkpoint

    t_start = time.perf_counter()
    dist = init_distributed(device)
    dev = pick_device(device, dist)
    method.pooling_writer(cfg)  # an unexportable pooling fails before any training
    out_dir = Path(out_dir)
    texts = _prepare(method, cfg, corpus, method.sentences_per_step(cfg) * dist.world)
    run_config = run_config or {"method": method.name, "config": config_to_dict(cfg), "seed": seed,
                                "corpus_sha256": _corpus_fingerprint(texts)}
    run_hash, total = config_hash(run_config), method.total_steps(cfg, len(texts), dist.world)
    if resume and finished_checkpoint(out_dir / CHECKPOINT_DIR, method.name, run_hash):
        return TrainResult(out_dir / CHECKPOINT_DIR, total, total, None, 0.0, 0.0)
    if not resume:
        shutil.rmtree(out_dir / STATE_DIR, ignore_errors=True)
        (out_dir / LOG_FILE).unlink(missing_ok=True)
    dev_texts = None
    if cfg.dev_every and cfg.dev_metric == VALIDATION_LOSS:  # the thesis' selection: loss on held-out sentences
        dev_texts = read_dev_corpus(cfg, method.sentences_per_step(cfg))
    elif dev_eval is None and cfg.dev_every:
        raise BenchError(f"dev_every={cfg.dev_every} needs a dev evaluator (bench run builds one for dev_task)")
    run = _setup(method, cfg, texts, seed, dist, dev, total, out_dir, run_hash)
    run.workers = default_workers(dev) if workers is None else workers
    if dev_texts is not None:
        dev_eval = loss_evaluator(method, cfg, run.module, dev_texts, dev)
    state = load_train_state(run.state_dir, method.name, run_hash) if resume else None
    start = _restore(run, state) if state else 0
    run.last_scale = run.scaler.get_scale() if run.scaler.is_enabled() else None  # fp16: see _optimizer_stepped
    if dist.world > 1:  # dropout must differ between ranks; one stream per (seed, start, rank)
        torch.manual_seed(int(np.random.default_rng([seed, start, dist.rank]).integers(2**62)))
    if dist.main:
        out_dir.mkdir(parents=True, exist_ok=True)
    log = TrainLog(out_dir / LOG_FILE, cfg.log_every, start, dist.main, device=str(dev))
    value, done = _loop(run, start, log, out_dir, run_config, dev_eval, on_step, show_progress)
    ckpt = _finish(run, out_dir, run_config, dev_eval, done)
    seconds = time.perf_counter() - t_start
    return TrainResult(ckpt, done, start or None, value, seconds, (done - start) / max(seconds, 1e-9),
                       run.dev_best, log.lines, run.module)


def _loop(run: _Run, start: int, log: TrainLog, out_dir: Path, run_config: dict[str, Any],
          dev_eval: Callable[[Path], float] | None, on_step: Callable[[int], None] | None,
          show_progress: bool) -> tuple[float | None, int]:
    """Steps ``start`` .. ``total``: step, log, dev-evaluate, save state; returns (last loss, steps trained),
    fewer than ``total`` when the dev patience ran out."""
    from tqdm.auto import tqdm

    cfg = run.cfg
    bar = tqdm(total=run.total, initial=start, desc=f"train {run.method.name}", unit="step", dynamic_ncols=True,
               disable=not (show_progress and run.dist.main))
    run.module.train()
    value, lr, done = None, cfg.lr, run.total
    pending: list[_Done] = []
    data = StepBatches(run.method, cfg, run.module.tokenizer, run.texts, run.seed, run.dist.rank, run.dist.world,
                       start, run.total)
    batches = step_batches(data, run.workers, pin=run.device.type == "cuda")
    try:
        for step, batch in batches:
            pending.append(_one_step(run, step, batch))
            lr = pending[-1].lr
            bar.update(1)
            dev_due = dev_eval is not None and run.method.dev_due(cfg, step + 1, len(run.texts), run.dist.world)
            save_due = bool(cfg.save_every) and (step + 1) % cfg.save_every == 0 and step + 1 < run.total
            if (step + 1) % cfg.log_every == 0 or dev_due or save_due or step + 1 == run.total:
                value = _settle(run, pending, log)  # the only places numbers come back from the device
                bar.set_postfix(loss=f"{value:.4f}", refresh=False)
            if dev_due and _dev_step(run, step + 1, out_dir, run_config, dev_eval):  # type: ignore[arg-type]
                done = step + 1  # early stop: patience ran out
                break
            if save_due:
                _save_state(run, step + 1)
            if on_step is not None:
                on_step(step + 1)
    finally:
        batches.close()  # stops the collate workers
    bar.close()
    value = _settle(run, pending, log) if pending else value
    log.flush(done, lr)
    return value, done


def _setup(method: Method, cfg: TrainConfig, texts: list[str], seed: int, dist: Dist, dev: torch.device,
           total: int, out_dir: Path, run_hash: str) -> _Run:
    seed_everything(seed)  # before build: new heads (decoder cross-attention, MLP) initialise reproducibly
    module = method.build(cfg, dev).to(dev)
    named = unique_parameters(method.trainable_parameters(module))
    optimizer = build_optimizer(cfg, named)
    scheduler = build_scheduler(cfg, optimizer, total)
    forward = module
    if dist.world > 1:
        from torch.nn.parallel import DistributedDataParallel

        forward = DistributedDataParallel(module, device_ids=[dev.index] if dev.type == "cuda" else None,
                                          find_unused_parameters=method.ddp_find_unused_parameters)
    return _Run(method, cfg, texts, seed, dist, dev, module, forward, [p for _, p in named], optimizer, scheduler,
                total, out_dir / STATE_DIR, run_hash, grad_scaler(cfg, dev))


def _finish(run: _Run, out_dir: Path, run_config: dict[str, Any], dev_eval: Any, done: int) -> Path:
    """Export the final (or dev-best) encoder after ``done`` steps, then drop the train state."""
    target = out_dir / CHECKPOINT_DIR
    if run.dist.main:
        best = out_dir / BEST_DIR
        if dev_eval is not None and run.dev_best is not None and best.is_dir():
            from usebench.store import write_json_atomic

            meta = json.loads((best / "method.json").read_text(encoding="utf-8"))
            meta.update({"dev": run.dev_best, "steps": run.dev_best["step"], "steps_trained": done})
            write_json_atomic(best / "method.json", meta)
            shutil.rmtree(target, ignore_errors=True)
            os.replace(best, target)
        else:
            _export(run, target, run_config, {"seed": run.seed, "steps": done})
        shutil.rmtree(run.state_dir, ignore_errors=True)
    if run.dist.world > 1:
        torch.distributed.barrier()
    return target
