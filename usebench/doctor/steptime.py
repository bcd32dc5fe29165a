"""How ``bench doctor`` and ``scripts/bench_train.py`` time a training step (issue 36): the same schedule and the
same clock for every column (ours on each step path, sentence-transformers' step, the lean loop).

**The batches.** The ``n`` batches of the trainer's steps 0..n-1, collated before anything is timed (collation is
never on the clock, for any column). **The warm-up** runs one batch of every distinct shape among them (shapes
of every tensor in the batch: TSDAE's noisy encoder input and MLM's labelled-row count vary from step to step),
topped up in order to ``min_warmup`` steps, so the timed steps meet no shape for the first time: no cuDNN or SDPA
graph built, no kernel loaded lazily, no compile or recompile inside the clock. **Then two timed passes over the
same n batches:**

- per step: a device sync at every step boundary, one stamp per boundary; the **median** of the n step times
  (the figure the ratios use). The sync costs a little on CUDA (the host waits instead of queueing the next step),
  which this pass accepts in exchange for a distribution;
- a window: the n steps with a sync at the two edges only; its **mean** (steps queue as they would in training).

**What is inside the clock.** Ours (:func:`time_train`, the real :func:`usebench.train.loop.train`): from the end
of one step's ``on_step`` callback to the end of the next: the loop's own bookkeeping (progress bar, the log,
dev and save checks, ``on_step``) and ``one_step`` (the batch's copy to the device, forward under autocast,
backward, unscale, clip, optimizer, LR schedule, ``zero_grad``). Outside: model loading and setup, the collate
(the loop's batch source is replaced by the pre-collated batches, :func:`loop_hooks`), the loss read-back
(``log_every`` beyond the run: no settle inside it, and the run is stopped from ``on_step`` before its last
step, whose final settle and export never run). sentence-transformers and the lean loop (:func:`time_steps`): the
step function on a prepared batch (device copy, forward, backward, clip, optimizer, ``zero_grad``).
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from usebench.doctor.common import sync

LOG_NEVER = 10**9  # log_every for a timed run: the loop reads the losses back only at its (never reached) end


@dataclass
class Timing:
    """Step times of one column: ``per_step`` (seconds, a sync at each boundary) and one ``window`` (seconds for
    ``len(per_step)`` steps, syncs at its edges only)."""

    per_step: list[float]
    window: float
    warmup_steps: int
    distinct_shapes: int
    warmup_s: float  # the warm-up's wall time (a compiled step's compilation is in it)
    notes: list[str] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.per_step)

    def record(self) -> dict[str, Any]:
        """JSON-able milliseconds: median (the figure), spread, and the window's mean."""
        qs = statistics.quantiles(self.per_step, n=10) if len(self.per_step) > 1 else [self.per_step[0]] * 9
        return {"median_ms": self.median * 1e3, "p10_ms": qs[0] * 1e3, "p90_ms": qs[-1] * 1e3,
                "min_ms": min(self.per_step) * 1e3, "max_ms": max(self.per_step) * 1e3, "steps": len(self.per_step),
                "window_mean_ms": self.window / len(self.per_step) * 1e3, "window_steps": len(self.per_step),
                "warmup_steps": self.warmup_steps, "distinct_shapes": self.distinct_shapes,
                "warmup_s": self.warmup_s, "notes": list(self.notes)}


def shape_key(batch: Any) -> tuple:
    """The shapes and dtypes of every tensor in a (nested) batch: two batches with the same key run the same
    kernels."""
    import torch

    if isinstance(batch, torch.Tensor):
        return (tuple(batch.shape), str(batch.dtype))
    if isinstance(batch, dict):
        return tuple((k, shape_key(v)) for k, v in batch.items())
    if isinstance(batch, (list, tuple)):
        return tuple(shape_key(v) for v in batch)
    return ()


def warmup_order(batches: list[Any], min_warmup: int) -> tuple[list[int], int]:
    """(indices of the warm-up batches, number of distinct shapes): the first batch of each distinct shape, then
    the others in order (cycling) until ``min_warmup`` steps."""
    first: dict[tuple, int] = {}
    for i, b in enumerate(batches):
        first.setdefault(shape_key(b), i)
    order = sorted(first.values())
    rest = [i for i in range(len(batches)) if i not in first.values()] or list(range(len(batches)))
    k = 0
    while len(order) < min_warmup:
        order.append(rest[k % len(rest)])
        k += 1
    return order, len(first)


