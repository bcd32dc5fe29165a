"""The fast path applied to one run (:mod:`usebench.train.step_path` says which parts are on).

- :func:`for_method`: the parts a plugin and its optimizer switch off, each with a note (a method that cannot be
  compiled, an optimizer torch has no fused kernel for, a batch whose row count varies).
- :func:`fast_session`: what the fast path changes while the loop runs, restored afterwards: the compile settings
  (:func:`usebench.train.compiled_step.compile_settings`), TF32 for fp32 matmuls (CUDA, fp32 presets), the frozen
  BERT pooler skipped (nothing reads ``pooler_output``; its weights stay in the state dict and the export), and
  vocabulary heads padded to a multiple of :data:`VOCAB_MULTIPLE` columns (the logits sliced back; the weights
  and the export are untouched). At the end the compiled step's story (graphs, graph breaks, a fallback) is
  added to the run's notes, so method.json says what ran.

Both overrides are instance attributes (``module.forward``), removed on exit: the reference path never sees them.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from usebench.fp32_policy import fp32_matmul_policy
from usebench.train.compiled_step import CompiledStep, compile_settings, graph_break_reasons, graph_counts
from usebench.train.config import TrainConfig
from usebench.train.optim import fused_kind
from usebench.train.step_path import FALLBACK_FLAGS, Fallback, StepPath

VOCAB_MULTIPLE = 64  # tensor-core friendly GEMM width: 30,522 -> 30,528 columns


def for_method(path: StepPath, method: Any, cfg: TrainConfig, device: torch.device) -> StepPath:
    """``path`` with the parts ``method`` and ``cfg``'s optimizer cannot take switched off, each with a note."""
    if not path.fast:
        return path
    why = getattr(method, "compile_note", None)
    if path.compile and why:
        path = path.with_note(f"compile: off for {method.name}: {why}", compile=False, compile_mode=None)
    if path.fused_optimizer:
        kind = fused_kind(cfg, device)
        if kind is None:
            path = path.with_note(f"fused optimizer: none for {cfg.optimizer} on {device.type} (torch has no fused "
                                  "kernel); the reference path's update", fused_optimizer=False)
            if cfg.amp == "fp16":
                path = path.with_note(f"fp16: the loss scaler reads {cfg.optimizer}'s overflow flag on the host "
                                      "every step (only fused and compiled updates take it on the device)")
        elif kind == "compiled":
            path = path.with_note(f"fused optimizer: {cfg.optimizer} as one torch.compile'd update (lr a tensor)")
    if path.compile and getattr(method, "eager_steps", 0):
        path = path.with_note(f"compile: {method.name}'s first {method.eager_steps} step(s) eager (a host-side "
                              "warm-up, then the steady-state step is compiled)")
    if path.compile and not getattr(method, "fixed_batch_rows", True):
        path = path.with_note(f"static shapes: {method.name}'s batches vary in rows (duplicates dropped), so the "
                              "compiled step treats the row count as dynamic")
    return path


def compile_dynamic(path: StepPath, method: Any) -> bool | None:
    """torch.compile's ``dynamic``: False (one graph per bucketed shape) with static shapes and fixed rows, else
    None (dynamo's automatic dynamic shapes: a dimension that changes is recompiled once as a dynamic one)."""
    return False if path.static_shapes and getattr(method, "fixed_batch_rows", True) else None


@contextmanager
def fast_session(run: Any) -> Iterator[None]:
    """The fast path's runtime changes for the duration of the loop (nothing on the reference path); on exit the
    compiled step's notes are added to ``run.step_path``. An fp32 run on CUDA gets the recorded precision: TF32
    (the policy) or full fp32 matmuls (``$BENCH_TF32=off``, whatever the process had set)."""
    path: StepPath = run.step_path
    if not path.fast:
        yield
        return
    before = graph_counts()
    with ExitStack() as stack:
        if path.compile:
            stack.enter_context(compile_settings())
        if path.tf32:
            stack.enter_context(tf32_matmuls())
        elif path.precision == "fp32" and run.device.type == "cuda":  # $BENCH_TF32=off: not the process's TF32
            stack.enter_context(fp32_matmul_policy(tf32=False))
        stack.enter_context(skipped_poolers(run.module))
        stack.enter_context(padded_vocabulary_heads(run.module))
        install_capture_hooks(run.module)
        try:
            yield
        finally:
            run.step_path = compile_notes(run, before)


def compile_notes(run: Any, before: tuple[int, int]) -> StepPath:
    """``run.step_path`` with what the compiled step did: graphs compiled and graph breaks in this run (nothing
    more after a failure: :func:`note_fallbacks` recorded it when it happened)."""
    path: StepPath = run.step_path
    step = _compiled_step(run.forward)
    if step is None or step.failure is not None:
        return path
    graphs, breaks = (a - b for a, b in zip(graph_counts(), before))
    note = f"compiled: {graphs} new graph(s) in this run" if graphs else \
        "compiled: this process's graphs of an earlier run reused"
    if breaks:
        note += f", {breaks} graph break(s) ({'; '.join(graph_break_reasons())})"
    return path.with_note(note)


def _compiled_step(forward: Any) -> CompiledStep | None:
    """The :class:`CompiledStep` of ``run.forward`` (itself, or inside DDP), or None."""
    inner = getattr(forward, "module", None) if not isinstance(forward, CompiledStep) else forward
    return inner if isinstance(inner, CompiledStep) else None


