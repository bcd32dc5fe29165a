"""Where and how a training process runs: its rank in a torchrun/accelerate job, its device, seeding, the
per-step RNG that makes resumed runs replay the same noise, and the autocast policy."""
from __future__ import annotations

import os
import random
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from usebench.train.config import TrainConfig


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


def uses_cuda(device: str | None) -> bool:
    """Whether a run asked to train on ``device`` (None: a GPU when visible) trains on CUDA."""
    if device is None:
        return torch.cuda.is_available()
    return torch.device(device).type == "cuda"


def init_distributed(device: str | None = None) -> Dist:
    """Join the process group when launched by torchrun/accelerate (``WORLD_SIZE`` > 1), else single process.

    NCCL and this rank's GPU (``LOCAL_RANK``) only when the run trains on CUDA (``device`` None with a visible GPU,
    or ``cuda``): ``--device cpu`` uses gloo and touches no GPU, whatever the machine has."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Dist()
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        cuda = uses_cuda(device)
        if cuda:
            if local_rank >= torch.cuda.device_count():
                from usebench.errors import BenchError

                raise BenchError(f"DDP rank with LOCAL_RANK={local_rank} needs GPU {local_rank}, but this machine "
                                 f"has {torch.cuda.device_count()}: start at most that many processes per node "
                                 "(torchrun --nproc-per-node) or train with --device cpu")
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend="nccl" if cuda else "gloo")
    return Dist(rank=dist.get_rank(), world=dist.get_world_size(), local_rank=local_rank)


# cuBLAS picks among reduction strategies per call unless its workspace is fixed (NVIDIA's cuBLAS docs, "Results
# reproducibility"); the size is read when a cuBLAS handle is first created, so it must be set before any matmul.
CUBLAS_WORKSPACE = ":4096:8"
DETERMINISTIC_ENV = "BENCH_DETERMINISTIC"  # 1: train() runs deterministic kernels (as train(deterministic=True))


def deterministic_requested(deterministic: bool | None) -> bool:
    """``deterministic`` if given, else ``$BENCH_DETERMINISTIC`` (1/true/yes)."""
    if deterministic is not None:
        return deterministic
    return os.environ.get(DETERMINISTIC_ENV, "").strip().lower() in ("1", "true", "yes")


def prepare_deterministic_env() -> None:
    """Set ``CUBLAS_WORKSPACE_CONFIG`` (unless the user did) - call before the first CUDA matmul of the process,
    e.g. at the top of an entry point."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)


@contextmanager
def deterministic_mode(on: bool):
    """Deterministic kernels while training (``torch.use_deterministic_algorithms``, cuDNN without autotuning):
    SDPA's and index_add's CUDA backward kernels use atomics, so two runs (or a run and its resume) can differ in
    the last bits without it. Errors - not warnings - where an op has no deterministic kernel. The previous
    settings are restored afterwards. On CUDA ``CUBLAS_WORKSPACE_CONFIG`` must be fixed before the first cuBLAS
    handle: a process that already used CUDA without it gets a clear error instead of silent nondeterminism."""
    if not on:
        yield
        return
    from usebench.errors import BenchError

    if "CUBLAS_WORKSPACE_CONFIG" not in os.environ:
        if torch.cuda.is_initialized():
            raise BenchError("deterministic training: CUDA was already used in this process without "
                             f"CUBLAS_WORKSPACE_CONFIG; start it with CUBLAS_WORKSPACE_CONFIG={CUBLAS_WORKSPACE} "
                             f"(or {DETERMINISTIC_ENV}=1 before the first CUDA call)")
        prepare_deterministic_env()
    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
              torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic)
    torch.use_deterministic_algorithms(True, warn_only=False)
    torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = False, True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = before[2], before[3]


def pick_device(device: str | None, dist: Dist) -> torch.device:
    """``device`` if given, else this rank's GPU, else the CPU (:func:`usebench.eval.encoder.pick_device`)."""
    from usebench.eval.encoder import pick_device as pick

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


if deterministic_requested(None):  # $BENCH_DETERMINISTIC=1: fix cuBLAS's workspace before anything uses CUDA
    prepare_deterministic_env()
