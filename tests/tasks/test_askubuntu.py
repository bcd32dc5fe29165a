"""AskUbuntu adapter: release-format fixture, hand-computed metrics, skip rule, tie order, errors, real files."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.errors import DataFormatError, MissingDataError
from usebench.eval.evaluate import evaluate
from usebench.registry import TASKS
from usebench.tasks.askubuntu import read_eval
from usebench.tasks.rerank import rank_by_score
from tests.conftest import ASSETS
from tests.tasks.rerank_fakes import VectorScorer

DIR = "useb/data-eval/askubuntu"

# Hand-made title vectors (stripped titles): queries 1001 -> x, 1002 -> y, 1003 -> -x; every other title
# (the 20 "filler" questions) -> z, so its cosine with a query is 0 and it falls back on the BM25 order.
VECTORS = {
    "how do i install java ?": [1, 0, 0],
    "ubuntu wo n't boot after update": [0, 1, 0],
    "what is the default terminal font ?": [-1, 0, 0],
    "installing java on ubuntu": [0.8, 0.6, 0],  # 2001
    "java install problem": [0.6, 0.8, 0],  # 2002 (its title has a trailing space in the file)
    "boot fails after upgrade": [0, 0.8, 0.6],  # 2003
    "grub rescue prompt after update": [0, 0.6, 0.8],  # 2004
}


def scorer() -> VectorScorer:
    return VectorScorer(VECTORS, default=[0, 0, 1])


def ap(ranks: list[int]) -> float:
    """Hand AP: mean of (i-th hit)/rank over the ranks of the relevant candidates."""
    return float(np.mean([(i + 1) / r for i, r in enumerate(sorted(ranks))]))


def test_dev_metrics_by_hand():
    # 1001: cosines 2001 .8, 2002 .6, rest 0 in BM25 order 3001 3003 3002 ... (3003 scores 19.0 > 3002's 18.5
    #   although listed after it) -> similar 2002 at rank 2, 3003 at rank 4.
    # 1002: 2003 .8, then 2004 and 2001 tie at .6 -> BM25 order (2004 first); fillers in BM25 order, where
    #   3010 ties 3009 in BM25 score and stays first -> similar 2001 at rank 3, 3010 at rank 10.
    # 1003: no similar id -> skipped (its candidate 9999 is not even in text_tokenized.txt).
    ev = evaluate("askubuntu", scorer(), "dev", ASSETS)
    assert ev.n_queries == 2
    assert ev.scores["map"] == pytest.approx(np.mean([ap([2, 4]), ap([3, 10])]), abs=1e-12)
    assert ev.scores["map"] == pytest.approx((0.5 + (1 / 3 + 2 / 10) / 2) / 2, abs=1e-12)
    assert ev.scores["p@1"] == 0.0
    assert ev.scores["p@5"] == pytest.approx((2 / 5 + 1 / 5) / 2, abs=1e-12)
    assert ev.scores["mrr"] == pytest.approx((1 / 2 + 1 / 3) / 2, abs=1e-12)
    assert ev.main_metric == "map" and ev.subsets == {}


def test_test_metrics_by_hand():
    # 1002: 2003 (.8) then 2004 (.6): both similar ids first -> AP 1, P@1 1, P@5 2/5, RR 1.
    # 1003 (-x): its similar 2001 has cosine -.8, the only negative one -> rank 20: AP = RR = 1/20, P = 0.
    ev = evaluate("askubuntu", scorer(), "test", ASSETS)
    assert ev.n_queries == 2
    assert ev.scores == pytest.approx({"map": (1 + 1 / 20) / 2, "p@1": 0.5, "p@5": (2 / 5 + 0) / 2,
                                       "mrr": (1 + 1 / 20) / 2}, abs=1e-12)


def test_loader_bm25_order_titles_and_skip():
    task = TASKS.get("askubuntu")
    data = task.load("dev", ASSETS)
    assert data.n_skipped == 1
    q1, q2 = data.queries
    assert q1.candidate_ids[:5] == ("3001", "2001", "3003", "3002", "2002")  # sorted by BM25 score
    assert q2.candidate_ids[9:11] == ("3010", "3009")  # equal BM25 scores keep the file order
    assert q1.text == "how do i install java ?" and "java install problem" in q1.candidate_texts  # stripped
    assert len(q1.candidate_ids) == 20 and q1.relevant == {"2002", "3003"}
    assert set(task.texts(data)) >= set(q1.candidate_texts) | {q2.text}


def test_equal_cosines_keep_bm25_order():
    task = TASKS.get("askubuntu")
    data = task.load("dev", ASSETS)
    scores = task.score(data, scorer())[1]  # query 1002
    ids = list(data.queries[1].candidate_ids)
    assert scores[ids.index("2004")] == scores[ids.index("2001")]  # an exact tie, as the test intends
    assert rank_by_score(ids, scores)[:3] == ["2003", "2004", "2001"]  # 2004 is first in BM25 order


def copy_fixture(tmp_path: Path) -> Path:
    shutil.copytree(ASSETS / DIR, tmp_path / DIR)
    return tmp_path / DIR


@pytest.mark.parametrize(
    ("name", "lineno", "bad", "expected"),
    [
        ("dev.txt", 2, "1002\t2001\t2004 2001", "4 tab-separated fields"),
        ("dev.txt", 1, "1001\t2002\t2001 2002\t3.5", "as many BM25 scores as candidate ids"),
        ("dev.txt", 2, "1002\t2001\t2004 2001\t3.5 x", "a number (BM25 score)"),
        ("dev.txt", 1, "1001\t4242\t2001 2002\t3.5 2.5", "a similar id among the candidate ids"),
        ("dev.txt", 1, "1001\t2001\t2001 7777\t3.5 2.5", "ids that are in text_tokenized.txt"),
        ("text_tokenized.txt", 3, "1003\tonly a title", "3 tab-separated fields"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, name, lineno, bad, expected):
    folder = copy_fixture(tmp_path)
    lines = (folder / name).read_text(encoding="utf-8").split("\n")
    lines[lineno - 1] = bad
    (folder / name).write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        TASKS.get("askubuntu").load("dev", tmp_path)
    assert f"{name}:{lineno}: expected" in str(err.value) and expected in str(err.value)


def test_missing_corpus_names_fetch_command(tmp_path):
    folder = copy_fixture(tmp_path)
    (folder / "text_tokenized.txt").unlink()
    with pytest.raises(MissingDataError, match="text_tokenized.txt.*bench data download useb"):
        TASKS.get("askubuntu").load("test", tmp_path)


def test_train_files_follow_data_train_layout():
    assert TASKS.get("askubuntu").train_files() == ["useb/data-train/askubuntu/unsupervised/train.txt"]


def test_runs_with_tiny_bert(tiny_bert_dir):
    from usebench.eval.encoder import HFEncoder
    from usebench.eval.scorer import DenseScorer

    encoder = HFEncoder(str(tiny_bert_dir), pooling="mean", device="cpu", show_progress=False)
    ev = evaluate("askubuntu", DenseScorer(encoder), "test", ASSETS)
    assert set(ev.scores) == {"map", "p@1", "p@5", "mrr"}
    assert all(0.0 <= v <= 1.0 for v in ev.scores.values()) and ev.n_queries == 2


@pytest.mark.slow
def test_real_dev_test_files(real_data):
    """The real dev/test.txt of taolei87/askubuntu (text_tokenized.txt is not in the shared data)."""
    counts = {}
    for split in ("dev", "test"):
        lines = read_eval(real_data / DIR / f"{split}.txt")
        assert len(lines) == 200 and all(len(ln.bm25_ranked) == 20 for ln in lines)
        with_gold = [ln for ln in lines if ln.similar]
        # Every similar id is among the candidates, so AP's "relevant found" equals all relevant ids.
        assert all(set(ln.similar) <= set(ln.bm25_ranked) for ln in with_gold)
        counts[split] = len(with_gold)
    assert counts == {"dev": 189, "test": 186}  # 11 and 14 lines have no similar id and are skipped
    if not (real_data / DIR / "text_tokenized.txt").is_file():
        with pytest.raises(MissingDataError, match="text_tokenized.txt"):
            TASKS.get("askubuntu").load("dev", real_data)
