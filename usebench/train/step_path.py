"""Which path a training step takes: the reference path (eager, bit parity with the CPU reference loop) or the fast
path for GPUs (a compiled step on static shapes, fused optimizer kernels, TF32 for fp32 matmuls).

A BERT-base step at the papers' batch sizes is launch-bound in eager mode (thousands of small kernels per step), so
on CUDA the fast path is the default. It changes numbers within float rounding (fused kernels, TF32, a different
operation order), never the method: the same loss, data, collate noise and schedule; only dropout is drawn otherwise
(by inductor's generator, over bucket-padded tensors), a different sample of the same noise. Its parts live in
:mod:`usebench.train.static_shapes`, :mod:`usebench.train.compiled_step`, :mod:`usebench.train.fast_path` and
:func:`usebench.train.optim.build_optimizer`. The path a run took is recorded in its
``method.json`` (``step_path``) and in ``TrainResult.step_path``. ``--deterministic`` and the CPU keep the reference
path unless the fast path is asked for by name (``--fast-path on``: the CPU then compiles with inductor, which is
how the tests check the compiled step against eager).

Choice: ``train(fast_path=...)``, else ``$BENCH_FAST_PATH`` (``auto`` | ``on`` | ``off``; ``bench run --fast-path``
sets it, so launchers' workers inherit it), else ``auto``.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal

import torch

from usebench.errors import ConfigError

FAST_PATH_ENV = "BENCH_FAST_PATH"
TF32_ENV = "BENCH_TF32"  # on (default) | off: TF32 for fp32 matmuls on the fast path (CUDA)
COMPILE_MODE_ENV = "BENCH_COMPILE_MODE"  # torch.compile's mode on the fast path (default: "default")
COMPILE_MODES: tuple[str, ...] = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
FastPathChoice = Literal["auto", "on", "off"]
Precision = Literal["fp32", "tf32", "bf16", "fp16"]
CHOICES: tuple[str, ...] = ("auto", "on", "off")


@dataclass(frozen=True)
class Fallback:
    """A part of the step that stopped working mid-run and ran eagerly from ``step`` on (1-based, the run's own
    count across resumes): ``compile`` (the compiled step) or ``optimizer`` (the compiled optimizer update)."""

    part: str
    step: int
    error: str  # the exception, one line (usebench.train.compiled_step.describe)


@dataclass(frozen=True)
class StepPath:
    """What the training step of one run does (all False: the reference path)."""

    fast: bool = False  # the fast path was chosen (each part below may still be off, with a note)
    compile: bool = False  # the train module's forward (and so its backward) through torch.compile
    compile_mode: str | None = None  # torch.compile's mode ("default"; "reduce-overhead", "max-autotune": CUDA graphs)
    static_shapes: bool = False  # token lengths and labelled-row counts padded to buckets (few compiled shapes)
    fused_optimizer: bool = False  # fused / compiled optimizer update, no per-parameter host work
    tf32: bool = False  # the fast path's TF32 policy for fp32 matmuls on CUDA (it changes numbers)
    precision: Precision = "fp32"  # what the matmuls computed in (run_precision): TF32 is a precision of its own
    fallbacks: tuple[Fallback, ...] = ()  # parts that stopped mid-run: which, from which step, why
    notes: tuple[str, ...] = ()  # why a part is off, or what fell back (e.g. "compile failed: ...; eager")

    def record(self) -> dict[str, Any]:
        """JSON-able, for method.json and logs."""
        out = asdict(self)
        out["fallbacks"] = [dict(f) for f in out["fallbacks"]]
        out["notes"] = list(self.notes)
        return out

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> StepPath:
        """The inverse of :meth:`record` (a train state's; fields a newer version added keep their defaults)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in record.items() if k in known}
        values["fallbacks"] = tuple(Fallback(**f) for f in values.get("fallbacks", ()))
        values["notes"] = tuple(values.get("notes", ()))
        return cls(**values)

    def with_note(self, note: str, **changes: Any) -> StepPath:
        """A copy with ``changes`` and ``note`` appended (a part that fell back says why)."""
        return replace(self, notes=(*self.notes, note), **changes)

    def planned(self) -> dict[str, Any]:
        """The parts chosen before the first step (:data:`PLANNED`), a part that fell back since counted as on
        (as it started): what a resume must choose again."""
        out = {k: getattr(self, k) for k in PLANNED}
        out.update({FALLBACK_FLAGS[f.part]: True for f in self.fallbacks})
        return out


# the parts a run's setup chooses, each of which changes its numbers; a resume must choose the same
PLANNED: tuple[str, ...] = ("fast", "compile", "compile_mode", "static_shapes", "fused_optimizer", "tf32", "precision")
FALLBACK_FLAGS = {"compile": "compile", "optimizer": "fused_optimizer"}  # a Fallback's part -> the flag it clears


REFERENCE = StepPath()


def requested_choice(choice: str | None) -> str:
    """``choice`` if given, else ``$BENCH_FAST_PATH``, else ``auto``; anything else is a ConfigError."""
    value = choice if choice is not None else (os.environ.get(FAST_PATH_ENV, "").strip().lower() or "auto")
    if value not in CHOICES:
        raise ConfigError(f"fast path {value!r}: expected one of {', '.join(CHOICES)} "
                          f"(train(fast_path=...) or ${FAST_PATH_ENV})")
    return value


def compile_mode() -> str:
    """torch.compile's mode on the fast path: ``$BENCH_COMPILE_MODE`` (one of :data:`COMPILE_MODES`) or
    ``default``. ``reduce-overhead`` and ``max-autotune`` add CUDA graphs, which static shapes make possible (one
    graph per bucket; :func:`usebench.train.compiled_step.uses_cuda_graphs`)."""
    value = os.environ.get(COMPILE_MODE_ENV, "").strip() or "default"
    if value not in COMPILE_MODES:
        raise ConfigError(f"${COMPILE_MODE_ENV}={value!r}: expected one of {', '.join(COMPILE_MODES)}")
    return value


def tf32_allowed() -> bool:
    """The fast path's TF32 policy for fp32 runs on CUDA: on, unless ``$BENCH_TF32`` is off (0/false/no): TF32 keeps
    fp32's range with a 10-bit mantissa in the matmuls' products, ~8x the fp32 rate; off keeps full-precision
    products (the reference path's numbers, and the doctor's fp32 column)."""
    value = os.environ.get(TF32_ENV, "").strip().lower()
    if value and value not in ("on", "off", "1", "0", "true", "false", "yes", "no"):
        raise ConfigError(f"${TF32_ENV}={value!r}: expected on or off")
    return value not in ("off", "0", "false", "no")


def resolve_step_path(choice: str | None, device: torch.device, deterministic: bool,
                      amp: str = "off") -> StepPath:
    """The step path of a run on ``device``: ``auto`` is the fast path on CUDA unless deterministic kernels are
    asked for (bit-identical resumes need the reference path), the reference path elsewhere; ``on`` and ``off``
    are taken as said.

    The fast path's parts: a compiled step on static shapes and fused optimizer kernels on every device (on the
    CPU the compiled step is inductor's C++ code: how the tests check it against eager); TF32 matmuls only on CUDA
    and only for fp32 runs (``amp``, the config's, default off: under bf16/fp16 autocast the matmuls are not fp32).
    The plugin and the optimizer may switch a part off later, with a note
    (:func:`usebench.train.fast_path.for_method`)."""
    value = requested_choice(choice)
    if value == "off" or (value == "auto" and (device.type != "cuda" or deterministic)):
        from usebench.fp32_policy import tf32_matmuls_on

        # the reference path leaves the process's own TF32 setting alone, and records it
        return replace(REFERENCE, precision=run_precision(amp, device, tf32_matmuls_on()))
    cuda = device.type == "cuda"
    fp32 = amp == "off" or (amp == "auto" and not cuda)
    notes = []
    tf32 = cuda and fp32 and tf32_allowed()
    if not cuda:
        notes.append(f"tf32: CUDA only ({device.type})")
    elif not fp32:
        notes.append(f"tf32: off, amp={amp} runs its matmuls in half precision")
    elif not tf32:
        notes.append(f"tf32: off (${TF32_ENV}=off): fp32 matmuls at full precision")
    if deterministic:
        notes.append("deterministic kernels with the fast path: its compiled and fused kernels are not the "
                     "reference's; runs repeat each other as far as inductor honours deterministic mode")
    return StepPath(fast=True, compile=True, compile_mode=compile_mode(), static_shapes=True, fused_optimizer=True,
                    tf32=tf32, precision=run_precision(amp, device, tf32), notes=tuple(notes))


def run_precision(amp: str, device: torch.device, tf32: bool) -> Precision:
    """What a run's matmuls compute in: ``fp16`` / ``bf16`` under autocast (``amp``; ``auto`` is bf16 on CUDA,
    fp32 elsewhere, as :func:`usebench.train.runtime.autocast_context`), else ``tf32`` where fp32 matmuls run in
    TF32 on CUDA (``tf32``: the fast path's policy, or the process's own setting on the reference path), else
    ``fp32``. TF32 is a precision of its own (~1e-3 relative per product), not a speed switch: recorded apart."""
    if amp == "fp16":
        return "fp16"
    if amp == "bf16" or (amp == "auto" and device.type == "cuda"):
        return "bf16"
    return "tf32" if device.type == "cuda" and tf32 else "fp32"
