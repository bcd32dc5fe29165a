"""The shared training loop: every method plugin trains through :func:`train`.

What it does for a plugin (see :mod:`usebench.train.plugin` for what the plugin supplies):
seeding (python, numpy, torch; each step's collate RNG is derived from (seed, step, rank)); batches collated
ahead of the step by worker processes (:mod:`usebench.train.batches`); optimizer and
schedule from the config (:mod:`usebench.train.optim`); fp32 unless ``amp`` asks for bf16 or fp16 (with loss
scaling) autocast; gradient clipping;
a tqdm bar with steps/s and the loss ``log.jsonl`` holds (its window's mean); ``log.jsonl`` every ``log_every``
steps (losses and gradient norms stay on the device between log, dev and save points: no host synchronisation per
step); a resumable train state every
``save_every`` steps (module, optimizer, scheduler, RNG states, data position), from which an interrupted run
continues to the same final weights as an uninterrupted one on deterministic hardware; a stop with a clear
message on a NaN/inf loss or gradient; optional dev evaluation with best-checkpoint selection; and, when
launched by ``torchrun``/``accelerate launch`` (``WORLD_SIZE`` > 1), torch DistributedDataParallel.
Finally the plugin's export module is written by :func:`usebench.train.checkpoint.export_checkpoint`.

This module is the loop itself (corpus preparation, :func:`train`, the step loop); what a run holds and
writes (setup, train state, dev-best, exports) is in :mod:`usebench.train.loop_state`, one optimizer step
and its fp16/readback bookkeeping in :mod:`usebench.train.loop_step`.
"""
from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from usebench.errors import BenchError
from usebench.store import config_hash
from usebench.train.batches import StepBatches, default_workers, step_batches
from usebench.train.checkpoint import load_train_state
from usebench.train.config import VALIDATION_LOSS, TrainConfig, config_to_dict
from usebench.train.loop_state import (
    CHECKPOINT_DIR,
    LOG_FILE,
    STATE_DIR,
    RunState,
    curve_step,
    dev_step,
    finish,
    restore,
    save_state,
    setup_run,
)
from usebench.train.loop_step import StepDone, one_step, settle, track_scale
from usebench.train.plugin import Method
from usebench.train.sampling import run_steps
from usebench.train.runtime import (
    deterministic_mode,
    deterministic_requested,
    grad_scaler,
    init_distributed,
    pick_device,
)
from usebench.train.fast_path import fast_session, note_fallbacks
from usebench.train.step_path import requested_choice, resolve_step_path
from usebench.train.trainlog import TrainLog
from usebench.train.validation import loss_evaluator, read_dev_corpus

# Names other modules and tests import from here (the run state and the step live in loop_state and loop_step).
__all__ = ["TrainResult", "check_trainable", "clean_corpus", "prepare_corpus", "prepared_corpus_size", "train",
           "trainable_size"]


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
    step_path: dict[str, Any] = field(default_factory=dict)  # usebench.train.step_path.StepPath.record()


def prepare_corpus(corpus: Sequence[str], cfg: TrainConfig, min_sentences: int) -> list[str]:
    """Strip lines, drop empty ones, clip lines longer than ``cfg.max_chars`` (tokenizers truncate at
    ``max_length`` tokens anyway); an empty corpus or one smaller than a batch is an error."""
    texts = clean_corpus(corpus, cfg.max_chars)
    check_corpus_size(len(texts), min_sentences)
    return texts


def clean_corpus(corpus: Sequence[str], max_chars: int) -> list[str]:
    """The lines stripped and clipped to ``max_chars``, blank ones dropped."""
    texts = [t.strip()[:max_chars] for t in corpus]
    return [t for t in texts if t]


def check_corpus_size(n: int, min_sentences: int) -> None:
    """An empty corpus, or one of fewer than ``min_sentences`` (a batch), is an error."""
    if not n:
        raise BenchError("the training corpus is empty (no non-blank line)")
    if n < min_sentences:
        raise BenchError(f"the training corpus has {n} sentences, fewer than one batch ({min_sentences}); "
                         f"lower batch_size or use a larger corpus")


