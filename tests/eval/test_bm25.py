"""BM25 scorer: analyzers and scores against a hand computation of Lucene's BM25 formula, for both presets."""
from __future__ import annotations

import math

import numpy as np
import pytest

from usebench.eval.bm25 import PRESETS, Analyzer, BM25Scorer, bm25_method
from usebench.errors import ConfigError

DOCS = [
    "The cat sat on the mat.",
    "The dog sat; the dog ran!",
    "Cats and dogs",
    "A mat",
    "John's dogs' running bowls",
    "the and of",  # only stopwords: empty under `anserini`
]
# Tokens written by hand for each preset (not produced by the code under test).
TOKENS = {
    "elasticsearch": [
        ["the", "cat", "sat", "on", "the", "mat"],
        ["the", "dog", "sat", "the", "dog", "ran"],
        ["cats", "and", "dogs"],
        ["a", "mat"],
        ["john's", "dogs", "running", "bowls"],
        ["the", "and", "of"],
    ],
    "anserini": [
        ["cat", "sat", "mat"],
        ["dog", "sat", "dog", "ran"],
        ["cat", "dog"],
        ["mat"],
        ["john", "dog", "run", "bowl"],
        [],
    ],
}
QUERIES = {
    "elasticsearch": ("the dog and the mat", ["the", "dog", "and", "the", "mat"]),
    "anserini": ("Running cats, the dogs", ["run", "cat", "dog"]),
}


def hand_bm25(query: list[str], docs: list[list[str]], k1: float, b: float) -> list[float]:
    """Lucene BM25, written out: N and avgdl over documents with at least one term; repeated query terms add."""
    indexed = [d for d in docs if d]
    n, avgdl = len(indexed), sum(len(d) for d in indexed) / len(indexed)
    scores = []
    for doc in docs:
        total = 0.0
        for term in query:
            tf = doc.count(term)
            if tf == 0:
                continue
            df = sum(1 for d in indexed if term in d)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            total += idf * tf / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(total)
    return scores


@pytest.mark.parametrize("preset", ["elasticsearch", "anserini"])
def test_analyzer_matches_hand_tokens(preset):
    analyzer = Analyzer(PRESETS[preset])
    assert [analyzer(d) for d in DOCS] == TOKENS[preset]
    assert analyzer(QUERIES[preset][0]) == QUERIES[preset][1]


def test_word_split_keeps_inner_apostrophes_and_dots():
    analyzer = Analyzer(PRESETS["elasticsearch"])
    assert analyzer("Can't see U.S. at 3.14, e-mail http://t.co/AbC") == [
        "can't", "see", "u.s", "at", "3.14", "e", "mail", "http", "t.co", "abc"]


def test_anserini_stems_as_lucene_porter_stem_filter():
    """Lucene's Porter (Martin Porter's C/Java version): <= 2 letters untouched, -logi -> -log, -bli -> -ble."""
    analyzer = Analyzer(PRESETS["anserini"])
    assert analyzer("US technology possibly S P generously") == ["us", "technolog", "possibl", "s", "p", "gener"]


@pytest.mark.parametrize("preset", ["elasticsearch", "anserini"])
def test_rerank_scores_equal_hand_formula(preset):
    cfg = PRESETS[preset]
    scorer = BM25Scorer(preset)
    scorer.prepare(DOCS)
    query, query_tokens = QUERIES[preset]
    expected = hand_bm25(query_tokens, TOKENS[preset], cfg.k1, cfg.b)
    np.testing.assert_allclose(scorer.rerank(query, DOCS), expected, rtol=1e-6, atol=1e-7)
    assert max(expected) > 0 and sum(e == 0 for e in expected) >= 1  # the case is not trivial


@pytest.mark.parametrize("preset", ["elasticsearch", "anserini"])
def test_pairs_score_query_s1_against_document_s2(preset):
    cfg = PRESETS[preset]
    scorer = BM25Scorer(preset)
    scorer.prepare(DOCS)
    query, query_tokens = QUERIES[preset]
    got = scorer.pairs([query, DOCS[1]], [DOCS[3], DOCS[0]])
    analyzer = Analyzer(cfg)
    expected = [hand_bm25(query_tokens, TOKENS[preset], cfg.k1, cfg.b)[3],
                hand_bm25(analyzer(DOCS[1]), TOKENS[preset], cfg.k1, cfg.b)[0]]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_preset_parameters():
    es, an = PRESETS["elasticsearch"], PRESETS["anserini"]
    assert (es.k1, es.b, es.stopwords, es.stemmer) == (1.2, 0.75, (), None)
    assert (an.k1, an.b, an.stemmer, len(an.stopwords)) == (0.9, 0.4, "porter", 33)


