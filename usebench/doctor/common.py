"""What every ``bench doctor`` section shares: the sizes it runs at, the trainer list, device timing and memory
helpers, toy sentences."""
from __future__ import annotations

import platform
from dataclasses import dataclass

import numpy as np

QUORA_DOCS, QUORA_QUERIES, QUORA_DIM = 522_931, 10_000, 768
SECTIONS = ("versions", "precision", "faiss", "matmul", "training", "search", "encode", "determinism")
TRAINERS = ("tsdae", "simcse", "ct", "ct-ibn", "consert", "bertflow", "mlm", "denosent", "paser", "sbert-mnrl",
            "sbert-nli", "sbert-cosine", "sbert-stsb", "clm-ae", "mlm-ae", "simcse-clm", "simcse-mlm",
            "consert-clm", "consert-mlm")
WORDS = ("river house dog night ocean piano queen sun tree kite lemon grape island jungle apple banana cherry "
         "fish mountain elephant").split()


@dataclass(frozen=True)
class Size:
    """How big each section runs."""

    hidden: int = 768  # BERT-base (BertConfig() defaults)
    layers: int = 12
    heads: int = 12
    ffn: int = 3072
    batch: int = 32
    seq: int = 64
    matmul_n: int = 8192
    docs: int = QUORA_DOCS
    queries: int = QUORA_QUERIES
    dim: int = QUORA_DIM
    k: int = 100
    cpu_queries: int = 500  # CPU backends' query sample on a GPU host (a full CPU search takes minutes)
    encode_texts: int = 4096
    resume_steps: int = 6
    timed_steps: int = 20  # per timed pass of a training column (the median's sample; issue 36 asks >= 20)
    min_warmup: int = 3  # the least warm-up steps (more when the batches have more distinct shapes)


FULL = Size()
# --quick: every section at toy size; its training section times 3 steps per pass (a smoke run of the timing, not
# a measurement: the toy model's steps say nothing about BERT-base, and 19 trainers x 2 precisions stay about a minute)
QUICK = Size(hidden=32, layers=2, heads=2, ffn=64, batch=8, seq=16, matmul_n=256, docs=3000, queries=40, dim=32,
             k=10, cpu_queries=40, encode_texts=64, resume_steps=4, timed_steps=3, min_warmup=1)


def sync(device: str) -> None:
    """Wait for the device's queued kernels (a timer around asynchronous CUDA work reads nothing otherwise)."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def reset_peak(device: str) -> None:
    """Start a new peak-GPU-memory window (nothing on a CPU)."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def peak_mb(device: str) -> float | None:
    """Peak GPU memory (MiB) since :func:`reset_peak`; None on a CPU."""
    import torch

    return round(torch.cuda.max_memory_allocated() / 2**20, 1) if device.startswith("cuda") else None


def device_name(device: str) -> str:
    """The GPU's marketing name (what :func:`usebench.doctor.hardware.datasheet_peak` matches), else the CPU's."""
    import torch

    return torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else \
        (platform.processor() or platform.machine() or "cpu")


def toy_sentences(n: int, seed: int = 0, words: tuple[int, int] = (5, 16)) -> list[str]:
    """``n`` sentences of ``words[0]`` to ``words[1] - 1`` words drawn from :data:`WORDS` (reproducible for
    ``seed``); each word is one token of the packaged (uncased BERT) vocabulary."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(*words)))) for _ in range(n)]