def prepared_corpus_size(method: Method, cfg: TrainConfig, cleaned: list[str], min_sentences: int) -> int:
    """``len(_prepare(method, cfg, corpus, min_sentences))`` for a sentence method, given ``cleaned =
    clean_corpus(corpus, cfg.max_chars)``, with the same errors. The planner shares ``cleaned`` between every config
    of a corpus. A filter that hands back its input unchanged (the default) leaves the second cleaning a no-op for
    the count: a stripped, clipped, non-blank line stays non-blank when cleaned again."""
    check_corpus_size(len(cleaned), 1)
    filtered = method.filter_corpus(cfg, cleaned)
    n = len(cleaned) if filtered is cleaned else len(clean_corpus(filtered, cfg.max_chars))
    check_corpus_size(n, min_sentences)
    return n


def check_trainable(method: Method, cfg: TrainConfig, corpus: Sequence[Any], seed: int = 0, world: int = 1) -> int:
    """What :func:`train` checks about the corpus, without building a model: the examples survive cleaning,
    fill a batch, and the first batch can be drawn (e.g. BERT-flow's larger init batch). Returns the step
    budget. The run grid calls it for every unit before the first one trains."""
    return run_steps(method, cfg, trainable_size(method, cfg, corpus, seed, world), world)


def trainable_size(method: Method, cfg: TrainConfig, corpus: Sequence[Any], seed: int = 0, world: int = 1) -> int:
    """:func:`check_trainable`'s checks; returns how many examples training keeps (its budget's input)."""
    method.pooling_writer(cfg)  # an unexportable pooling fails before any training
    texts = _prepare(method, cfg, corpus, method.sentences_per_step(cfg) * world)
    method.batch_indices(cfg, len(texts), 0, seed, 0, world)
    return len(texts)


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