def test_search_ranks_with_lower_index_first_on_ties_and_fills_with_non_matches():
    scorer = BM25Scorer("elasticsearch")
    corpus = ["red apple", "green pear", "red apple", "blue sky", "red red apple"]
    scores, indices, matches = scorer.search_with_matches(["red apple", "zebra"], corpus, 4)
    expected = hand_bm25(["red", "apple"], [c.split() for c in corpus], 1.2, 0.75)
    order = sorted(range(5), key=lambda i: (-expected[i], i))[:4]
    assert indices[0].tolist() == order
    ranked = indices[0].tolist()
    assert expected[0] == expected[2] and ranked.index(0) == ranked.index(2) - 1  # identical docs: lower index first
    np.testing.assert_allclose(scores[0], [expected[i] for i in order], rtol=1e-6)
    assert matches.tolist() == [3, 0]
    assert indices[1].tolist() == [0, 1, 2, 3] and not scores[1].any()  # no match: zeros in corpus order
    _, i2 = scorer.search(["red apple"], corpus, 10)
    assert i2.shape == (1, 5)  # k capped at the corpus size


def test_search_statistics_come_from_the_searched_corpus():
    scorer = BM25Scorer("elasticsearch")
    scorer.prepare(["something else entirely"])
    corpus = ["a b", "b c", "c d"]
    scores, _ = scorer.search(["b"], corpus, 3)
    expected = hand_bm25(["b"], [c.split() for c in corpus], 1.2, 0.75)
    np.testing.assert_allclose(scores[0][:2], sorted(expected, reverse=True)[:2], rtol=1e-6)
    stats = scorer.describe()["corpus_statistics"]
    assert stats["search"]["n_docs"] == 3 and "rerank_pairs" not in stats  # prepare's texts were never used


def test_texts_not_prepared_join_the_statistics_and_are_reported():
    scorer = BM25Scorer("elasticsearch")
    scorer.prepare(DOCS[:3])
    got = scorer.rerank("mat", [DOCS[3]])
    expected = hand_bm25(["mat"], TOKENS["elasticsearch"][:4], 1.2, 0.75)[3]
    np.testing.assert_allclose(got, [expected], rtol=1e-6)
    assert scorer.describe()["corpus_statistics"]["rerank_pairs"]["added_after_prepare"] == 1


def test_describe_and_bench_eval_method_record_the_preset():
    scorer, method, config = bm25_method("bm25-anserini")
    assert isinstance(scorer, BM25Scorer) and method["name"] == "bm25"
    assert config["preset"] == "anserini" and config["k1"] == 0.9 and "searched corpus" in config["corpus_statistics"]
    scorer.prepare(DOCS)
    scorer.rerank("cat", DOCS[:2])
    info = scorer.describe()
    assert info["kind"] == "lexical" and info["preset"] == "anserini"
    assert info["corpus_statistics"]["rerank_pairs"]["n_docs"] == 5  # the stopword-only text is not counted
    assert bm25_method("bm25")[0].config.preset == "elasticsearch"


def test_runner_builds_bm25_for_bm25_model_names():
    from usebench.plan.eval_options import EvalOptions
    from usebench.run.evaluation import build_scorer

    scorer, method, config = build_scorer(EvalOptions(model="bm25-elasticsearch"))
    assert isinstance(scorer, BM25Scorer) and method["name"] == "bm25" and config["preset"] == "elasticsearch"


def test_use_collection_gives_each_dataset_its_own_statistics():
    """Two datasets scored one after the other: each pair's score uses only its own dataset's documents."""
    scorer = BM25Scorer("elasticsearch")
    first, second = ["a b", "b c", "c d"], ["b x", "y z", "b b q", "x y"]
    scorer.prepare([*first, *second])
    scorer.use_collection("first", first)
    got_first = scorer.pairs(["b"], ["b c"])
    scorer.use_collection("second", second)
    got_second = scorer.pairs(["b"], ["b x"])
    np.testing.assert_allclose(got_first, [hand_bm25(["b"], [t.split() for t in first], 1.2, 0.75)[1]], rtol=1e-12)
    np.testing.assert_allclose(got_second, [hand_bm25(["b"], [t.split() for t in second], 1.2, 0.75)[0]], rtol=1e-12)
    stats = scorer.describe()["corpus_statistics"]["rerank_pairs"]
    assert "separately" in stats["source"]
    assert {k: v["n_docs"] for k, v in stats["collections"].items()} == {"first": 3, "second": 4}


