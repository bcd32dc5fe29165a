"""Where our MLM step loses to the lean loop on a CPU (issue 57, item 10): three columns in one process, alternating,
on the MLM smoke preset (packaged MiniLM, batch 16 x 64 tokens):

- **ours**: the real loop (``usebench.train.loop.train``: collate in the loop as on a 2-core CPU, the preset's
  BertAdam, clipping, schedule, log), each step from one ``on_step`` to the next;
- **lean, fused AdamW**: the doctor's lean loop (``usebench.doctor.lean.LeanStep``) on the same batches, collated
  before the clock;
- **lean, BertAdam**: the same lean loop with the preset's own optimizer (``build_optimizer``).

ours / lean-fused is the ratio the issue measures; ours / lean-BertAdam is what the loop itself costs. Medians of the
per-step wall times over ``--repeats`` passes of ``--steps`` steps (after one untimed step per column).

    python scripts/bench_mlm_gap.py --steps 5 --repeats 3
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch


def lean_times(method, cfg, batches, optimizer: str) -> list[float]:
    """Per-step seconds of the lean loop over ``batches[1:]`` (``batches[0]`` warms it up)."""
    from usebench.doctor.lean import LeanStep
    from usebench.train.optim import build_optimizer, unique_parameters

    lean = LeanStep(method, cfg, "cpu", "fp32")
    if optimizer == "preset":
        lean.optimizer = build_optimizer(cfg, unique_parameters(method.trainable_parameters(lean.module)))
    lean.step(batches[0])
    times = []
    for batch in batches[1:]:
        t0 = time.perf_counter()
        lean.step(batch)
        times.append(time.perf_counter() - t0)
    return times


def ours_times(method, cfg, data) -> list[float]:
    """Per-step seconds of the real loop, from the end of step 1 on."""
    from usebench.train.loop import train

    stamps: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        train(method, cfg, data, Path(tmp), seed=0, device="cpu", resume=False, show_progress=False,
              on_step=lambda _step: stamps.append(time.perf_counter()))
    return [b - a for a, b in zip(stamps, stamps[1:])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=5, help="timed steps per column and pass")
    parser.add_argument("--repeats", type=int, default=3, help="passes over the three columns, alternating")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench.doctor.trainers import training_data
    from usebench.registry import METHODS
    from usebench.train.batches import collate_step
    from usebench.train.loop import prepare_corpus
    from transformers import AutoTokenizer
    from usebench.eval.models import resolve_model

    method = METHODS.get("mlm")
    cfg = method.config("smoke", {"max_steps": args.steps + 1, "save_every": 0})
    data = training_data(method, cfg.batch_size * (args.steps + 3), words=(cfg.max_length, cfg.max_length + 8))
    texts = prepare_corpus(data, cfg, cfg.batch_size)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model(cfg.model).path)
    batches = [collate_step(method, cfg, tokenizer, texts, step, 0) for step in range(args.steps + 1)]
    columns: dict[str, list[float]] = {"ours": [], "lean, fused AdamW": [], "lean, BertAdam": []}
    for repeat in range(args.repeats):
        columns["ours"] += ours_times(method, cfg, data)
        columns["lean, fused AdamW"] += lean_times(method, cfg, batches, "fused")
        columns["lean, BertAdam"] += lean_times(method, cfg, batches, "preset")
        print(f"pass {repeat + 1}/{args.repeats}: " + ", ".join(f"{k} {statistics.median(v) * 1e3:.0f} ms"
                                                                 for k, v in columns.items())
              + f" (load average {os.getloadavg()[0]:.1f})", flush=True)
    ms = {k: statistics.median(v) * 1e3 for k, v in columns.items()}
    print(f"\nmedian ms/step: {', '.join(f'{k} {v:.0f}' for k, v in ms.items())}; {torch.get_num_threads()} threads")
    print(f"speed ours / lean (fused AdamW): {ms['lean, fused AdamW'] / ms['ours']:.3f}; "
          f"ours / lean (BertAdam, the preset's optimizer): {ms['lean, BertAdam'] / ms['ours']:.3f}")


if __name__ == "__main__":
    main()