def train(method: Method, cfg: TrainConfig, corpus: Sequence[str], out_dir: str | Path, *, seed: int = 0,
          device: str | None = None, resume: bool = True, show_progress: bool = True,
          run_config: dict[str, Any] | None = None, dev_eval: Callable[[Path], float] | None = None,
          on_step: Callable[[int], None] | None = None, workers: int | None = None,
          deterministic: bool | None = None, fast_path: str | None = None,
          curve_eval: Callable[[Path], dict[str, Any]] | None = None) -> TrainResult:
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
    ``fast_path`` (``auto`` | ``on`` | ``off``, default ``$BENCH_FAST_PATH`` or ``auto``): the step path
    (:mod:`usebench.train.step_path`); ``auto`` is the fast path on CUDA without deterministic kernels.
    ``curve_eval(checkpoint_dir) -> fields`` scores the weights at each of ``cfg.curve_steps`` before the run's
    last step (a learning curve: each a log.jsonl line ``{"step", **fields}``, never a selection).
    """
    requested_choice(fast_path)  # a bad value fails before anything is loaded
    determ = deterministic_requested(deterministic)
    with deterministic_mode(determ):
        return _train(method, cfg, corpus, out_dir, seed=seed, device=device, resume=resume,
                      show_progress=show_progress, run_config=run_config, dev_eval=dev_eval, on_step=on_step,
                      workers=workers, fast_path=fast_path, deterministic=determ, curve_eval=curve_eval)


def _train(method: Method, cfg: TrainConfig, corpus: Sequence[str], out_dir: str | Path, *, seed: int,
           device: str | None, resume: bool, show_progress: bool, run_config: dict[str, Any] | None,
           dev_eval: Callable[[Path], float] | None, on_step: Callable[[int], None] | None,
           workers: int | None, fast_path: str | None, deterministic: bool,
           curve_eval: Callable[[Path], dict[str, Any]] | None = None) -> TrainResult:
    """:func:`train` inside its determinism setting."""
    from usebench.train.checkpoint import finished_checkpoint

    t_start = time.perf_counter()
    dist = init_distributed(device)
    dev = pick_device(device, dist)
    path = resolve_step_path(fast_path, dev, deterministic, amp=cfg.amp)
    method.pooling_writer(cfg)  # an unexportable pooling fails before any training
    out_dir = Path(out_dir)
    texts = _prepare(method, cfg, corpus, method.sentences_per_step(cfg) * dist.world)
    run_config = run_config or {"method": method.name, "config": config_to_dict(cfg), "seed": seed,
                                "corpus_sha256": _corpus_fingerprint(texts)}
    run_hash, total = config_hash(run_config), run_steps(method, cfg, len(texts), dist.world)
    if resume and finished_checkpoint(out_dir / CHECKPOINT_DIR, method.name, run_hash):
        return TrainResult(out_dir / CHECKPOINT_DIR, total, total, None, 0.0, 0.0)  # no step_path: nothing ran
    if not resume:
        shutil.rmtree(out_dir / STATE_DIR, ignore_errors=True)
        (out_dir / LOG_FILE).unlink(missing_ok=True)
    dev_texts = None
    if cfg.dev_every and cfg.dev_metric == VALIDATION_LOSS:  # the thesis' selection: loss on held-out sentences
        dev_texts = read_dev_corpus(cfg, method.sentences_per_step(cfg))
    elif dev_eval is None and cfg.dev_every:
        raise BenchError(f"dev_every={cfg.dev_every} needs a dev evaluator (bench run builds one for dev_task)")
    if curve_eval is None and any(s < total for s in cfg.curve_steps):
        raise BenchError(f"curve_steps={list(cfg.curve_steps)} needs a curve evaluator (bench run builds one for "
                         f"curve_task={cfg.curve_task!r}); or --set curve_task=null curve_steps=[]")
    run = setup_run(method, cfg, texts, seed, dist, dev, total, out_dir, run_hash, grad_scaler(cfg, dev), path,
                    schedule_steps=method.total_steps(cfg, len(texts), dist.world))
    run.workers = default_workers(dev) if workers is None else workers
    if dev_texts is not None:
        dev_eval = loss_evaluator(method, cfg, run.module, dev_texts, dev)
    state = load_train_state(run.state_dir, method.name, run_hash) if resume else None
    start = restore(run, state) if state else 0
    track_scale(run)
    if dist.world > 1:  # dropout must differ between ranks; one stream per (seed, start, rank)
        torch.manual_seed(int(np.random.default_rng([seed, start, dist.rank]).integers(2**62)))
    if dist.main:
        out_dir.mkdir(parents=True, exist_ok=True)
    log = TrainLog(out_dir / LOG_FILE, cfg.log_every, start, dist.main, device=str(dev))
    dev_eval = log.watch_dev(dev_eval, cfg.dev_metric, cfg.dev_task)  # each dev score is a log line too
    with fast_session(run):  # nothing on the reference path
        value, done = _loop(run, start, log, out_dir, run_config, dev_eval, on_step, show_progress, curve_eval)
    if total == 0:
        first_batch_init(run)
    ckpt = finish(run, out_dir, run_config, dev_eval, done)
    seconds = time.perf_counter() - t_start
    return TrainResult(ckpt, done, start or None, value, seconds, (done - start) / max(seconds, 1e-9),
                       run.dev_best, log.lines, run.module, run.step_path.record())


def interrupted_note(method: str, out_dir: Path, reached: int, total: int, saved: int, save_every: int) -> str:
    """Where a stage stopped by Ctrl-C after ``reached`` steps resumes: its last train state, step ``saved`` (written
    every ``save_every`` steps; the state it started from when none was written since), and the steps trained again
    (at most ``save_every - 1``)."""
    again = f"; steps {saved + 1}-{reached} are trained again" if reached > saved else ""
    state = f"its last train state is step {saved}" if saved else "no train state was saved yet"
    cadence = f"every {save_every} steps" if save_every else "only at the end (save_every=0)"
    return (f"{method} ({out_dir}) stopped after step {reached} of {total}; {state} (saved {cadence}): running the same "
            f"command again resumes it from step {saved}{again}")


def first_batch_init(run: RunState) -> None:
    """A run that stops at step 0 trains nothing; a module that initialises itself from its first batch
    (``Method.first_batch_init``: BERT-flow's ActNorm) sees step 0's batch once, without an update, so the export is
    the start as the first step would have found it."""
    if not run.method.first_batch_init:
        return
    from usebench.train.batches import collate_step
    from usebench.train.runtime import to_device

    batch = collate_step(run.method, run.cfg, run.module.tokenizer, run.texts, 0, run.seed, run.dist.rank,
                         run.dist.world)
    with torch.no_grad():
        run.module(to_device(batch, run.device))


def _loop(run: RunState, start: int, log: TrainLog, out_dir: Path, run_config: dict[str, Any],
          dev_eval: Callable[[Path], float] | None, on_step: Callable[[int], None] | None,
          show_progress: bool, curve_eval: Callable[[Path], dict[str, Any]] | None = None
          ) -> tuple[float | None, int]:
    """Steps ``start`` .. ``total``: step, log, dev-evaluate, score a curve point, save state; returns (last loss,
    steps trained), fewer than ``total`` when the dev patience ran out."""
    from tqdm.auto import tqdm

    cfg = run.cfg
    bar = tqdm(total=run.total, initial=start, desc=f"train {run.method.name}", unit="step", dynamic_ncols=True,
               disable=not (show_progress and run.dist.main))
    run.module.train()
    value, lr, done = None, cfg.lr, run.total
    pending: list[StepDone] = []
    data = StepBatches(run.method, cfg, run.module.tokenizer, run.texts, run.seed, run.dist.rank, run.dist.world,
                       start, run.total)
    data.static_shapes = run.step_path.static_shapes
    batches = step_batches(data, run.workers, pin=run.device.type == "cuda")
    reached = saved = start  # steps trained, and the step of the last train state written
    try:
        for step, batch in batches:
            pending.append(one_step(run, step, batch))
            reached = step + 1  # trained (its train state, if due, is saved below)
            if run.step_path.fast:
                note_fallbacks(run, step + 1, log)  # a part that failed in this step: recorded now, never silently
            lr = pending[-1].lr
            bar.update(1)
            dev_due = dev_eval is not None and run.method.dev_due(cfg, step + 1, len(run.texts), run.dist.world)
            save_due = bool(cfg.save_every) and (step + 1) % cfg.save_every == 0 and step + 1 < run.total
            if (step + 1) % cfg.log_every == 0 or dev_due or save_due or step + 1 == run.total:
                value = settle(run, pending, log)  # the only places numbers come back from the device
                shown = log.window_loss()  # log.jsonl's number: the mean over its window, not the last step's
                if shown is not None:
                    bar.set_postfix(loss=f"{shown:.4f}", refresh=False)
            if dev_due and dev_step(run, step + 1, out_dir, run_config, dev_eval):  # type: ignore[arg-type]
                done = step + 1  # early stop: patience ran out
                break
            if curve_eval is not None and step + 1 in cfg.curve_steps and step + 1 < run.total:
                line = curve_step(run, step + 1, out_dir, run_config, curve_eval)  # before the save: a kill
                if line is not None:  # in between repeats it, never loses it
                    log.write(line)
            if save_due:
                save_state(run, step + 1)
                saved = step + 1
            if on_step is not None:
                on_step(step + 1)
    except KeyboardInterrupt as e:  # Ctrl-C: say where the run resumes (the CLI prints the note)
        e.add_note(interrupted_note(run.method.name, out_dir, reached, run.total, saved, cfg.save_every))
        raise
    finally:
        batches.close()  # stops the collate workers
    bar.close()
    value = settle(run, pending, log) if pending else value
    log.flush(done, lr)
    return value, done
