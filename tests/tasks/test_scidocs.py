"""SciDocs adapter: release-format data.json fixture, hand-computed trec MAP / nDCG, skip rules, errors."""
from __future__ import annotations

import json
import shutil
from math import log2
from pathlib import Path

import pytest

from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.errors import DataFormatError, MissingDataError
from usebench.eval.evaluate import evaluate
from usebench.registry import TASKS
from tests.conftest import ASSETS
from tests.tasks.rerank_fakes import VectorScorer

DIR = "useb/data-eval/scidocs"

# Hand-made 2-d title vectors (no default: an unstripped or unexpected title raises KeyError).
VECTORS = {
    "Learning sentence embeddings without labels": [1, 0],  # p1
    "Denoising autoencoders for text": [0.8, 0.6],  # p2
    "Contrastive learning of representations": [0.6, 0.8],  # p3 (trailing space in data.json)
    "Graph neural networks": [0, 1],  # p4
    "Protein folding with deep learning": [-0.6, 0.8],  # p7
    "Image segmentation in medical scans": [0.8, 0.6],  # p8 (= p2: exact ties)
}


def dcg(ranks: list[int]) -> float:
    return sum(1 / log2(r + 1) for r in ranks)


def test_test_split_by_hand():
    ev = evaluate("scidocs", VectorScorer(VECTORS), "test", ASSETS)
    # cite: p1 (x) ranks p2 .8, p3 .6, p4 0; p5 (null title) and p9 (not in corpus) are no candidates but p5
    #   is relevant, so trec AP = (1/1) / 2 relevant. p5 (null title) and p6 ("" title) are skipped as queries.
    cite = {"map": 1 / 2, "ndcg": dcg([1]) / dcg([1, 2])}
    # cocite: p4 (y): p3 .8, then p2 = p8 .6 (tie: trec_eval puts the larger doc id p8 first), p1 0;
    #   relevant p8, p1 at ranks 2 and 4.
    cocite = {"map": (1 / 2 + 2 / 4) / 2, "ndcg": dcg([2, 4]) / dcg([1, 2])}
    # coread: p2 (.8,.6): p1 first (relevant) -> 1, 1. p3 (.6,.8): p4 .8, p1 .6, p7 .28 -> p7 at rank 3.
    coread = {"map": (1 + 1 / 3) / 2, "ndcg": (1 + dcg([3])) / 2}
    # coview: p7 (-.6,.8): p4 .8 (relevant), p1 -.6; p9 relevant but absent -> AP 1/2. p3: both candidates lack
    #   a title -> an empty run for p3, which still counts, as 0.
    coview = {"map": (1 / 2 + 0) / 2, "ndcg": (dcg([1]) / dcg([1, 2]) + 0) / 2}
    expected = {"cite": cite, "cocite": cocite, "coread": coread, "coview": coview}
    for name, values in expected.items():
        assert ev.subsets[name] == pytest.approx(values, abs=1e-12)
        assert ev.scores[f"map_{name}"] == pytest.approx(values["map"], abs=1e-12)
        assert ev.scores[f"ndcg_{name}"] == pytest.approx(values["ndcg"], abs=1e-12)
    assert ev.scores["map_avg"] == pytest.approx(sum(v["map"] for v in expected.values()) / 4, abs=1e-12)
    assert ev.scores["ndcg_avg"] == pytest.approx(sum(v["ndcg"] for v in expected.values()) / 4, abs=1e-12)
    assert ev.main_metric == "map_avg" and ev.main_score == ev.scores["map_avg"]
    assert ev.n_queries == 1 + 1 + 2 + 2


def test_dev_split_reads_valid_key():
    ev = evaluate("scidocs", VectorScorer(VECTORS), "dev", ASSETS)
    # cite p2: p3 .96 before p1 .8 (relevant) -> rank 2; cocite, coread, coview: relevant first.
    assert ev.scores["map_cite"] == pytest.approx(1 / 2, abs=1e-12)
    assert ev.scores["map_avg"] == pytest.approx((1 / 2 + 1 + 1 + 1) / 4, abs=1e-12)
    assert ev.scores["ndcg_avg"] == pytest.approx((dcg([2]) + 3) / 4, abs=1e-12)


def test_loader_skips_untitled_queries_and_candidates():
    data = TASKS.get("scidocs").load("test", ASSETS)
    assert [q.qid for q in data.queries["cite"]] == ["p1"]
    assert data.queries["cite"][0].candidate_ids == ("p2", "p3", "p4")
    assert data.queries["coview"][1].candidate_ids == ()
    assert data.qrels["cite"]["p1"]["p5"] == 1  # the full qrels go to trec_eval


def copy_fixture(tmp_path: Path) -> Path:
    shutil.copytree(ASSETS / DIR, tmp_path / DIR)
    return tmp_path / DIR


def test_json_syntax_error_names_file_and_line(tmp_path):
    folder = copy_fixture(tmp_path)
    lines = (folder / "data.json").read_text(encoding="utf-8").split("\n")
    lines[3] = lines[3].replace('"title":', '"title"')  # line 4 loses its colon
    (folder / "data.json").write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"data\.json:4: expected valid JSON"):
        TASKS.get("scidocs").load("test", tmp_path)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["test"].pop("coview"), "the subtasks cite, cocite, coread, coview under 'test'"),
        (lambda d: d["test"]["cite"]["p1"].update({"p2": "1"}), "integer relevance labels"),
        (lambda d: d["corpus"]["p1"].pop("title"), "a 'title' key at \\['corpus'\\]\\['p1'\\]"),
        (lambda d: d["corpus"].update({"p2": {"title": 3}}), "a string or null"),
    ],
)
def test_bad_structure_is_named(tmp_path, mutate, message):
    folder = copy_fixture(tmp_path)
    data = json.loads((folder / "data.json").read_text(encoding="utf-8"))
    mutate(data)
    (folder / "data.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataFormatError, match=f"data.json: expected {message}"):
        TASKS.get("scidocs").load("test", tmp_path)


def test_missing_file(tmp_path):
    with pytest.raises(MissingDataError, match="data.json.*bench data download useb"):
        TASKS.get("scidocs").load("dev", tmp_path)


def test_train_files_follow_data_train_layout():
    assert TASKS.get("scidocs").train_files() == ["useb/data-train/scidocs/unsupervised/train.txt"]


def test_runs_with_tiny_bert(tiny_bert_dir):
    from usebench.eval.encoder import HFEncoder
    from usebench.eval.scorer import DenseScorer

    encoder = HFEncoder(str(tiny_bert_dir), pooling="mean", device="cpu", show_progress=False)
    ev = evaluate("scidocs", DenseScorer(encoder), "test", ASSETS)
    assert set(ev.scores) == set(TASKS.get("scidocs").metric_names)
    assert all(0.0 <= v <= 1.0 for v in ev.scores.values())
