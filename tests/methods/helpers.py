"""Shared bits of the method tests: a toy corpus, the tiny-run config, and single-threaded torch.

Tiny models on 2 shared cores run several times faster with one torch thread (no oversubscription).
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

WORDS = ["apple", "banana", "cherry", "dog", "elephant", "fish", "grape", "house", "island", "jungle", "kite", "lemon", "mountain", "night", "ocean", "piano", "queen", "river", "sun", "tree"]


def toy_corpus(n: int = 64, seed: int = 0) -> list[str]:
    """``n`` distinct-ish word-salad sentences of 4-12 words."""
    r = random.Random(seed)
    return [" ".join(r.choice(WORDS) for _ in range(r.randint(4, 12))) for _ in range(n)]


# Overrides that turn any method's smoke preset into a seconds-long run on the tiny random BERT.
TINY_RUN = {"lr": 1e-3, "max_steps": 20, "batch_size": 8, "max_length": 32, "log_every": 5, "save_every": 0,
            "warmup_steps": 0, "warmup_ratio": 0.0, "dev_task": None, "dev_every": 0, "dev_patience": None, "epochs": None}


def tiny_config(method: Any, model_dir: Path, **overrides: Any) -> Any:
    """The method's smoke preset on ``model_dir`` with :data:`TINY_RUN` and the plugin's ``test_overrides``."""
    values = {**TINY_RUN, **getattr(method, "test_overrides", {}), "model": str(model_dir), **overrides}
    return method.config("smoke", **values)


@contextmanager
def one_thread() -> Iterator[None]:
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def toy_examples(method: Any, n: int = 64, seed: int = 0) -> list[tuple]:
    """Labeled examples for a ``data_kind = "labeled"`` method: pairs whose positive is the anchor's words
    reversed (``example_kind`` "pairs"), or graded pairs labeled 1 for that and 0 for an unrelated sentence."""
    r = random.Random(seed)
    texts = toy_corpus(2 * n, seed)
    if getattr(method, "example_kind", "pairs") == "pairs":
        return [(t, " ".join(reversed(t.split()))) for t in texts[:n]]
    return [(t, " ".join(reversed(t.split())), 1.0) if r.random() < 0.5 else (t, texts[n + i], 0.0)
            for i, t in enumerate(texts[:n])]


def toy_data(method: Any) -> list[Any]:
    """What the contract tests train a method on: sentences, or toy labeled examples."""
    return toy_examples(method) if getattr(method, "data_kind", "sentences") == "labeled" else toy_corpus()
