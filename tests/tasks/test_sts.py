"""STS adapters (sts12..sts16, stsb, sickr): SentEval formats, the pooled "all" Spearman, SICK tokenisation, errors.

Expected numbers come from scipy on cosines derived from the fake scorer's angles, over pairs the tests read
with their own few lines of SentEval-style parsing (or list by hand).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.errors import BenchError, DataFormatError, MissingDataError
from usebench.eval.evaluate import evaluate
from usebench.registry import TASKS
from usebench.tasks import GROUPS, expand_tasks
from tests.tasks.pair_fakes import AngleScorer, expected_cosine

ASSETS = Path(__file__).resolve().parents[1] / "assets"
STS12 = ASSETS / "sts/senteval/STS12-en-test"
STS12_SUBSETS = ["MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"]


def senteval_pairs(subset: str) -> list[tuple[str, str, float]]:
    """The test's own reading, as SentEval's STSEval.loadFile: blank gold dropped, tokens re-joined by one space."""
    inputs = (STS12 / f"STS.input.{subset}.txt").read_text(encoding="utf-8").splitlines()
    golds = (STS12 / f"STS.gs.{subset}.txt").read_text(encoding="utf-8").splitlines()
    pairs = [line.split("\t") for line in inputs]
    return [(" ".join(a.split()), " ".join(b.split()), float(g)) for (a, b), g in zip(pairs, golds) if g != ""]


def correlations(pairs, scorer) -> tuple[float, float]:
    cos = [expected_cosine(scorer, a, b) for a, b, _ in pairs]
    gold = [g for _, _, g in pairs]
    return spearmanr(cos, gold).statistic, pearsonr(cos, gold).statistic


def test_all_seven_sets_are_registered_in_the_sts_group():
    assert expand_tasks("sts") == list(GROUPS["sts"]) == ["sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr"]
    for name in GROUPS["sts"]:
        task = TASKS.get(name)
        assert (task.group, task.dataset, task.family, task.main_metric) == ("sts", "sts", "pairs", "spearman")
        assert task.splits == (("dev", "test") if name in ("stsb", "sickr") else ("test",))
    assert TASKS.get("sts16").files("test")[:2] == ["sts/senteval/STS16-en-test/STS.input.answer-answer.txt",
                                                     "sts/senteval/STS16-en-test/STS.gs.answer-answer.txt"]


def test_sts12_reads_every_subset_and_drops_unscored_pairs():
    data = TASKS.get("sts12").load("test", ASSETS)
    assert list(data) == STS12_SUBSETS
    assert {k: len(v) for k, v in data.items()} == {"MSRpar": 3, "MSRvid": 3, "SMTeuroparl": 3, "surprise.OnWN": 4,
                                                    "surprise.SMTnews": 3}
    msrpar = data["MSRpar"]
    assert msrpar.s1[2] == "he said he would come ."  # the double space is gone, as with SentEval's split()
    assert msrpar.gold.tolist() == [4.2, 1.0, 5.0]  # the 4th pair has a blank gold line
    assert data["surprise.OnWN"].s1[2] == ""  # an empty sentence stays a (scorable) pair


def test_sts12_main_score_is_spearman_over_all_subsets_pooled():
    scorer = AngleScorer()
    ev = evaluate("sts12", scorer, "test", ASSETS)
    pooled = [p for s in STS12_SUBSETS for p in senteval_pairs(s)]
    spearman_all, pearson_all = correlations(pooled, scorer)
    assert ev.scores["spearman"] == pytest.approx(spearman_all, abs=1e-12)
    assert ev.scores["pearson"] == pytest.approx(pearson_all, abs=1e-12)
    assert ev.main_score == ev.scores["spearman"] and ev.n_queries == len(pooled) == 16
    per_subset = {s: correlations(senteval_pairs(s), scorer) for s in STS12_SUBSETS}
    for s, (sp, pe) in per_subset.items():
        assert ev.subsets[s]["spearman"] == pytest.approx(sp, abs=1e-12)
        assert ev.subsets[s]["pearson"] == pytest.approx(pe, abs=1e-12)
        assert ev.subsets[s]["n_pairs"] == len(senteval_pairs(s))
    # "all" is neither SentEval's plain nor its size-weighted mean of the subsets.
    sizes = [len(senteval_pairs(s)) for s in STS12_SUBSETS]
    assert ev.scores["spearman"] != pytest.approx(np.mean([v[0] for v in per_subset.values()]), abs=1e-6)
    assert ev.scores["spearman"] != pytest.approx(np.average([v[0] for v in per_subset.values()], weights=sizes),
                                                  abs=1e-6)


STSB_TEST = [
    ("a girl is styling her hair .", "a girl is brushing her hair .", 2.5),
    ("a group of men play soccer on the beach .", "a group of boys are playing soccer on the beach .", 3.6),
    ("oil prices drop .", "the senate passes the bill .", 0.0),
    ("it depends on what you mean .", "you can not know that .", 1.2),
]


@pytest.mark.parametrize("split,n", [("test", 4), ("dev", 3)])
def test_stsb_reads_score_and_sentence_columns(split, n):
    data = TASKS.get("stsb").load(split, ASSETS)
    (pairs,) = data.values()
    assert len(pairs) == n
    if split == "test":
        assert list(zip(pairs.s1, pairs.s2, pairs.gold)) == STSB_TEST
        scorer = AngleScorer()
        ev = evaluate("stsb", scorer, "test", ASSETS)
        expected = correlations(STSB_TEST, scorer)
        assert (ev.scores["spearman"], ev.scores["pearson"]) == pytest.approx(expected, abs=1e-12)
        assert ev.subsets == {}


# SICK as SentEval sees it after its Moses tokenisation (-no-escape, case kept; the Moses of SentEval's release
# splits an inner apostrophe on both sides); written out by hand.
SICK_TEST = [
    ("There is no boy playing outdoors and there is no man smiling",
     "A group of kids is playing in a yard and an old man is standing in the background", 3.3),
    ("A deer isn ' t jumping over the fence", "A deer is jumping over the fence", 3.9),
    ("A biker is jumping in the air , alone", "A person on a bike is jumping", 4.1),
    ("An Egyptian is wearing a woman ' s headdress", "A man is cooking pasta", 1.0),
]


def test_sickr_reads_the_crlf_release_with_senteval_tokenisation():
    (pairs,) = TASKS.get("sickr").load("test", ASSETS).values()
    assert list(zip(pairs.s1, pairs.s2, pairs.gold)) == SICK_TEST
    scorer = AngleScorer()
    ev = evaluate("sickr", scorer, "test", ASSETS)
    assert (ev.scores["spearman"], ev.scores["pearson"]) == pytest.approx(correlations(SICK_TEST, scorer), abs=1e-12)
    (trial,) = TASKS.get("sickr").load("dev", ASSETS).values()
    assert len(trial) == 3 and trial.gold.tolist() == [4.9, 3.0, 1.4]


def test_sets_without_dev_split_say_so():
    with pytest.raises(BenchError, match="no 'dev' split"):
        evaluate("sts12", AngleScorer(), "dev", ASSETS)


def test_training_corpus_needs_an_explicit_file(tmp_path):
    task = TASKS.get("stsb")
    with pytest.raises(MissingDataError, match="--corpus"):
        task.train_corpus(ASSETS)
    corpus = tmp_path / "wiki.txt"
    corpus.write_text("one sentence\nanother one\n", encoding="utf-8")
    assert task.train_corpus(ASSETS, corpus) == ["one sentence", "another one"]


def copy_tree(tmp_path: Path, rel: str) -> Path:
    shutil.copytree(ASSETS / rel, tmp_path / rel)
    return tmp_path / rel


def replace_line(path: Path, lineno: int, new: str) -> None:
    lines = path.read_bytes().decode("utf-8").split("\n")
    lines[lineno - 1] = new
    path.write_bytes("\n".join(lines).encode("utf-8"))


BAD = [
    ("sts12", "sts/senteval/STS12-en-test", "STS.input.MSRvid.txt", 2, "only one sentence here",
     r"STS.input.MSRvid.txt:2: expected 2 tab-separated fields"),
    ("sts12", "sts/senteval/STS12-en-test", "STS.input.MSRvid.txt", 1, "a\tb\tc",
     r"STS.input.MSRvid.txt:1: expected 2 "),
    ("sts12", "sts/senteval/STS12-en-test", "STS.gs.MSRvid.txt", 3, "high", r"STS.gs.MSRvid.txt:3: expected a number"),
    ("stsb", "sts/senteval/STSBenchmark", "sts-test.csv", 2, "main\tMSRvid\t2012\t0033\t3.6",
     r"sts-test.csv:2: expected 7-9 tab-separated fields"),
    ("stsb", "sts/senteval/STSBenchmark", "sts-test.csv", 1, "g\tf\ty\ti\tn/a\ts1\ts2",
     r"sts-test.csv:1: expected a number"),
    ("sickr", "sick", "SICK_test_annotated.txt", 1, "6\tA\tB\t3.3\tNEUTRAL\r",
     r"SICK_test_annotated.txt:1: expected the SICK header"),
    ("sickr", "sick", "SICK_test_annotated.txt", 3, "7\tA deer\t3.9\tNEUTRAL\r",
     r"SICK_test_annotated.txt:3: expected 5 tab-separated fields"),
]


@pytest.mark.parametrize("task,rel,name,lineno,line,message", BAD, ids=[f"{b[2]}:{b[3]}" for b in BAD])
def test_malformed_lines_name_file_line_and_expectation(tmp_path, task, rel, name, lineno, line, message):
    replace_line(copy_tree(tmp_path, rel) / name, lineno, line)
    split = "test"
    with pytest.raises(DataFormatError, match=message):
        TASKS.get(task).load(split, tmp_path)


def test_input_and_gold_of_different_length_are_an_error(tmp_path):
    root = copy_tree(tmp_path, "sts/senteval/STS12-en-test")
    (root / "STS.gs.SMTeuroparl.txt").write_text("4.750\n0.500\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"STS.gs.SMTeuroparl.txt: expected one gold line per input line of "
                                              r".*STS.input.SMTeuroparl.txt \(3 lines\), got '2 lines'"):
        TASKS.get("sts12").load("test", tmp_path)


def test_empty_files_are_an_error(tmp_path):
    root = copy_tree(tmp_path, "sts/senteval/STS12-en-test")
    (root / "STS.gs.MSRvid.txt").write_text("\n\n\n", encoding="utf-8")  # every pair unscored
    with pytest.raises(DataFormatError, match="STS.gs.MSRvid.txt: expected at least one scored sentence pair"):
        TASKS.get("sts12").load("test", tmp_path)
    (root / "STS.input.MSRvid.txt").write_bytes(b"")
    with pytest.raises(DataFormatError, match="STS.input.MSRvid.txt: expected a non-empty data file"):
        evaluate("sts12", AngleScorer(), "test", tmp_path)


def test_missing_set_names_the_download_command(tmp_path):
    with pytest.raises(MissingDataError, match="bench data download sts"):
        evaluate("sts13", AngleScorer(), "test", tmp_path)


REAL_COUNTS = {"sts12": 3108, "sts13": 1500, "sts14": 3750, "sts15": 3000, "sts16": 1186, "stsb": 1379, "sickr": 4927}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(REAL_COUNTS))
def test_real_pair_counts(real_data, name):
    task = TASKS.get(name)
    assert task.n_queries(task.load("test", real_data)) == REAL_COUNTS[name]
    if "dev" in task.splits:
        assert task.n_queries(task.load("dev", real_data)) == {"stsb": 1500, "sickr": 500}[name]


@pytest.mark.slow
def test_packaged_model_scores_are_sane(real_data, tmp_path):
    """all-MiniLM-L6-v2 (mean pooling) end to end through the `bench eval` engine on STSb and SICK-R.
    STS12-16 (and STSb, SICK-R) are scored to MTEB's published digits by tests/tasks/test_mteb_published.py (the
    mteb extra), and TwitterPara with this model is held to the committed reference by `bench check` (CI's last
    step) and to the kit by tests/api/test_useb_kit.py: encoding its 22K sentences here again cost over a minute
    of every CI run for a weaker check."""
    from usebench.plan.eval_options import EvalOptions
    from usebench.run.evaluation import evaluate_model

    names = ("stsb", "sickr")
    outcome = evaluate_model(EvalOptions(model="minilm", pooling="mean", batch_size=128), ",".join(names), "test",
                             real_data, tmp_path, strict=True)
    scores = {ev.task: ev.scores for ev in outcome.evaluations}
    assert sorted(scores) == sorted(names) and not outcome.skipped
    assert scores["stsb"]["spearman"] > 0.75 and scores["sickr"]["spearman"] > 0.7
    assert scores["stsb"]["spearman"] < 1 and scores["sickr"]["spearman"] < 1
    assert len(list(tmp_path.rglob("test.json"))) == 2