def test_twitterpara_indexes_its_two_corpora_separately(tmp_path):
    """TwitterPara through the engine: URL and PIT each scored with statistics of their own sentences."""
    import shutil
    from pathlib import Path

    from usebench import tasks  # noqa: F401
    from usebench.eval.evaluate import evaluate
    from usebench.registry import TASKS

    dest = tmp_path / "useb/data-eval/twitterpara"
    assets = Path(__file__).resolve().parents[1] / "assets"
    shutil.copytree(assets / "useb/data-eval/twitterpara", dest)
    shutil.copy(assets / "usebench-counts.json", tmp_path)  # the fixture's own counts (usebench/tasks/release.py)
    scorer = BM25Scorer("elasticsearch")
    evaluate("twitterpara", scorer, "test", tmp_path)
    data = TASKS.get("twitterpara").load("test", tmp_path)
    stats = scorer.describe()["corpus_statistics"]["rerank_pairs"]["collections"]
    for name, ps in data.items():
        assert stats[name]["n_rows"] == len({*ps.s1, *ps.s2})
        scorer.use_collection(name, [*ps.s1, *ps.s2])
        analyzer = Analyzer(PRESETS["elasticsearch"])
        docs = [analyzer(t) for t in dict.fromkeys([*ps.s1, *ps.s2])]
        expected = [hand_bm25(analyzer(a), docs, 1.2, 0.75)[docs.index(analyzer(b))] for a, b in zip(ps.s1, ps.s2)]
        np.testing.assert_allclose(scorer.pairs(ps.s1, ps.s2), expected, rtol=1e-12)


def test_unknown_preset_is_a_config_error():
    with pytest.raises(ConfigError, match="elasticsearch"):
        BM25Scorer("lucene")


# --- real data (slow) -------------------------------------------------------------------------------------
def independent_pair_bm25(s1: list[str], s2: list[str], collection: list[str], preset: str) -> np.ndarray:
    """Pure-Python Lucene BM25 of (query s1[i], document s2[i]) with statistics over the unique ``collection``."""
    from collections import Counter

    cfg, analyzer = PRESETS[preset], Analyzer(PRESETS[preset])
    docs = [analyzer(t) for t in dict.fromkeys(collection)]
    indexed = [d for d in docs if d]
    n, avgdl = len(indexed), sum(map(len, indexed)) / len(indexed)
    df = Counter(t for d in indexed for t in set(d))
    out = []
    for query, doc in zip(s1, s2):
        terms, tf = analyzer(doc), Counter(analyzer(doc))
        norm = cfg.k1 * (1 - cfg.b + cfg.b * len(terms) / avgdl)
        out.append(sum(math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * tf[t] / (tf[t] + norm)
                       for t in analyzer(query) if tf[t]))
    return np.array(out)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["elasticsearch", "anserini"])
def test_real_twitterpara_and_sts(real_data, preset):
    """BM25 on TwitterPara and the seven STS sets through the engine, against an independent BM25 + sklearn/scipy,
    and near the TSDAE paper's Elasticsearch row (Twitter URL 71.9, PIT 70.5 AP)."""
    from scipy.stats import spearmanr
    from sklearn.metrics import average_precision_score

    from usebench import tasks  # noqa: F401
    from usebench.eval.evaluate import evaluate
    from usebench.registry import TASKS
    from usebench.tasks.pairs import UNLABELLED

    scorer = BM25Scorer(preset)
    tp = TASKS.get("twitterpara")
    data = tp.load("test", real_data)
    ev = evaluate("twitterpara", scorer, "test", real_data)
    collections = scorer.describe()["corpus_statistics"]["rerank_pairs"]["collections"]
    for name, ps in data.items():
        # each corpus is its own collection: statistics from its own sentences only
        collection = [*ps.s1, *ps.s2]
        assert collections[name]["n_rows"] == len(set(collection)) and collections[name]["added_after_prepare"] == 0
        ref = independent_pair_bm25(list(ps.s1), list(ps.s2), collection, preset)
        keep = ps.label != UNLABELLED
        assert ev.scores[f"ap_{name}"] == pytest.approx(average_precision_score(ps.label[keep], ref[keep]), abs=1e-6)
    assert abs(ev.scores["ap_twitterurl"] - 0.719) < 0.02 and abs(ev.scores["ap_pit"] - 0.705) < 0.03
    for name in ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr"):
        task = TASKS.get(name)
        sts = task.load("test", real_data)
        ev = evaluate(name, scorer, "test", real_data)
        s1 = [t for ps in sts.values() for t in ps.s1]
        s2 = [t for ps in sts.values() for t in ps.s2]
        ref = independent_pair_bm25(s1, s2, task.texts(sts), preset)
        gold = np.concatenate([ps.gold for ps in sts.values()])
        assert ev.scores["spearman"] == pytest.approx(spearmanr(ref, gold).statistic, abs=1e-6), name
        assert 0.3 < ev.scores["spearman"] < 0.8, name


HASH_SEED_SCRIPT = """
import sys, numpy as np
from usebench.eval.bm25 import BM25Scorer
words = [f"w{i}" for i in range(60)] + ["running", "runs", "cats", "cat", "the", "dog's"]
rng = np.random.default_rng(0)
texts = [" ".join(rng.choice(words, size=int(rng.integers(3, 12)))) for _ in range(300)]
scorer = BM25Scorer(sys.argv[1])
scorer.prepare(texts)
pairs = scorer.pairs(texts[:150], texts[150:])
top, idx = scorer.search(texts[:20], texts, 10)
sys.stdout.write(pairs.tobytes().hex() + top.tobytes().hex() + idx.tobytes().hex())
"""


@pytest.mark.parametrize("preset", ["elasticsearch", "anserini"])
def test_scores_do_not_depend_on_the_hash_seed(preset):
    """Bit-identical scores under two PYTHONHASHSEED values (term numbering once followed set iteration order)."""
    import os
    import subprocess
    import sys

    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", HASH_SEED_SCRIPT, preset], env=env, capture_output=True,
                              text=True, timeout=600, check=True)
        outputs.append(done.stdout)
    assert outputs[0] and outputs[0] == outputs[1]


# A stand-in JAX that leaves a mark when imported or asked for a top-k (bm25s imports jax.lax and runs one top-k
# at import time; on a GPU host that claims ~75% of the GPU per process).
FAKE_JAX = {"jax/__init__.py": "import os, pathlib\npathlib.Path(os.environ['JAX_MARK']).write_text('imported')\n",
            "jax/lax.py": "def top_k(x, k):\n    raise RuntimeError('JAX top_k called')\n"}
JAX_PROBE = """
import json, os, sys
from usebench.eval.bm25 import BM25Scorer
top, idx = BM25Scorer("elasticsearch").search(["red dog"], ["a red dog", "a cat", "the dog"], 2)
print(json.dumps({"jax": "jax" in sys.modules, "top": idx.tolist(),
                  "env": {k: os.environ.get(k) for k in ("JAX_PLATFORMS", "XLA_PYTHON_CLIENT_PREALLOCATE")}}))
"""


@pytest.mark.parametrize("user_platforms", [None, "cuda"])
def test_bm25_never_brings_up_jax_and_keeps_the_users_jax_settings(tmp_path, user_platforms):
    """With JAX installed, building and searching a BM25 index imports no JAX at all (bm25s is imported with JAX
    blocked); JAX settings get CPU-only, non-preallocating defaults, and a user's own value is kept."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    for name, text in FAKE_JAX.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    mark = tmp_path / "jax-was-imported"
    repo = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "XLA_PYTHON_CLIENT_PREALLOCATE")}
    # the caller's own path is kept after ours (a node whose packages come from PYTHONPATH)
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), str(repo), os.environ.get("PYTHONPATH")])),
               JAX_MARK=str(mark))
    if user_platforms:
        env["JAX_PLATFORMS"] = user_platforms
    # the stand-in is importable in that interpreter: the test would see a real import
    subprocess.run([sys.executable, "-c", "import jax"], env=env, check=True, timeout=60)
    assert mark.is_file()
    mark.unlink()
    done = subprocess.run([sys.executable, "-c", JAX_PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert not mark.exists() and out["jax"] is False
    assert out["top"] == [[0, 2]]
    assert out["env"] == {"JAX_PLATFORMS": user_platforms or "cpu", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def test_bm25s_index_is_built_with_the_numpy_backend(monkeypatch):
    """bm25s is asked for its numpy backends explicitly (no numba JIT, no JAX top-k)."""
    from usebench.eval import bm25 as B

    bm25s = B.import_bm25s()
    seen = []
    real = bm25s.BM25

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(bm25s, "BM25", spy)
    BM25Scorer("anserini").search(["dogs"], ["dogs run", "cats"], 1)
    assert seen and seen[0]["backend"] == "numpy" and seen[0]["csc_backend"] == "numpy"
