"""CQADupStack adapter: release-format fixture (2 forums), hand-computed MAP@100 / nDCG@10, pool rule, errors."""
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

DIR = "useb/data-eval/cqadupstack"

# Hand-made 2-d title vectors (no default: a text the adapter failed to strip would raise KeyError).
VECTORS = {
    "How to root my Galaxy S3?": [1, 0],  # a1
    "Battery drains fast after update": [0, 1],  # a2
    "Rooting a Samsung phone safely": [0.6, 0.8],  # a3 (padded with spaces in corpus.json)
    "Phone battery dies quickly": [0.8, 0.6],  # a4
    "Can I install apps on the SD card?": [1, 0],  # a5
    "Move applications to external storage": [0, 1],  # a6
    "Battery life got worse with new firmware": [0.8, 0.6],  # a7 (same vector as a4: exact ties)
    "How do I beat the final boss?": [1, 0],  # g1
    "Tips for the last boss fight": [0.6, 0.8],  # g2
    "Best strategy against the end boss": [0.8, 0.6],  # g3
    "Where is the secret level?": [0, 1],  # g4
    "Is there multiplayer on PC?": [0.6, 0.8],  # g5
}


def dcg(ranks: list[int]) -> float:
    return sum(1 / log2(r + 1) for r in ranks)


def test_test_split_by_hand():
    scorer = VectorScorer(VECTORS)
    ev = evaluate("cqadupstack", scorer, "test", ASSETS)
    # android pool = a3 a4 a5 a6 a7 (queries a1, a2 removed).
    # a1 (x): a5 1, a4 .8, a7 .8, a3 .6, a6 0 -> duplicate a3 at rank 4: AP 1/4, nDCG dcg([4]).
    # a2 (y): a6 1, a3 .8, a4 = a7 .6, a5 0 -> duplicates a4, a7 tie at ranks 3-4. sklearn AP treats the tie as
    #   one threshold: precision 2/4 at recall 1 -> AP 1/2 (rank-wise it would be (1/3 + 2/4)/2).
    android_map = (1 / 4 + 1 / 2) / 2
    android_ndcg = (dcg([4]) / dcg([1]) + dcg([3, 4]) / dcg([1, 2])) / 2
    # gaming pool = g2 g3 (queries g1, g4, g5 removed).
    # g1 (x): g3 .8, g2 .6 -> duplicate g2 at rank 2: AP over the duplicates *found* = 1/2, although its other
    #   duplicate g4 is a query (not in the pool); nDCG's ideal still counts 2 duplicates.
    # g4 (y): its duplicate g1 is a query -> nothing found: AP 0, nDCG 0.
    # g5: empty duplicate list -> AP 0, left out of nDCG.
    gaming_map = (1 / 2 + 0 + 0) / 3
    gaming_ndcg = (dcg([2]) / dcg([1, 2]) + 0) / 2
    assert ev.subsets["android"] == pytest.approx({"map@100": android_map, "ndcg@10": android_ndcg}, abs=1e-12)
    assert ev.subsets["gaming"] == pytest.approx({"map@100": gaming_map, "ndcg@10": gaming_ndcg}, abs=1e-12)
    assert ev.scores["map@100"] == pytest.approx((android_map + gaming_map) / 2, abs=1e-12)
    assert ev.scores["ndcg@10"] == pytest.approx((android_ndcg + gaming_ndcg) / 2, abs=1e-12)
    assert ev.main_metric == "map@100" and ev.n_queries == 5
    # The scorer retrieved top 100 per forum from the pool, in corpus order, with stripped texts.
    (q1, pool1, k1), (q2, pool2, k2) = scorer.searches
    assert k1 == k2 == 100
    assert q1 == ["How to root my Galaxy S3?", "Battery drains fast after update"]
    assert q2 == ["How do I beat the final boss?", "Where is the secret level?", "Is there multiplayer on PC?"]
    assert pool1 == ["Rooting a Samsung phone safely", "Phone battery dies quickly",
                     "Can I install apps on the SD card?", "Move applications to external storage",
                     "Battery life got worse with new firmware"]
    assert pool2 == ["Tips for the last boss fight", "Best strategy against the end boss"]


