"""The local builds of MTEB's STS tasks reproduce MTEB's published scores for the packaged all-MiniLM-L6-v2.

STSBenchmark and SICK-R are MTEB's data built from the releases (``mteb:<Task>``); STS12-16 are SentEval's files
through MTEB's evaluator (``mteb-evaluator:senteval-sts1x``: MTEB's pairs and scores, another tokenisation of the
text), whose equal score holds for this model's WordPiece tokeniser, which ignores the spacing they differ in.

Published values typed in from MTEB's public results repository, embeddings-benchmark/results (snapshot at commit
f4cc6c8b365a3c779dbc708d6affe0b0355b2ddf; the files were last changed in 319e81d64298f3bdc5f09c8b6ff91f5015b3664c),
``results/sentence-transformers__all-MiniLM-L6-v2/8b3219a92973c328a8e22fadcfa821b5dc75636a/<Task>.json``,
``scores.test[0].main_score`` (cosine Spearman; mteb 1.12.75, the dataset revisions MTEB pins today). MTEB prints
them x100 with two decimals; the local builds must give the same printed digits, and lie within 5e-5 unrounded.
"""
from __future__ import annotations

import importlib.util

import pytest

from usebench import tasks  # noqa: F401  (enrols the adapters)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("mteb") is None,
                                 reason="needs the `mteb` extra: pip install -e '.[mteb]'")]

RESULTS_DIR = "results/sentence-transformers__all-MiniLM-L6-v2/8b3219a92973c328a8e22fadcfa821b5dc75636a"
PUBLISHED = {  # task -> main_score of RESULTS_DIR/<task>.json
    "STS12": 0.7236899998079941,
    "STS13": 0.8060316722220763,
    "STS14": 0.7558912408385123,
    "STS15": 0.8538961998125277,
    "STS16": 0.7898945343973262,
    "STSBenchmark": 0.8203247283076371,
    "SICK-R": 0.7758245525469719,
}

LOCAL_NAMES = {name: (f"mteb-evaluator:senteval-{name.lower()}" if name.startswith("STS1") else f"mteb:{name}")
               for name in PUBLISHED}


@pytest.fixture(scope="module")
def minilm_scorer():
    """The packaged MiniLM (mean pooling) with a text -> vector memo shared by the seven tasks (their texts
    overlap: STSb and SICK-R sentences recur), to keep this test to a few minutes on a CPU."""
    from usebench.eval.encoder import load_encoder
    from usebench.eval.scorer import DenseScorer

    encoder = load_encoder("minilm", pooling="mean", show_progress=False, device="cpu")
    memo: dict[str, object] = {}
    encode = encoder.encode

    def encode_once(texts):
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in memo]
        if todo:
            memo.update(zip(todo, encode(todo)))
        return np.stack([memo[t] for t in texts])

    encoder.encode = encode_once
    return DenseScorer(encoder)


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_local_build_reproduces_mtebs_published_minilm_score(name, minilm_scorer, real_data):
    from usebench.eval.evaluate import evaluate
    from usebench.registry import TASKS

    task_name = LOCAL_NAMES[name]
    task = TASKS.get(task_name)
    assert task.local is not None, f"{task_name} should be built from the data root"
    ev = evaluate(task_name, minilm_scorer, "test", real_data)  # the statistics / content checks run first
    ours, published = ev.scores["cosine_spearman"], PUBLISHED[name]
    assert ev.main_metric == "cosine_spearman" and ev.n_queries == task_size(name)
    assert f"{100 * ours:.2f}" == f"{100 * published:.2f}", (name, ours, published)
    assert ours == pytest.approx(published, abs=5e-5)


def task_size(name: str) -> int:
    import mteb

    return mteb.get_task(name).metadata.descriptive_stats["test"]["num_samples"]