def failures(run: Any) -> list[tuple[str, str]]:
    """(part, error) of each fast-path part that has failed so far in this process: the compiled step (any error,
    a CUDA out-of-memory included: that step and the rest ran eagerly) and the compiled optimizer update."""
    out = []
    step = _compiled_step(run.forward)
    if step is not None and step.failure is not None:
        out.append(("compile", step.failure))
    update = getattr(run.optimizer, "update_failure", None)
    if update is not None:
        out.append(("optimizer", update))
    return out


FALLBACK_NOTES = {"compile": "compile failed at step {step}: {error}; eager from that step on",
                  "optimizer": "fused optimizer: the compiled update failed at step {step}: {error}; the eager update "
                               "from that step on"}


def note_fallbacks(run: Any, step: int, log: Any) -> None:
    """After step ``step`` (1-based): a part that failed during it is recorded at once, never silently: its
    :class:`~usebench.train.step_path.Fallback` in ``run.step_path`` (the part off from there, a note) and a line
    in log.jsonl (``event: fallback``), which ``bench status`` shows. Costs an attribute read per step."""
    path: StepPath = run.step_path
    done = {f.part for f in path.fallbacks}
    for part, error in failures(run):
        if part in done:
            continue
        path = path.with_note(FALLBACK_NOTES[part].format(step=step, error=error), **{FALLBACK_FLAGS[part]: False},
                              fallbacks=(*path.fallbacks, Fallback(part, step, error)))
        log.event(step, event="fallback", part=part, error=error)
    run.step_path = path


def apply_fallbacks(run: Any, fallbacks: tuple[Fallback, ...]) -> None:
    """A resumed run keeps the parts that had failed before the resume off (eager), as its record says."""
    for f in fallbacks:
        step = _compiled_step(run.forward)
        if f.part == "compile" and step is not None:
            step.failure = f.error
        elif f.part == "optimizer" and hasattr(run.optimizer, "update_failure"):
            run.optimizer.update_failure = f.error


@contextmanager
def tf32_matmuls() -> Iterator[None]:
    """fp32 matmuls (and cuDNN convolutions) in TF32 on CUDA: ~8x the fp32 rate on tensor cores, 10-bit mantissa
    products; a recorded policy of fp32 presets on the fast path (it changes numbers). Restored afterwards, under
    either of torch's precision APIs (:mod:`usebench.fp32_policy`)."""
    with fp32_matmul_policy(tf32=True):
        yield


def install_capture_hooks(module: nn.Module) -> None:
    """Install transformers' hidden-state capturing hooks on every encoder of ``module`` now, before the step is
    compiled: transformers 5 installs them lazily on the first ``output_hidden_states=True`` call, under a lock
    and through ``RemovableHandle`` bookkeeping that dynamo cannot trace (graph breaks, then a recompile once
    they exist). Installed, they are what the eager model installs anyway; older transformers have none."""
    try:
        from transformers.utils.output_capturing import maybe_install_capturing_hooks
    except ImportError:
        return
    from usebench.train.backbone import SentenceEncoder

    for m in module.modules():
        if isinstance(m, SentenceEncoder):
            try:
                maybe_install_capturing_hooks(m.model)
            except (AttributeError, KeyError, TypeError):  # a model without capturable outputs: nothing to install
                continue


def _no_pooler(*args: Any, **kwargs: Any) -> None:
    return None


@contextmanager
def skipped_poolers(module: nn.Module) -> Iterator[None]:
    """Every frozen ``pooler`` of an HF base model in ``module`` returns None instead of dense+tanh of [CLS]:
    :func:`usebench.train.backbone.load_backbone` freezes it because no pooling reads ``pooler_output``."""
    skipped = []
    for m in module.modules():
        pooler = getattr(m, "pooler", None)
        if isinstance(pooler, nn.Module) and "forward" not in vars(pooler) \
                and not any(p.requires_grad for p in pooler.parameters()):
            pooler.forward = _no_pooler
            skipped.append(pooler)
    try:
        yield
    finally:
        for pooler in skipped:
            del pooler.forward


def _padded_forward(linear: nn.Linear) -> Any:
    pad = -linear.out_features % VOCAB_MULTIPLE

    def forward(x: torch.Tensor) -> torch.Tensor:
        weight = F.pad(linear.weight, (0, 0, 0, pad))  # (vocab + pad, h): zero rows, their logits sliced off
        bias = F.pad(linear.bias, (0, pad)) if linear.bias is not None else None
        return F.linear(x, weight, bias)[..., : linear.out_features]

    return forward


def vocabulary_sizes(module: nn.Module) -> set[int]:
    """The vocabulary sizes of the HF models inside ``module`` (their configs' ``vocab_size``)."""
    sizes = set()
    for m in module.modules():
        size = getattr(getattr(m, "config", None), "vocab_size", None)
        if isinstance(size, int):
            sizes.add(size)
    return sizes


@contextmanager
def padded_vocabulary_heads(module: nn.Module) -> Iterator[None]:
    """Each vocabulary projection (an ``nn.Linear`` onto a model's ``vocab_size`` columns, not a multiple of
    :data:`VOCAB_MULTIPLE`) computes its GEMM on zero-padded weights and returns the real columns: the same logits,
    a GEMM shape the tensor cores take whole. The weights (tied to the word embeddings or not) are untouched."""
    sizes = vocabulary_sizes(module)
    padded = []
    for m in module.modules():
        if isinstance(m, nn.Linear) and m.out_features in sizes and m.out_features % VOCAB_MULTIPLE \
                and "forward" not in vars(m):
            m.forward = _padded_forward(m)
            padded.append(m)
    try:
        yield
    finally:
        for m in padded:
            del m.forward
