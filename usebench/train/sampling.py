"""Which examples each step trains on, and how many steps a run has.

Epochs are seeded permutations of the corpus cut into batches (stateless: the data position after a resume is a
function of the step alone); the step budget of an epoch-based config counts those batches; a run trains that budget,
or fewer where ``stop_at_step`` cuts it.
"""
from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from usebench.data.memo import in_session, remember
from usebench.errors import BenchError
from usebench.train.config import TrainConfig


def shuffled_batch(n: int, batch_size: int, step: int, seed: int, rank: int = 0, world: int = 1) -> list[int]:
    """Indices for ``step``: epochs are seeded permutations of the corpus cut into ``n // (batch_size*world)``
    full global batches (the rest of an epoch is dropped, so no batch holds a sentence twice). Stateless:
    the data position after a resume is a function of ``step`` alone."""
    global_bs = batch_size * world
    per_epoch = n // global_bs
    if per_epoch == 0:
        raise BenchError(f"the corpus has {n} sentences, fewer than one global batch ({global_bs})")
    epoch, k = divmod(step, per_epoch)
    perm = epoch_permutation(n, seed, epoch)
    start = k * global_bs + rank * batch_size
    return perm[start : start + batch_size].tolist()


def batches_per_epoch(n: int, batch_size: int, world: int = 1, keep_partial: bool = False) -> int:
    """Steps in one pass over ``n`` examples: whole global batches, or with ``keep_partial`` (a DataLoader with
    drop_last=False, one process) ceil(n / batch_size), the last batch holding the remainder."""
    if keep_partial and world == 1:
        return max(1, math.ceil(n / batch_size))
    return max(1, n // (batch_size * world))


def epoch_batch(n: int, batch_size: int, step: int, seed: int, rank: int = 0, world: int = 1,
                keep_partial: bool = False) -> list[int]:
    """The example indices of ``step``: :func:`shuffled_batch`, or with ``keep_partial`` (one process) the same
    seeded epoch permutations cut into ceil(n / batch_size) batches, so the last one of an epoch is smaller
    and an epoch of fewer examples than a batch is one step. Under DDP whole global batches only (a rank could
    otherwise get an empty remainder)."""
    if not keep_partial or world > 1:
        return shuffled_batch(n, batch_size, step, seed, rank, world)
    epoch, k = divmod(step, batches_per_epoch(n, batch_size, world, keep_partial))
    return epoch_permutation(n, seed, epoch)[k * batch_size : (k + 1) * batch_size].tolist()


_PERM_CACHE: dict[tuple[int, int, int], np.ndarray] = {}


def epoch_permutation(n: int, seed: int, epoch: int) -> np.ndarray:
    """The corpus order of ``epoch``: a permutation of range(n) seeded by (seed, epoch). Training keeps the current
    epoch's; a plan keeps each one for its session (every stage of a seed on one corpus draws its first batch from
    the same order), freed when planning ends."""
    if in_session():
        return remember(("epoch-permutation", n, seed, epoch), lambda: _permutation(n, seed, epoch))
    key = (n, seed, epoch)
    if key not in _PERM_CACHE:
        _PERM_CACHE.clear()  # one epoch at a time is enough
        _PERM_CACHE[key] = _permutation(n, seed, epoch)
    return _PERM_CACHE[key]


def _permutation(n: int, seed: int, epoch: int) -> np.ndarray:
    return np.random.default_rng([seed, epoch, 0x5A3]).permutation(n)


def keeps_partial(cfg: TrainConfig, reference: bool) -> bool:
    """Whether ``cfg``'s epochs end with their last, smaller batch: ``drop_last`` when the config sets it, else
    ``reference``, what the method's reference loader does (``Method.keep_partial_batch``)."""
    return reference if cfg.drop_last is None else not cfg.drop_last


def epoch_steps(cfg: TrainConfig, n: int, per_step: int, world: int = 1, keep_partial: bool = False) -> int:
    """The step budget for a corpus of ``n`` examples read ``per_step`` a step and device: ``max_steps``, or
    ``epochs`` passes of :func:`batches_per_epoch` (capped by ``max_steps`` when both are set). It is the length the
    LR schedule is laid out over."""
    if cfg.epochs is None:
        return int(cfg.max_steps)  # type: ignore[arg-type]
    steps = math.ceil(cfg.epochs * batches_per_epoch(n, per_step, world, keep_partial))
    return min(steps, cfg.max_steps) if cfg.max_steps else steps


class StepBudget(Protocol):
    """What :func:`run_steps` reads of a method: its step budget (``Method.total_steps``)."""

    def total_steps(self, cfg: TrainConfig, n: int, world: int = 1) -> int: ...


def run_steps(method: StepBudget, cfg: TrainConfig, n: int, world: int = 1) -> int:
    """The steps a run trains: the budget (``Method.total_steps``), or fewer where ``cfg.stop_at_step`` truncates
    it (the LR schedule stays laid out over the whole budget)."""
    total = method.total_steps(cfg, n, world)
    return total if cfg.stop_at_step is None else min(total, cfg.stop_at_step)
