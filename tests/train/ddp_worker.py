"""Worker for test_training's DDP test: `torchrun --nproc_per_node 2 ddp_worker.py MODEL_DIR OUT_DIR`."""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from usebench import methods  # noqa: F401
from usebench.registry import METHODS
from usebench.train.loop import train

if __name__ == "__main__":
    torch.set_num_threads(1)
    model_dir, out = sys.argv[1], Path(sys.argv[2])
    method = METHODS.get("simcse")  # official variant: gathers the views of both ranks
    cfg = method.config("smoke", model=model_dir, max_steps=4, batch_size=4, max_length=16, log_every=1,
                        save_every=2)
    words = ["apple", "banana", "cherry", "dog", "elephant", "fish", "grape", "house", "island", "jungle", "kite", "lemon"]
    corpus = [" ".join(words[(i + j) % len(words)] for j in range(3 + i % 5)) for i in range(40)]
    result = train(method, cfg, corpus, out, seed=0, device="cpu", show_progress=False)
    # Every rank dumps its final weights: DDP must have kept them identical.
    rank = torch.distributed.get_rank()
    torch.save(method.export_module(result.module)[0].state_dict(), out / f"rank{rank}.pt")
