"""BEIR adapter on a tiny fixture in the exact BEIR format; metrics checked against hand computations."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from usebench.errors import DataFormatError, MissingDataError
from usebench.eval.metrics import mean_measure, trec_eval
from usebench.tasks.beir import K_VALUES, BeirData, BeirTask, exclude_and_cut, run_chunks

ASSETS = Path(__file__).resolve().parents[1] / "assets"


class Tiny(BeirTask):
    """The fixture dataset under tests/assets/beir/tiny."""

    name = "beir-tiny"
    beir_name = "tiny"
    splits = ("dev", "test")
    dataset = "tiny"


class FixedRanker:
    """A stand-in scorer whose search returns a given order of document ids per query id."""

    name = "fixed"

    def __init__(self, data, rankings: dict[str, list[str]]):
        self.qid = dict(zip(data.query_texts, data.query_ids))
        self.rankings = rankings

    def prepare(self, texts):
        pass

    def search(self, queries, corpus_texts, k):
        doc_ids = TINY_DOC_IDS
        scores, indices = [], []
        for q in queries:
            first = [doc_ids.index(d) for d in self.rankings[self.qid[q]]]
            order = first + [i for i in range(len(doc_ids)) if i not in first]
            indices.append(order[:k])
            scores.append(list(range(len(doc_ids), len(doc_ids) - k, -1)))
        return np.array(scores, np.float32), np.array(indices)

    def describe(self):
        return {"kind": "fixed"}


TINY_DOC_IDS = ["q1", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11"]
RANKINGS = {
    "q1": ["q1", "d3", "d2", "d1"],  # its own id first: dropped before evaluation
    "q2": ["d5", "d8", "d2"],
    "q3": ["d1", "d2", "d3", "d4", "d5", "d6", "d8", "d9", "d10", "d7"],  # the only relevant doc at rank 10
}


@pytest.fixture
def tiny():
    return Tiny(), Tiny().load("test", ASSETS)


def as_dict(data, run) -> dict[str, dict[str, float]]:
    """The whole ``{qid: {doc id: score}}`` run of a BeirRun (own ids dropped)."""
    out: dict[str, dict[str, float]] = {}
    for part in run_chunks(data, run):
        out.update(part)
    return out


def test_load_reads_the_beir_layout(tiny):
    task, data = tiny
    assert data.query_ids == ("q1", "q2", "q3")  # only judged queries (q4, q5 are judged in dev)
    assert data.doc_ids == tuple(TINY_DOC_IDS)
    texts = dict(zip(data.doc_ids, data.doc_texts))
    assert texts["q1"] == "How do I learn python quickly?"  # empty title: no leading space
    assert texts["d2"] == "Cooking How do I cook rice in a pan?"  # title + " " + text
    assert texts["d11"] == "Travel   Where should I travel in Europe?"  # stripped at the ends only
    assert data.qrels["q2"] == {"d2": 2, "d5": 1, "d8": 0}
    assert task.n_queries(data) == 3
    assert task.load("dev", ASSETS).query_ids == ("q4", "q5")


def test_metrics_equal_hand_computation(tiny):
    task, data = tiny
    run = as_dict(data, task.score(data, FixedRanker(data, RANKINGS)))
    assert "q1" not in run["q1"] and list(run["q1"])[:3] == ["d3", "d2", "d1"]
    assert len(run["q1"]) == 11 and len(run["q2"]) == 12
    log2 = math.log2
    ndcg = [(1 + 1 / log2(4)) / (1 + 1 / log2(3)),  # q1: relevant at ranks 1 and 3
            (1 + 0 + 2 / log2(4)) / (2 + 1 / log2(3)),  # q2: gains 1, 0, 2 at ranks 1-3; ideal 2, 1
            (1 / log2(11)) / 1]  # q3: gain 1 at rank 10
    ap = [(1 / 1 + 2 / 3) / 2, (1 / 1 + 2 / 3) / 2, 1 / 10]
    # relevant (judgement >= 1) at ranks: q1 1 and 3 of 2; q2 1 and 3 of 2 (d8 is judged 0); q3 10 of 1
    recall = {1: 1 / 3, 3: 2 / 3, 5: 2 / 3, 10: 1.0, 100: 1.0, 1000: 1.0}
    hits = {1: (1, 1, 0), 3: (2, 2, 0), 5: (2, 2, 0), 10: (2, 2, 1), 100: (2, 2, 1), 1000: (2, 2, 1)}
    expected = {"ndcg@10": np.mean(ndcg), "map@100": np.mean(ap),
                **{f"recall@{k}": recall[k] for k in K_VALUES},
                **{f"p@{k}": np.mean(hits[k]) / k for k in K_VALUES}}  # P@k divides by k, retrieved or not
    got = task.metrics(data, run)
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-12), name


def test_metrics_agree_with_pytrec_eval_directly(tiny):
    task, data = tiny
    run = as_dict(data, task.score(data, FixedRanker(data, RANKINGS)))
    per_query = trec_eval(data.qrels, run, ["ndcg_cut_10", "map_cut_100", "recall_100", "P_10"])
    assert task.metrics(data, run)["ndcg@10"] == mean_measure(per_query, "ndcg_cut_10")


def test_exclusion_keeps_depth_after_dropping_own_id():
    scores = np.array([[5.0, 4.0, 3.0], [5.0, 4.0, 3.0]])
    indices = np.array([[0, 1, 2], [1, 2, 0]])
    run = exclude_and_cut(["a", "x"], ["a", "b", "c"], scores, indices, depth=2)
    assert run == {"a": {"b": 4.0, "c": 3.0}, "x": {"b": 5.0, "c": 4.0}}


def test_bm25_end_to_end_on_the_fixture(tiny):
    from usebench.eval.bm25 import BM25Scorer

    task, data = tiny
    scorer = BM25Scorer("anserini")
    scorer.prepare(task.texts(data))
    run = as_dict(data, task.score(data, scorer))
    for qid, query in zip(data.query_ids, data.query_texts):
        # the search order is the order of the documents' BM25 scores (ties: corpus order), own id left out
        scores = BM25Scorer("anserini")
        scores.prepare(data.doc_texts)
        bm25 = scores.rerank(query, list(data.doc_texts))
        order = [data.doc_ids[i] for i in sorted(range(len(bm25)), key=lambda i: (-bm25[i], i))]
        assert list(run[qid]) == [d for d in order if d != qid]
    assert 0.0 < task.metrics(data, run)["ndcg@10"] <= 1.0


def test_train_corpus_is_the_documents_without_the_evaluation_queries():
    """q1 is a test query and a corpus document (as in Quora): it is left out unless asked for."""
    corpus = Tiny().train_corpus(ASSETS)
    assert len(corpus) == 11 and corpus[1] == "Cooking How do I cook rice in a pan?"
    assert "How do I learn python quickly?" not in corpus
    everything = Tiny().train_corpus(ASSETS, include_eval_queries=True)
    assert len(everything) == 12 and everything[0] == "How do I learn python quickly?"


def test_train_corpus_drops_a_document_with_a_query_text_under_another_id(tmp_path):
    root = write_copy(tmp_path)
    with (root / "corpus.jsonl").open("a", encoding="utf-8") as fh:  # q5 (a dev query) copied as a document
        fh.write(json.dumps({"_id": "d12", "title": "", "text": "Best programming language for beginners?"}) + "\n")
    corpus = Tiny().train_corpus(tmp_path)
    assert len(corpus) == 11 and "Best programming language for beginners?" not in corpus


def write_copy(tmp_path: Path) -> Path:
    root = tmp_path / "beir" / "tiny"
    shutil.copytree(ASSETS / "beir" / "tiny", root)
    return root


@pytest.mark.parametrize(
    "target, content, where",
    [
        ("qrels/test.tsv", "qid\tdid\tscore\nq1\td1\t1\n", "test.tsv:1"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\tyes\n", "test.tsv:2"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\n", "test.tsv:2"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq9\td1\t1\n", "test.tsv"),
        ("corpus.jsonl", '{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n', "corpus.jsonl:2"),
        ("corpus.jsonl", '{"_id": "d1", "text": "a"}\n{"text": "b"}\n', "corpus.jsonl:2"),
        ("queries.jsonl", '{"_id": "q1", "text": "a"}\nnot json\n', "queries.jsonl:2"),
        # BEIR's loader keeps the last of two queries with one id: the first one's text would vanish unseen
        ("queries.jsonl", '{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}\n', "queries.jsonl:2"),
    ],
)
def test_format_errors_name_file_and_line(tmp_path, target, content, where):
    root = write_copy(tmp_path)
    (root / target).write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError, match=where.replace(".", r"\.")):
        Tiny().load("test", tmp_path)


def test_missing_files_name_the_download_command(tmp_path):
    with pytest.raises(MissingDataError, match="bench data download tiny"):
        Tiny().load("test", tmp_path)


def test_quora_is_registered_on_the_adapter():
    from usebench import tasks  # noqa: F401
    from usebench.registry import TASKS

    quora = TASKS.get("quora")
    assert isinstance(quora, BeirTask) and quora.group == "beir" and quora.dataset == "quora"
    assert quora.files("test") == ["beir/quora/corpus.jsonl", "beir/quora/queries.jsonl", "beir/quora/qrels/test.tsv"]
    assert quora.main_metric == "ndcg@10" and set(quora.splits) == {"dev", "test"}


# --- BEIR itself (the `beir` extra) ---------------------------------------------------------------------------
needs_beir = pytest.mark.skipif(__import__("importlib").util.find_spec("beir") is None,
                                reason="needs the `beir` extra: pip install -e '.[beir]'")


@needs_beir
@pytest.mark.parametrize("split", ["dev", "test"])
def test_beirs_generic_data_loader_and_our_reader_give_the_same_data(split):
    from beir.datasets.data_loader import GenericDataLoader

    task = Tiny()
    paths = task.require(ASSETS, split)
    ours, theirs = task._load_ours(*paths), task._load_beir(split, *paths)[0]
    assert (ours.query_ids, ours.query_texts, ours.doc_ids, ours.doc_texts, ours.qrels) == (
        theirs.query_ids, theirs.query_texts, theirs.doc_ids, theirs.doc_texts, theirs.qrels)
    corpus, queries, qrels = GenericDataLoader(data_folder=str(ASSETS / "beir/tiny")).load(split=split)
    assert task.load(split, ASSETS).doc_ids == tuple(corpus) and tuple(qrels) == theirs.query_ids


@needs_beir
def test_our_metrics_equal_beirs_evaluate_retrieval(tiny):
    from beir.retrieval.evaluation import EvaluateRetrieval

    task, data = tiny
    scores, indices = FixedRanker(data, RANKINGS).search(list(data.query_texts), list(data.doc_texts), 12)
    full = {qid: {TINY_DOC_IDS[j]: float(v) for j, v in zip(indices[r], scores[r])}
            for r, qid in enumerate(data.query_ids)}  # each query's own id still in: BEIR drops it itself
    ours = task.metrics(data, exclude_and_cut(data.query_ids, TINY_DOC_IDS, scores, indices, 100))
    ndcg, map_, recall, precision = EvaluateRetrieval.evaluate(data.qrels, full, list(K_VALUES),
                                                               ignore_identical_ids=True)
    # BEIR rounds to 5 places
    assert ours["ndcg@10"] == pytest.approx(ndcg["NDCG@10"], abs=1e-5)
    assert ours["map@100"] == pytest.approx(map_["MAP@100"], abs=1e-5)
    for k in K_VALUES:
        assert ours[f"recall@{k}"] == pytest.approx(recall[f"Recall@{k}"], abs=1e-5)
        assert ours[f"p@{k}"] == pytest.approx(precision[f"P@{k}"], abs=1e-5)


class RandomScorer:
    """Random cosines, searched exactly: a stand-in dense model for a run deeper than 1000."""

    name = "random"

    def __init__(self, scores: np.ndarray):
        self.matrix = scores  # (n_queries, n_docs)

    def prepare(self, texts):
        pass

    def search(self, queries, corpus_texts, k):
        order = np.argsort(-self.matrix, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(self.matrix, order, 1), order

    def describe(self):
        return {"kind": "random"}


@needs_beir
def test_recall_and_precision_at_every_k_equal_beirs_on_a_deep_run():
    """1,500 documents, 40 queries with 1-6 relevant documents anywhere (also past rank 1000), some queries in
    the corpus under their own id: every R@k and P@k, k 1-1000, as BEIR's EvaluateRetrieval computes them."""
    from beir.retrieval.evaluation import EvaluateRetrieval

    rng = np.random.default_rng(11)
    doc_ids = tuple(f"q{i}" if i < 10 else f"d{i}" for i in range(1500))  # q0..q9 are corpus documents too
    query_ids = tuple(f"q{i}" for i in range(40))
    qrels = {q: {doc_ids[j]: int(rng.integers(1, 3)) for j in rng.choice(1500, rng.integers(1, 7), replace=False)
                 if doc_ids[j] != q} or {"d20": 1} for q in query_ids}
    data = BeirData(query_ids, query_ids, doc_ids, doc_ids, qrels)
    matrix = rng.normal(size=(40, 1500))
    ours = Tiny().metrics(data, Tiny().score(data, RandomScorer(matrix)))
    top = np.argsort(-matrix, axis=1, kind="stable")[:, :1001]
    full = {q: {doc_ids[j]: float(matrix[r, j]) for j in top[r]} for r, q in enumerate(query_ids)}
    _, _, recall, precision = EvaluateRetrieval.evaluate(qrels, full, list(K_VALUES), ignore_identical_ids=True)
    assert 0 < ours["recall@1000"] < 1  # some relevant documents lie past rank 1000
    for k in K_VALUES:
        assert ours[f"recall@{k}"] == pytest.approx(recall[f"Recall@{k}"], abs=1e-5), k
        assert ours[f"p@{k}"] == pytest.approx(precision[f"P@{k}"], abs=1e-5), k


@needs_beir
def test_our_exact_search_top_k_equals_beirs_dense_exact_search():
    """Same vectors, same cosine: our tie-exact search returns BEIR's DenseRetrievalExactSearch top-k."""
    from beir.retrieval.search.dense import DenseRetrievalExactSearch

    from usebench.eval.retrieval import search_inner_product
    from usebench.eval.scorer import l2_normalize

    rng = np.random.default_rng(3)
    docs = {f"d{i}": {"title": "", "text": f"doc {i}"} for i in range(300)}
    queries = {f"q{i}": f"query {i}" for i in range(40)}
    vec = {t: rng.normal(size=16).astype(np.float32) for t in [*queries.values(), *(d["text"] for d in docs.values())]}

    class Model:
        def encode_queries(self, texts, batch_size=32, **kw):
            return np.stack([vec[t] for t in texts])

        def encode_corpus(self, corpus, batch_size=32, **kw):
            return np.stack([vec[d["text"]] for d in corpus])

    k = 10
    theirs = DenseRetrievalExactSearch(Model(), batch_size=64).search(docs, queries, k, "cos_sim", return_sorted=True)
    q = l2_normalize(np.stack([vec[t] for t in queries.values()]))
    c = l2_normalize(np.stack([vec[d["text"]] for d in docs.values()]))
    result = search_inner_product(q, c, k, backend="numpy")
    ids = list(docs)
    for row, qid in enumerate(queries):
        expected = sorted(theirs[qid].items(), key=lambda kv: -kv[1])
        assert [ids[j] for j in result.indices[row]] == [d for d, _ in expected]
        np.testing.assert_allclose(result.scores[row], [s for _, s in expected], rtol=1e-5, atol=1e-6)
