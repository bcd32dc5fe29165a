"""A unit re-run with the same seed on the same machine gives the same weights and the same scores (issue 47), for
the laptop presets of the methods whose training draws noise (TSDAE's deletions, CT's pairs, SimCSE's dropout,
MLM's masks)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from usebench.plan.specs import RunOptions
from usebench.run.grid import run_benchmark
from tests.methods.helpers import one_thread, toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _fingerprint(results: Path) -> tuple[dict, str]:
    """(every result's scores by task, sha256 of every exported weight file) of a store."""
    scores = {p.parent.name: json.loads(p.read_text(encoding="utf-8"))["scores"]
              for p in sorted(results.glob("*/*/test.json"))}
    weights = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(results.rglob("checkpoint/model.safetensors"))))
    return scores, weights.hexdigest()


@pytest.mark.parametrize("method", ["tsdae", "ct", "simcse", "mlm"])
def test_the_same_seed_gives_the_same_weights_and_scores(method, tiny_bert_dir, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(48)) + "\n", encoding="utf-8")
    opts = RunOptions(methods=(method,), tasks="twitterpara", eval_tasks="stsb", seeds=1, preset="laptop",
                      model=str(tiny_bert_dir), corpus=(corpus,), max_steps=3,
                      overrides=("batch_size=8", "max_length=32"), device="cpu", show_progress=False)
    with one_thread():
        stores = [tmp_path / "a", tmp_path / "b"]
        for store in stores:
            run_benchmark(opts, ASSETS, store)
    first, second = (_fingerprint(s) for s in stores)
    assert first[0] and set(first[0]) == {"twitterpara", "stsb"}
    assert first == second  # bit for bit: scores and weights
