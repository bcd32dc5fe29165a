"""Where and how a training process runs: its rank in a torchrun/accelerate job, its device, seeding, the
per-step RNG that makes resumed runs replay the same noise, and the autocast policy."""
from __future__ import annotations

import os
import random
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from benchmark.train.config import TrainConfig


@dataclass(frozen=True)
class Dist:
    """Process layout: single process (rank 0 of 1) or one DDP rank."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        """Rank 0, the process that writes files."""
        return self.rank == 0


def seed_everything(seed: int) -> None:
    """Seed python ``random``, numpy's global RNG and torch (CPU and every GPU)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def step_rng(seed: int, step: int, rank: int = 0) -> np.random.Generator:
    """The collate RNG of one step: a pure function of (seed, step, rank), so resumes replay the same noise."""
    return np.random.default_rng([seed, step, rank, 0xC011])


def init_distributed() -> Dist:
    """Join the process group when launched by torchrun/accelerate (``WORLD_SIZE`` > 1), else single process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Dist()
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend=backend)
    return Dist(rank=dist.get_rank(), world=dist.get_world_size(), local_rank=local_rank)


def pick_device(device: str | None, dist: Dist) -> torch.device:
    """``device`` if given, else this rank's GPU, else the CPU (:func:`benchmark.eval.encoder.pick_device`)."""
    from benchmark.eval.encoder import pick_device as pick

    return pick(device, dist.local_rank)


def autocast_context(cfg: TrainConfig, device: torch.device):
    """fp32 (amp=off, the default); bf16 autocast (amp=bf16, or amp=auto on a GPU); fp16 autocast (amp=fp16, with
    the loss scaler of :func:`grad_scaler`). Each on any device, so the config says what was trained."""
    if cfg.amp == "off" or (cfg.amp == "auto" and device.type != "cuda"):
        return nullcontext()
    return torch.autocast(device.type, dtype=torch.float16 if cfg.amp == "fp16" else torch.bfloat16)


def grad_scaler(cfg: TrainConfig, device: torch.device) -> torch.amp.GradScaler:
    """Dynamic loss scaling for fp16 autocast (a step whose gradients overflow is skipped and the scale halved, as
    the fp16 references do); a no-op scaler otherwise."""
    return torch.amp.GradScaler(device.type, enabled=cfg.amp == "fp16")


def to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch
