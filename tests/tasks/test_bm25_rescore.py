"""BM25 rescoring wrapper, on the BEIR fixture: alpha=0 is BM25, a huge alpha is the dense order of BM25's list."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from usebench.eval.bm25 import BM25Scorer
from usebench.errors import BenchError
from usebench.eval.scorer import DenseScorer
from usebench.tasks.bm25_rescore import (
    BM25Rescore,
    RescoreConfig,
    RescoreScorer,
    combine,
    normalise,
)
from tests.tasks.test_beir import ASSETS, Tiny


class HashEncoder:
    """A stand-in encoder: a fixed pseudo-random 16-d vector per text (seeded by the text's hash)."""

    name = "hash"

    def encode(self, texts):
        seeds = [int(hashlib.md5(t.encode()).hexdigest()[:8], 16) for t in texts]
        return np.stack([np.random.default_rng(s).standard_normal(16) for s in seeds]).astype(np.float32)

    def describe(self):
        return {"model": "hash"}


@pytest.fixture
def setup():
    task = Tiny()
    data = task.load("test", ASSETS)
    dense = DenseScorer(HashEncoder(), search_backend="numpy")
    dense.prepare(task.texts(data))
    bm25 = BM25Scorer("elasticsearch")
    bm25.prepare(task.texts(data))
    return task, data, dense, bm25


def test_alpha_zero_reproduces_bm25_exactly(setup):
    task, data, dense, bm25 = setup
    combo = RescoreScorer(bm25, dense, top_k=1000)
    queries, corpus = list(data.query_texts), list(data.doc_texts)
    for how in ("none", "minmax", "zscore"):
        combo.set(0.0, how)
        _, idx = combo.search(queries, corpus, 12)
        np.testing.assert_array_equal(idx, bm25.search(queries, corpus, 12)[1])
    combo.set(0.0, "none")
    assert task.metrics(data, task.score(data, combo)) == task.metrics(data, task.score(data, bm25))


def test_huge_alpha_gives_the_dense_order_of_the_bm25_matches(setup):
    _, data, dense, bm25 = setup
    combo = RescoreScorer(bm25, dense, top_k=1000)
    combo.set(1e6, "none")
    queries, corpus = list(data.query_texts), list(data.doc_texts)
    _, idx = combo.search(queries, corpus, 12)
    _, bm25_idx, matches = bm25.search_with_matches(queries, corpus, 12)
    for row, query in enumerate(queries):
        matched = bm25_idx[row, : matches[row]]
        cos = dense.rerank(query, [corpus[j] for j in matched])
        dense_order = [int(matched[i]) for i in np.argsort(-cos, kind="stable")]
        assert idx[row, : matches[row]].tolist() == dense_order
        # documents BM25 does not match stay below, in BM25 (corpus) order
        assert idx[row, matches[row]:].tolist() == bm25_idx[row, matches[row]:].tolist()
    assert (matches < 12).any()  # the fixture has unmatched documents


def test_only_the_bm25_top_k_is_rescored_in_rerank(setup):
    _, _, dense, bm25 = setup
    combo = RescoreScorer(bm25, dense, top_k=2)
    combo.set(1e6, "none")
    candidates = ["learn python fast", "python python", "cook rice", "python rice"]
    b = bm25.rerank("python", candidates)
    combined = combo.rerank("python", candidates)
    top2 = np.argsort(-b, kind="stable")[:2]
    rest = [i for i in np.argsort(-b, kind="stable") if i not in top2]
    assert min(combined[top2]) > max(combined[rest])  # the rest ranks below, in BM25 order
    assert combined[rest[0]] > combined[rest[1]]


def test_normalisations_by_hand():
    x = np.array([1.0, 3.0, 5.0])
    np.testing.assert_allclose(normalise(x, "minmax"), [0.0, 0.5, 1.0])
    np.testing.assert_allclose(normalise(x, "zscore"), (x - 3.0) / np.sqrt(8 / 3))
    np.testing.assert_array_equal(normalise(np.array([2.0, 2.0]), "minmax"), [0.0, 0.0])
    got = combine(np.array([4.0, 2.0, 1.0]), np.array([0.0, 1.0, 0.5]), np.array([True, True, False]), 3.0, "none")
    assert got[:2].tolist() == [4.0, 5.0] and got[2] < 4.0


def test_alpha_is_chosen_on_dev_and_every_setting_is_reported(setup):
    task, data, dense, _ = setup
    config = RescoreConfig(alphas=(0.0, 1.0, 1e6), default_alpha=1.0)
    wrapper = BM25Rescore(task, config)
    both = wrapper.load("test", ASSETS)
    assert both.dev is not None and wrapper.files("test")[-1].endswith("qrels/dev.tsv")
    dense.prepare(wrapper.texts(both))
    run = wrapper.score(both, dense)
    dev_main = {a: run.metrics[("dev", "none", a)]["ndcg@10"] for a in config.alphas}
    best = min(a for a, v in dev_main.items() if v == max(dev_main.values()))
    assert wrapper.selected_alpha(run, "none") == (best, True)
    assert wrapper.metrics(both, run) == run.metrics[("main", "none", best)]
    subsets = wrapper.subsets(both, run)
    for how in ("none", "minmax", "zscore"):
        assert f"{how}/alpha=0" in subsets and f"dev/{how}/alpha=1e+06" in subsets
        assert subsets[f"selected/{how}"]["chosen_on_dev"] == 1.0
    # alpha 0 is plain BM25 on the evaluated split
    bm25 = BM25Scorer("elasticsearch")
    bm25.prepare(task.texts(data))
    assert subsets["none/alpha=0"] == task.metrics(data, task.score(data, bm25))


def test_without_dev_split_the_default_alpha_is_used(setup):
    class TestOnly(Tiny):
        splits = ("test",)

    dense = setup[2]
    wrapper = BM25Rescore(TestOnly(), RescoreConfig(alphas=(0.0, 20.0), default_alpha=20.0,
                                                    normalisations=("none",)))
    both = wrapper.load("test", ASSETS)
    assert both.dev is None
    run = wrapper.score(both, dense)
    assert wrapper.selected_alpha(run, "none") == (20.0, False)
    assert wrapper.subsets(both, run)["selected/none"]["chosen_on_dev"] == 0.0


def test_misuse_is_an_error(setup):
    task, _, _, bm25 = setup
    wrapper = BM25Rescore(task)
    with pytest.raises(BenchError, match="dense"):
        wrapper.score(wrapper.load("test", ASSETS), bm25)
    with pytest.raises(BenchError, match="not in the grid"):
        BM25Rescore(task, RescoreConfig(alphas=(0.0, 1.0), default_alpha=20.0))


def test_every_ranking_task_gets_a_wrapper():
    from usebench import tasks  # noqa: F401
    from usebench.registry import TASKS

    for name in TASKS.names():
        task = TASKS.get(name)
        for prefix in ("bm25+", "bm25-anserini+", "bm25-pyserini+"):
            wrapped = f"{prefix}{name}" in TASKS
            assert wrapped == (task.family in ("rerank", "retrieval") and "+" not in name), (prefix, name)
    rescore = TASKS.get("bm25+quora")
    assert rescore.main_metric == "ndcg@10" and rescore.splits == TASKS.get("quora").splits
    assert TASKS.get("bm25-pyserini+quora").config.preset == "pyserini"
    assert TASKS.get("bm25-anserini+askubuntu").name == "bm25-anserini+askubuntu"
    with pytest.raises(BenchError, match="ranking tasks"):
        BM25Rescore(TASKS.get("stsb"))


@pytest.mark.parametrize("inner", ["askubuntu", "cqadupstack", "scidocs"])
def test_wrapper_runs_through_the_engine_on_useb_fixtures(inner):
    """bm25+<task> through `evaluate`; its alpha=0 rows are the plain BM25 evaluation of the task."""
    from usebench import tasks  # noqa: F401
    from usebench.eval.evaluate import evaluate
    from usebench.registry import TASKS
    from tests.tasks.rerank_fakes import VectorScorer

    split = "test"
    ev = evaluate(f"bm25+{inner}", DenseScorer(HashEncoder(), search_backend="numpy"), split, ASSETS)
    plain = evaluate(inner, BM25Scorer("elasticsearch"), split, ASSETS)
    assert ev.subsets["none/alpha=0"] == plain.scores
    assert ev.main_metric == TASKS.get(inner).main_metric and set(ev.scores) == set(plain.scores)
    # any Scorer works as the dense side (here one without the DenseScorer fast path)
    generic = evaluate(f"bm25+{inner}", VectorScorer({}, default=[1.0, 0.0]), split, ASSETS)
    assert generic.subsets["none/alpha=0"] == plain.scores


def test_the_thesis_wrapper_fixes_alpha_at_20_and_keeps_the_sweep(setup):
    """bm25-pyserini-a20+<task>: eq. 5.1 with alpha = 20 (Table 5.8), never chosen on dev (Quora has a dev split);
    every alpha of the thesis grid stays in the subsets (Fig. 5.2's sweep)."""
    from usebench.registry import TASKS
    from usebench.tasks.bm25_rescore import THESIS_ALPHAS, THESIS_PREFIX

    wrapped = TASKS.get(f"{THESIS_PREFIX}quora")
    assert wrapped.name == "bm25-pyserini-a20+quora" and wrapped.config.preset == "pyserini"
    assert wrapped.config.fixed_alpha and wrapped.files("test") == TASKS.get("quora").files("test")  # no dev files
    task, data, dense, _ = setup
    fixed = BM25Rescore(task, RescoreConfig(preset="elasticsearch", fixed_alpha=True, prefix="x+"))
    chosen = BM25Rescore(task)
    assert fixed.load("test", ASSETS).dev is None and chosen.load("test", ASSETS).dev is not None
    run = fixed.score(fixed.load("test", ASSETS), dense)
    subsets = fixed.subsets(None, run)
    assert fixed.metrics(None, run) == subsets["none/alpha=20"]
    assert subsets["selected/none"]["alpha"] == 20.0 and subsets["selected/none"]["chosen_on_dev"] == 0.0
    assert all(f"none/alpha={a:g}" in subsets for a in THESIS_ALPHAS)