def test_dev_split_is_valid_key_and_keeps_test_queries_in_pool():
    ev = evaluate("cqadupstack", VectorScorer(VECTORS), "dev", ASSETS)
    # android pool = all but a5 (test queries a1, a2 stay). a5 (x): a1 1, a4 .8, a7 .8, a3 .6, a2 0, a6 0 ->
    #   a6 ties a2 at 0 and comes after it (lower pool index first): rank 6; AP = 1/6 either way.
    # gaming g2 (.6,.8): g5 1, g3 .96, g4 .8, g1 .6 -> g3 at rank 2.
    assert ev.subsets["android"] == pytest.approx({"map@100": 1 / 6, "ndcg@10": dcg([6])}, abs=1e-12)
    assert ev.subsets["gaming"] == pytest.approx({"map@100": 1 / 2, "ndcg@10": dcg([2])}, abs=1e-12)
    assert ev.scores["map@100"] == pytest.approx((1 / 6 + 1 / 2) / 2, abs=1e-12)
    assert ev.n_queries == 2


def copy_fixture(tmp_path: Path) -> Path:
    shutil.copytree(ASSETS / DIR, tmp_path / DIR)
    return tmp_path / DIR


def test_json_syntax_error_names_file_and_line(tmp_path):
    folder = copy_fixture(tmp_path)
    lines = (folder / "corpus.json").read_text(encoding="utf-8").split("\n")
    lines[3] = lines[3].rstrip(",")  # drop the comma after a2's title: line 4 ends an entry, line 5 is bad
    (folder / "corpus.json").write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"corpus\.json:5: expected valid JSON"):
        TASKS.get("cqadupstack").load("test", tmp_path)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s["test"]["android"].update({"zz": ["a3"]}), "query ids that are questions of forum 'android'"),
        (lambda s: s["test"].pop("gaming"), "forum 'gaming' under 'test'"),
        (lambda s: s.pop("valid"), "a 'valid' key"),
        (lambda s: s["valid"]["android"].update({"a5": "a6"}), r"a list of duplicate ids at \['valid'\]"),
    ],
)
def test_bad_split_structure_is_named(tmp_path, mutate, message):
    folder = copy_fixture(tmp_path)
    split = json.loads((folder / "retrieval_split.json").read_text(encoding="utf-8"))
    mutate(split)
    (folder / "retrieval_split.json").write_text(json.dumps(split), encoding="utf-8")
    with pytest.raises(DataFormatError, match=f"retrieval_split.json: expected {message}"):
        TASKS.get("cqadupstack").load("dev" if "valid" in message else "test", tmp_path)


def test_missing_file(tmp_path):
    (copy_fixture(tmp_path) / "retrieval_split.json").unlink()
    with pytest.raises(MissingDataError, match="retrieval_split.json.*bench data download useb"):
        TASKS.get("cqadupstack").load("test", tmp_path)


def test_train_files_follow_data_train_layout():
    assert TASKS.get("cqadupstack").train_files() == ["useb/data-train/cqadupstack/unsupervised/train.txt"]


def test_runs_with_tiny_bert(tiny_bert_dir):
    from usebench.eval.encoder import HFEncoder
    from usebench.eval.scorer import DenseScorer

    encoder = HFEncoder(str(tiny_bert_dir), pooling="mean", device="cpu", show_progress=False)
    ev = evaluate("cqadupstack", DenseScorer(encoder), "test", ASSETS)
    assert set(ev.scores) == {"map@100", "ndcg@10"} and set(ev.subsets) == {"android", "gaming"}
    assert all(0.0 <= v <= 1.0 for v in ev.scores.values())
