"""One optimizer step on MiniLM-shaped parameters (22.6M, float32, on the CPU) for each way this machine can take it:
torch's per-parameter loop (its CPU default), its foreach kernels, usebench's blocked loop (the CPU's reference path,
``usebench/train/blocked_optim.py``) and torch's fused kernel. Prints the median step time and whether the weights
after the steps are bit for bit torch's loop's, per optimizer.

    python scripts/bench_optim.py                  # torch's threads
    python scripts/bench_optim.py --threads 1 --steps 20
    python scripts/bench_optim.py --blocks 15,16,17,18,19,20   # the block size, swept (log2 elements)
"""
from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from usebench.train import blocked_optim
from usebench.train.optim import BertAdam

HIDDEN, FFN, LAYERS, VOCAB, POSITIONS = 384, 1536, 6, 30522, 512  # all-MiniLM-L6-v2


def minilm_shapes(scale: float) -> list[tuple[int, ...]]:
    """The parameter shapes of a 6-layer MiniLM, every dimension times ``scale`` (1: 22.6M parameters)."""
    h, f, v, p = (max(1, int(x * scale)) for x in (HIDDEN, FFN, VOCAB, POSITIONS))
    shapes: list[tuple[int, ...]] = [(v, h), (p, h), (2, h), (h,), (h,)]
    for _ in range(LAYERS):
        shapes += [(h, h), (h,)] * 4 + [(f, h), (f,), (h, f), (h,), (h,), (h,), (h,), (h,)]
    return shapes


def groups(params: list[torch.Tensor]) -> list[dict]:
    """Weights decayed, biases and LayerNorm not (usebench.train.optim.param_groups' split)."""
    return [{"params": [p for p in params if p.ndim >= 2], "weight_decay": 0.01},
            {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]


def time_steps(make: Callable, shapes: list[tuple[int, ...]], steps: int) -> tuple[list[torch.Tensor], float]:
    """(weights after ``steps`` + 2 steps, median seconds of the last ``steps``), the same gradients for every way."""
    g = torch.Generator().manual_seed(0)
    params = [torch.randn(s, generator=g).requires_grad_() for s in shapes]
    grads = [[torch.randn(s, generator=g) * 1e-2 for s in shapes] for _ in range(2)]
    optimizer = make(groups(params))
    seconds = []
    for step in range(steps + 2):  # two warm-up steps: the state's first allocation, then a steady one
        for p, grad in zip(params, grads[step % 2]):
            p.grad = grad
        start = time.perf_counter()
        optimizer.step()
        seconds.append(time.perf_counter() - start)
    return params, statistics.median(seconds[2:])


WAYS: dict[str, dict[str, Callable]] = {
    "adamw": {"torch loop": lambda g: torch.optim.AdamW(g, lr=1e-4, foreach=False),
              "foreach": lambda g: torch.optim.AdamW(g, lr=1e-4, foreach=True),
              "blocked": lambda g: blocked_optim.BlockedAdamW(g, lr=1e-4),
              "fused": lambda g: torch.optim.AdamW(g, lr=1e-4, fused=True)},
    "rmsprop": {"torch loop": lambda g: torch.optim.RMSprop(g, lr=1e-4, foreach=False),
                "foreach": lambda g: torch.optim.RMSprop(g, lr=1e-4, foreach=True),
                "blocked": lambda g: blocked_optim.BlockedRMSprop(g, lr=1e-4)},
    "bert_adam": {"blocked": lambda g: BertAdam(g, lr=1e-4, foreach=False),
                  "foreach": lambda g: BertAdam(g, lr=1e-4, foreach=True)},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps (the median's sample)")
    parser.add_argument("--scale", type=float, default=1.0, help="every dimension times this (tests: 0.05)")
    parser.add_argument("--blocks", help="comma-separated log2 block sizes to sweep (default: the module's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    shapes = minilm_shapes(args.scale)
    blocks = [int(b) for b in args.blocks.split(",")] if args.blocks else [blocked_optim.BLOCK.bit_length() - 1]
    print(f"{sum(torch.Size(s).numel() for s in shapes) / 1e6:.1f}M parameters, {torch.get_num_threads()} threads, "
          f"median of {args.steps} steps")
    print(f"{'optimizer':10s} {'way':12s} {'block':>6s} {'ms':>7s}  weights")
    for optimizer, ways in WAYS.items():
        reference = None
        for way, make in ways.items():
            for block in blocks if way == "blocked" else [None]:
                if block is not None:
                    blocked_optim.BLOCK = 1 << block  # read at every step (BertAdam reads it there too)
                weights, seconds = time_steps(make, shapes, args.steps)
                if reference is None:
                    reference, same = weights, "the reference"
                else:
                    same = "same bits" if all(map(torch.equal, weights, reference)) else "different bits"
                print(f"{optimizer:10s} {way:12s} {'2^' + str(block) if block else '':>6s} {seconds * 1e3:7.1f}  {same}")


if __name__ == "__main__":
    main()
