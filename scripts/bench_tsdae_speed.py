"""TSDAE training speed: usebench's loop vs sentence-transformers' DenoisingAutoEncoderLoss, same machine.

Both train the same model with the same batch size, max sequence length, optimizer (AdamW lr 3e-5, constant,
weight decay 0, grad-norm clip 1), the same tied decoder and the same deletion noise function
(:func:`usebench.methods.parts.noise.delete_words`: NLTK's ``word_tokenize`` needs the ``punkt`` download, so the reference
dataset gets our punkt-free equivalent as its ``noise_fn``). The reference runs through
``SentenceTransformer.old_fit`` (the v2 training loop, which needs neither ``datasets`` nor ``accelerate``) with
``DenoisingAutoEncoderDataset``. Runs alternate (reference, ours, reference, ours, ...) and the best steps/s of
each side is reported, which damps the noise of a shared machine; the first ``--warmup`` steps are not timed.

    python scripts/bench_tsdae_speed.py --model minilm --batch-size 8 --max-length 64 --steps 60
    python scripts/bench_tsdae_speed.py --device cuda --amp   # bf16 autocast (ours) vs fp16 AMP (reference)
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def load_sentences(n: int) -> list[str]:
    """Unlabeled Twitter sentences from $BENCH_DATA if present, else word-salad sentences."""
    root = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    path = root / "useb" / "extra" / "twitter_url_train_tok" / "a.toks"
    if path.is_file():
        lines = list(dict.fromkeys(t.strip() for t in path.read_text(encoding="utf-8").splitlines() if t.strip()))
        return lines[:n]
    r = np.random.default_rng(0)
    words = ["river", "house", "dog", "night", "ocean", "piano", "queen", "sun", "tree", "kite", "lemon", "grape", "island", "jungle"]
    return [" ".join(r.choice(words, size=r.integers(5, 20))) for _ in range(n)]


def reference_steps_per_s(model_path: str, sentences: list[str], args: argparse.Namespace) -> float:
    """sentence-transformers: Transformer + CLS Pooling, DenoisingAutoEncoderLoss (tied), old_fit."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.datasets import (
        DenoisingAutoEncoderDataset,
    )
    from sentence_transformers.sentence_transformer.losses import (
        DenoisingAutoEncoderLoss,
    )
    from sentence_transformers.sentence_transformer.modules import Pooling
    from torch.utils.data import DataLoader

    from usebench.methods.parts.noise import delete_words

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    enc = Transformer(model_path, max_seq_length=args.max_length)
    model = SentenceTransformer(modules=[enc, Pooling(enc.get_embedding_dimension(), "cls")], device=args.device)
    data = DenoisingAutoEncoderDataset(sentences, noise_fn=lambda s: delete_words(s, 0.6, rng))
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True, drop_last=True)
    loss = DenoisingAutoEncoderLoss(model, tie_encoder_decoder=True)
    fit = dict(scheduler="constantlr", optimizer_params={"lr": 3e-5}, weight_decay=0.0, max_grad_norm=1.0,
               use_amp=args.amp, show_progress_bar=False)
    model.old_fit([(loader, loss)], epochs=1, steps_per_epoch=args.warmup, **fit)  # warm-up, not timed
    _sync(args.device)
    t0 = time.perf_counter()
    model.old_fit([(loader, loss)], epochs=1, steps_per_epoch=args.steps, **fit)
    _sync(args.device)
    return args.steps / (time.perf_counter() - t0)


def ours_steps_per_s(model: str, sentences: list[str], args: argparse.Namespace) -> float:
    """usebench: the tsdae plugin through usebench.train.loop.train; steps/s from the loop's own clock."""
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS
    from usebench.train.loop import train

    tsdae = METHODS.get("tsdae")
    common = dict(model=model, batch_size=args.batch_size, max_length=args.max_length, lr=3e-5,
                  scheduler="constant", weight_decay=0.0, grad_clip=1.0, save_every=0,
                  amp="auto" if args.amp else "off", epochs=None)
    with tempfile.TemporaryDirectory() as tmp:
        # Warm-up run (allocations, kernel selection), then the timed run from scratch.
        train(tsdae, tsdae.config("smoke", **common, max_steps=args.warmup, log_every=args.warmup),
              sentences, Path(tmp) / "warm", device=args.device, show_progress=False)
        res = train(tsdae, tsdae.config("smoke", **common, max_steps=args.steps, log_every=args.steps),
                    sentences, Path(tmp) / "timed", device=args.device, show_progress=False)
    return float(res.history[-1]["steps_per_s"])


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--amp", action="store_true", help="bf16 autocast (ours) vs fp16 AMP (reference)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from usebench.eval.models import resolve_model

    path = resolve_model(args.model).path
    sentences = load_sentences(max(2000, args.batch_size * (args.steps + args.warmup) * 2))
    ref, ours = [], []
    for _ in range(args.repeats):
        ref.append(reference_steps_per_s(path, sentences, args))
        ours.append(ours_steps_per_s(path, sentences, args))
    out = {"model": args.model, "batch_size": args.batch_size, "max_length": args.max_length, "steps": args.steps,
           "device": args.device, "amp": args.amp, "threads": torch.get_num_threads(),
           "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None,
           "st_steps_per_s": ref, "ours_steps_per_s": ours, "ratio_best": max(ours) / max(ref)}
    print(json.dumps(out))
    print(f"TSDAE steps/s: usebench {max(ours):.2f} vs sentence-transformers {max(ref):.2f} "
          f"-> ratio {out['ratio_best']:.2f} ({args.device}, bs {args.batch_size}, len {args.max_length})")


if __name__ == "__main__":
    main()
