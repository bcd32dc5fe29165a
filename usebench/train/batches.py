"""Each step's batch, collated off the training step's critical path.

A step's batch is a pure function of the step: ``Method.batch_indices`` (which examples; seeded epochs) and
``Method.collate`` with :func:`usebench.train.runtime.step_rng` (tokenisation and noise: TSDAE's deletion,
MLM's masking, PaSeR's RAKE and synonyms, ConSERT's augmentation seed). So batches can be made ahead of time
in DataLoader worker processes, in any order, and a resumed run still gets exactly the batches it would have
had: the weights do not depend on the number of workers (``tests/train/test_step_path.py``).

The workers prefetch ``prefetch`` batches each; on a GPU the batches are pinned so the copy to the device is
asynchronous. The DataLoader draws its base seed from its own generator, never from torch's global RNG, whose
stream (dropout) must stay what it was without workers. A collate that fails in a worker is run again in the
main process, which raises the error itself with its own type and message.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from usebench.train.runtime import step_rng
from usebench.train.static_shapes import static_shapes

WORKERS_ENV = "BENCH_TRAIN_WORKERS"


def collate_step(method: Any, cfg: Any, tokenizer: Any, examples: Sequence[Any], step: int, seed: int,
                 rank: int = 0, world: int = 1) -> Any:
    """The batch of ``step``: the examples ``method.batch_indices`` picks, collated with the step's RNG."""
    idx = method.batch_indices(cfg, len(examples), step, seed, rank, world)
    return method.collate(cfg, tokenizer, [examples[i] for i in idx], step_rng(seed, step, rank))


class StepBatches(torch.utils.data.Dataset):
    """Item k = (step, batch) for step ``start + k``; in a worker a failed collate gives (step, None).
    ``static_shapes`` (the fast path, set by the loop): each batch is collated with lengths and labelled counts
    padded to buckets (:mod:`usebench.train.static_shapes`), in the worker processes too."""

    static_shapes: bool = False

    def __init__(self, method: Any, cfg: Any, tokenizer: Any, examples: Sequence[Any], seed: int, rank: int,
                 world: int, start: int, total: int):
        self.args = (method, cfg, tokenizer, examples)
        self.seed, self.rank, self.world, self.start, self.total = seed, rank, world, start, total

    def __len__(self) -> int:
        return self.total - self.start

    def batch(self, step: int) -> Any:
        method, cfg, tokenizer, examples = self.args
        with static_shapes(self.static_shapes):
            return collate_step(method, cfg, tokenizer, examples, step, self.seed, self.rank, self.world)

    def __getitem__(self, k: int) -> tuple[int, Any]:
        step = self.start + k
        if torch.utils.data.get_worker_info() is None:
            return step, self.batch(step)
        try:
            return step, self.batch(step)
        except Exception:  # noqa: BLE001  re-raised by the main process (see step_batches)
            return step, None


def default_workers(device: torch.device) -> int:
    """``$BENCH_TRAIN_WORKERS`` if set; else on a GPU 2 workers (the host has nothing else to do), on a CPU one
    worker when a core is free of torch's threads (the collate then overlaps the step), otherwise none."""
    if os.environ.get(WORKERS_ENV, "").strip():
        return max(0, int(os.environ[WORKERS_ENV]))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if device.type == "cuda":
        return min(2, max(0, cores - 1))
    return 1 if cores > torch.get_num_threads() else 0


def step_batches(data: StepBatches, workers: int, pin: bool, prefetch: int = 2) -> Iterator[tuple[int, Any]]:
    """(step, batch) for every step of ``data`` in order: collated here (``workers=0``) or by worker processes."""
    if workers <= 0 or len(data) == 0:
        for k in range(len(data)):
            yield data[k]
        return
    loader = torch.utils.data.DataLoader(data, batch_size=None, shuffle=False, num_workers=workers,
                                         prefetch_factor=prefetch, pin_memory=pin,
                                         generator=torch.Generator().manual_seed(0))
    it = iter(loader)
    try:
        for step, batch in it:
            yield step, batch if batch is not None else data.batch(step)  # the main process raises the error
    finally:
        del it  # stops the workers (also on an exception or an early stop in the loop)