def pinned(batch: Any) -> Any:
    """``batch`` with its tensors in page-locked memory (as the loop's collate workers hand them over on a GPU:
    the copy to the device is then asynchronous)."""
    import torch

    if isinstance(batch, torch.Tensor):
        return batch.pin_memory()
    if isinstance(batch, dict):
        return {k: pinned(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(pinned(v) for v in batch)
    return batch


def time_steps(step: Callable[[Any], None], batches: list[Any], device: str, min_warmup: int) -> Timing:
    """Warm-up (every distinct shape), ``len(batches)`` steps with a sync at each boundary, then the same steps as
    one window; ``step(batch)`` is one optimizer step on a prepared batch."""
    order, distinct = warmup_order(batches, min_warmup)
    t0 = time.perf_counter()
    for i in order:
        step(batches[i])
    sync(device)
    stamps = [time.perf_counter()]
    warmup_s = stamps[0] - t0
    for b in batches:
        step(b)
        sync(device)
        stamps.append(time.perf_counter())
    t0 = time.perf_counter()
    for b in batches:
        step(b)
    sync(device)
    window = time.perf_counter() - t0
    return Timing([b - a for a, b in zip(stamps, stamps[1:])], window, len(order), distinct, warmup_s)


class _Stop(Exception):
    """Raised from ``on_step`` to end a timed run (its last step, settle and export are not wanted)."""


class LoopHooks:
    """The schedule of a timed ``train`` run: the loop's batch source replaced by pre-collated batches (warm-up,
    n, n), the run state captured (its step path and optimizer), and ``on_step`` stamping the boundaries."""

    def __init__(self, n: int, min_warmup: int, device: str):
        self.n, self.min_warmup, self.device = n, min_warmup, device
        self.warm: int | None = None  # warm-up steps, known once the batches are collated
        self.distinct = 0
        self.run: Any = None
        self.batches: list[Any] = []
        self.stamps: list[float] = []
        self.window = 0.0
        self.t_first = 0.0
        self.tf32 = False  # whether fp32 matmuls ran in TF32 at the window's end (a fast path may turn it on)
        self.notes: list[str] = []

    def wrap_batches(self, original: Callable[..., Iterator[tuple[int, Any]]]) -> Callable[..., Iterator]:
        """A stand-in for :func:`usebench.train.batches.step_batches`: the first ``n`` batches collated here (by the
        original, in this process), then served as warm-up + n + n (+1 that is never reached)."""
        def patched(data: Any, workers: int, *args: Any, **kwargs: Any) -> Iterator[tuple[int, Any]]:
            source = original(data, 0, *args, **kwargs)
            first = [next(source) for _ in range(self.n)]
            getattr(source, "close", lambda: None)()  # a generator: stop it (workers, if it had any)
            on_gpu = self.device.startswith("cuda")
            self.batches = [pinned(b) if on_gpu else b for _, b in first]
            order, self.distinct = warmup_order(self.batches, self.min_warmup)
            self.warm = len(order)
            return self._serve(first[0][0], order + list(range(self.n)) * 2 + [0])

        return patched

    def _serve(self, start: int, sequence: list[int]) -> Iterator[tuple[int, Any]]:
        self.t_first = time.perf_counter()
        for k, i in enumerate(sequence):
            yield start + k, self.batches[i]

    def wrap_setup(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """A stand-in for the loop's ``setup_run`` that keeps the run state it builds."""
        def patched(*args: Any, **kwargs: Any) -> Any:
            self.run = original(*args, **kwargs)
            return self.run

        return patched

    def on_step(self, done: int) -> None:
        """After step ``done`` (1-based): stamp the warm-up's end, every per-step boundary, the window's end."""
        if self.warm is None:  # the loop no longer takes its batches from where the hooks sit
            self.warm = self.n
            self.notes.append("collate INSIDE the window and the warm-up did not see the timed batches: the "
                              "loop's batch source (usebench.train.loop.step_batches) was not hooked")
        w, n = self.warm, self.n
        if done < w or w + n < done < w + 2 * n:
            return
        sync(self.device)
        now = time.perf_counter()
        if done <= w + n:
            self.stamps.append(now)
            return
        self.window = now - self.stamps[-1]
        self.tf32 = tf32_on()
        raise _Stop

    def timing(self) -> Timing:
        warmup_s = self.stamps[0] - self.t_first if self.t_first else 0.0
        per_step = [b - a for a, b in zip(self.stamps, self.stamps[1:])]
        return Timing(per_step, self.window, self.warm or 0, self.distinct, warmup_s, list(self.notes))


@contextmanager
def loop_hooks(n: int, min_warmup: int, device: str) -> Iterator[LoopHooks]:
    """Install :class:`LoopHooks` into :mod:`usebench.train.loop` for one run (restored afterwards). A stand-in
    until the loop takes pre-collated batches itself; if the loop stops calling these names, the timing says so in
    its notes instead of silently timing the collate."""
    import usebench.train.loop as loop

    hooks = LoopHooks(n, min_warmup, device)
    saved = {name: getattr(loop, name) for name in ("step_batches", "setup_run") if hasattr(loop, name)}
    if "step_batches" in saved:
        loop.step_batches = hooks.wrap_batches(saved["step_batches"])
    if "setup_run" in saved:
        loop.setup_run = hooks.wrap_setup(saved["setup_run"])
    try:
        yield hooks
    finally:
        for name, value in saved.items():
            setattr(loop, name, value)


def tf32_on() -> bool:
    """Whether fp32 matmuls may run in TF32 now (cuBLAS' setting; meaningless on a CPU)."""
    from usebench.fp32_policy import tf32_matmuls_on

    return tf32_matmuls_on()


def time_train(method: Any, cfg: Any, data: list[Any], device: str, fast_path: str, n: int, min_warmup: int,
               out: Any) -> tuple[Timing, dict[str, Any]]:
    """Ours: (timing, facts of the run) of ``train`` on ``fast_path`` ("off" = the reference path, "on" = the
    fast path), on the schedule of :class:`LoopHooks`. Facts: ``step_path`` (the run's record), ``optimizer`` (its
    class name), ``tf32_in_run`` (TF32 on at the window's end), ``skipped_steps`` (fp16: steps the loss scaler
    skipped)."""
    from usebench.train.loop import train

    cfg = cfg.replace(max_steps=3 * n + max(min_warmup - n, 0) + 1, log_every=LOG_NEVER, save_every=0, dev_every=0,
                      epochs=None)
    with loop_hooks(n, min_warmup, device) as hooks:
        try:
            train(method, cfg, data, out, seed=0, device=device, resume=False, show_progress=False,
                  on_step=hooks.on_step, workers=0, fast_path=fast_path)
        except _Stop:
            pass
    if len(hooks.stamps) != n + 1:
        raise RuntimeError(f"the timed run ended after {len(hooks.stamps)} of {n + 1} boundaries")
    run, timing = hooks.run, hooks.timing()
    if run is None:
        timing.notes.append("step path unknown: the loop's setup_run was not hooked")
    facts = {"step_path": run.step_path.record() if run is not None and hasattr(run, "step_path") else {},
             "optimizer": type(run.optimizer).__name__ if run is not None else None, "tf32_in_run": hooks.tf32,
             # fp16: optimizer steps the loss scaler skipped (overflow), up to the last one read back
             "skipped_steps": getattr(run, "skipped_steps", None)}
    return timing, facts


def fresh_compile_state() -> None:
    """Forget every compiled graph (``torch._dynamo.reset``): each fast-path column compiles in its own warm-up,
    never inheriting another column's graphs or hitting the recompile limit that earlier columns filled."""
    try:
        import torch._dynamo

        torch._dynamo.reset()
    except Exception:  # noqa: BLE001  no dynamo in this build: nothing compiled to forget
        pass


@contextmanager
def matmul_precision(precision: str) -> Iterator[None]:
    """fp32 matmuls at full precision, or TF32 for ``precision == "tf32"`` (cuBLAS and cuDNN), restored after:
    a column's setting (or a fast path's TF32 policy) never leaks into the next column."""
    from usebench.fp32_policy import fp32_matmul_policy

    with fp32_matmul_policy(tf32=precision == "tf32"):  # either of torch's precision APIs
        yield
