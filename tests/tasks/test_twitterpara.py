"""TwitterPara adapter: release formats, useb's protocol (AP without the middle grade, Spearman with it), errors.

Golden numbers come from sklearn/scipy on cosines derived from hand-placed angles, plus hand-computed APs.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import average_precision_score

from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.errors import BenchError, DataFormatError, MissingDataError
from usebench.eval.evaluate import evaluate
from usebench.registry import TASKS
from tests.tasks.pair_fakes import AngleScorer, expected_cosine

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TP = "useb/data-eval/twitterpara"

# Hand-placed angles (degrees) for every fixture sentence, as the release has them after stripping.
ANGLES = {
    "Storm hits the coast tonight": 0, "A big storm reaches the coast": 20, "Stay safe everyone": 70,
    "Coastal storm arrives tonight": 10, "Weather is wild today": 40,
    "Team wins the final": 90, "The final is won by the team": 140, "What a game": 120, "Team takes the title": 105,
    "storm hits the coast": 0, "a big storm reaches the coast": 18, "stay safe everyone": 60,
    "coastal storm arrives": 5, "team wins the final": 200, "the final is won by the team": 237,
    "what a game": 225.8, "go team": 272.5,
}
# The fixture's pairs, written out by hand: (s1, s2, grade, binary label or None for the middle grade).
URL_PAIRS = [
    ("Storm hits the coast tonight", "A big storm reaches the coast", 5, 1),
    ("Storm hits the coast tonight", "Stay safe everyone", 0, 0),
    ("Storm hits the coast tonight", "Coastal storm arrives tonight", 3, None),
    ("Storm hits the coast tonight", "Weather is wild today", 2, 0),
    ("Team wins the final", "The final is won by the team", 6, 1),
    ("Team wins the final", "What a game", 1, 0),
    ("Team wins the final", "Team takes the title", 4, 1),
]
PIT_PAIRS = [
    ("storm hits the coast", "a big storm reaches the coast", 4, 1),
    ("storm hits the coast", "stay safe everyone", 1, 0),
    ("storm hits the coast", "coastal storm arrives", 3, None),
    ("team wins the final", "the final is won by the team", 5, 1),
    ("team wins the final", "what a game", 0, 0),
    ("team wins the final", "go team", 2, 0),
]


def expected(pairs, scorer) -> tuple[float, float]:
    """(AP over labelled pairs, Spearman over all pairs) from sklearn/scipy."""
    cos = np.array([expected_cosine(scorer, a, b) for a, b, _, _ in pairs])
    labelled = [i for i, p in enumerate(pairs) if p[3] is not None]
    ap = average_precision_score([pairs[i][3] for i in labelled], cos[labelled])
    return ap, spearmanr([p[2] for p in pairs], cos).statistic


def test_is_registered_in_useb_with_its_metrics():
    task = TASKS.get("twitterpara")
    assert task.group == "useb" and task.dataset == "useb" and task.splits == ("test",)
    assert task.main_metric == "ap_avg" and task.main_metric in task.metric_names
    assert {"ap_twitterurl", "ap_pit", "spearman_twitterurl", "spearman_pit"} <= set(task.metric_names)


def test_loads_the_release_formats():
    data = TASKS.get("twitterpara").load("test", ASSETS)
    url, pit = data["twitterurl"], data["pit"]
    # Blank separator lines skipped, the 5-field lines read, trailing spaces stripped as useb does.
    assert list(zip(url.s1, url.s2, url.gold)) == [(a, b, g) for a, b, g, _ in URL_PAIRS]
    assert url.label.tolist() == [-1 if lab is None else lab for *_, lab in URL_PAIRS]
    assert list(zip(pit.s1, pit.s2, pit.gold)) == [(a, b, g) for a, b, g, _ in PIT_PAIRS]
    assert (url.n_labelled, len(pit), pit.n_labelled) == (6, 6, 5)


def test_metrics_match_sklearn_scipy_and_hand_computation():
    scorer = AngleScorer(ANGLES, strict=True)
    ev = evaluate("twitterpara", scorer, "test", ASSETS)
    ap_url, sp_url = expected(URL_PAIRS, scorer)
    ap_pit, sp_pit = expected(PIT_PAIRS, scorer)
    # By hand: URL ranking by cosine is + + - - + - -> (1 + 1 + 3/5) / 3; PIT is + - + - - -> (1 + 2/3) / 2.
    assert ap_url == pytest.approx(13 / 15) and ap_pit == pytest.approx(5 / 6)
    s = ev.scores
    assert s["ap_twitterurl"] == pytest.approx(ap_url, abs=1e-12)
    assert s["ap_pit"] == pytest.approx(ap_pit, abs=1e-12)
    assert s["ap_avg"] == pytest.approx((13 / 15 + 5 / 6) / 2, abs=1e-12)
    assert s["spearman_twitterurl"] == pytest.approx(sp_url, abs=1e-12)
    assert s["spearman_pit"] == pytest.approx(sp_pit, abs=1e-12)
    assert s["spearman_avg"] == pytest.approx((sp_url + sp_pit) / 2, abs=1e-12)
    assert ev.main_score == s["ap_avg"] and ev.n_queries == 6 + 5
    assert ev.subsets["twitterurl"]["n_pairs"] == 7 and ev.subsets["pit"]["ap"] == pytest.approx(5 / 6)
    assert len(scorer.prepared) == 2 * (7 + 6)  # every pair sentence offered to the scorer once per pair


def test_middle_grade_counts_for_spearman_but_not_for_ap():
    scorer = AngleScorer(ANGLES, strict=True)
    s = evaluate("twitterpara", scorer, "test", ASSETS).scores
    without_middle = [p for p in URL_PAIRS if p[3] is not None]
    cos = [expected_cosine(scorer, a, b) for a, b, _, _ in without_middle]
    assert s["spearman_twitterurl"] != pytest.approx(spearmanr([p[2] for p in without_middle], cos).statistic)


def test_has_no_dev_split():
    with pytest.raises(BenchError, match="no 'dev' split"):
        evaluate("twitterpara", AngleScorer(ANGLES), "dev", ASSETS)


def test_training_corpus_paths_and_missing_error(tmp_path):
    task = TASKS.get("twitterpara")
    assert task.train_files()[0] == "useb/data-train/twitterpara/unsupervised/train.txt"
    with pytest.raises(MissingDataError, match="--corpus"):
        task.train_corpus(tmp_path)
    corpus = tmp_path / "useb/data-train/twitterpara/unsupervised/train.txt"
    corpus.parent.mkdir(parents=True)
    corpus.write_text("first tweet\n\nsecond tweet\n", encoding="utf-8")
    assert task.train_corpus(tmp_path) == ["first tweet", "second tweet"]


def copy_fixture(tmp_path: Path) -> Path:
    shutil.copytree(ASSETS / TP, tmp_path / TP)
    return tmp_path / TP


def edit_line(path: Path, lineno: int, new: str) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[lineno - 1] = new
    path.write_text("\n".join(lines), encoding="utf-8")


URL = "Twitter_URL_Corpus_test.txt"
BAD = [
    (URL, 2, "Storm hits\tStay safe\t(0,6)", r"Twitter_URL_Corpus_test.txt:2: expected 4-5 tab-separated fields"),
    (URL, 3, "a\tb\t(x,6)\thttps://t.co/aaa", r"Twitter_URL_Corpus_test.txt:3: expected an annotation '\(n,6\)'"),
    (URL, 4, "a\tb\t(7,6)\thttps://t.co/aaa", r"Twitter_URL_Corpus_test.txt:4: expected an annotation"),
    (URL, 6, "a\tb\t(6,6)\tjunk\thttps://t.co/bbb", r"Twitter_URL_Corpus_test.txt:6: expected an empty 4th field"),
    ("test.data", 2, "10\tStorm\ta\tb\t1\ttags", r"test.data:2: expected 7 tab-separated fields"),
    ("test.data", 3, "10\tStorm\ta\tb\t6\tt1\tt2", r"test.data:3: expected an expert label 0-5"),
    ("test.label", 2, "true\t0.2000", r"test.label:2: expected 'false\\t0.2000'"),
    ("test.label", 5, "false\t0.2000", r"test.label:5: expected 'false\\t0.0000'"),
    ("test.label", 1, "maybe\t0.8000", r"test.label:1: expected 'true', 'false' or '----'"),
]


@pytest.mark.parametrize("name,lineno,line,message", BAD, ids=[f"{b[0]}:{b[1]}" for b in BAD])
def test_malformed_lines_name_file_line_and_expectation(tmp_path, name, lineno, line, message):
    root = copy_fixture(tmp_path)
    edit_line(root / name, lineno, line)
    with pytest.raises(DataFormatError, match=message):
        TASKS.get("twitterpara").load("test", tmp_path)


def test_pit_files_of_different_length_are_an_error(tmp_path):
    root = copy_fixture(tmp_path)
    (root / "test.label").write_text("true\t0.8000\nfalse\t0.2000\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"test.label: expected one gold line per input line of .*test.data"):
        TASKS.get("twitterpara").load("test", tmp_path)


def test_empty_or_blank_files_are_an_error(tmp_path):
    root = copy_fixture(tmp_path)
    (root / URL).write_text("\n\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="at least one scored sentence pair"):
        TASKS.get("twitterpara").load("test", tmp_path)
    (root / URL).write_bytes(b"")
    with pytest.raises(DataFormatError, match="empty file"):
        evaluate("twitterpara", AngleScorer(ANGLES), "test", tmp_path)


def test_missing_file_names_the_download_command(tmp_path):
    root = copy_fixture(tmp_path)
    (root / "test.label").unlink()
    with pytest.raises(MissingDataError, match="bench data download useb"):
        evaluate("twitterpara", AngleScorer(ANGLES), "test", tmp_path)


@pytest.mark.slow
def test_real_release_counts(real_data):
    data = TASKS.get("twitterpara").load("test", real_data)
    url, pit = data["twitterurl"], data["pit"]
    # 10370 lines = 10120 pairs + 250 blank lines; 786 have n == 3; PIT 972 pairs, 134 with expert label 3.
    assert (len(url), url.n_labelled, int((url.label == 1).sum())) == (10120, 9334, 1821)
    assert (len(pit), pit.n_labelled, int((pit.label == 1).sum())) == (972, 838, 175)
    assert all(s == s.strip() and s for s in url.s1 + url.s2 + pit.s1 + pit.s2)
