"""Labeled-data readers on fixtures in the releases' exact formats (tests/assets/labeled_root), their errors on
bad input, seeded nested subsets, and (slow) the real Twitter URL training pairs and STS-benchmark train."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from usebench.data import labeled as L
from usebench.errors import BenchError, ConfigError, DataFormatError

ROOT = Path(__file__).resolve().parents[1] / "assets" / "labeled_root"
TW = ROOT / "useb" / "data-train" / "twitter" / "supervised"


def test_aligned_pairs_and_graded_files():
    pairs = L.read_aligned_pairs(TW / "train.org", TW / "train.para")
    assert pairs[1] == ("obama speaks at the un", "obama gives a speech at the united nations") and len(pairs) == 4
    graded = L.read_graded_files(TW / "train.s1", TW / "train.s2", TW / "train.lbl")
    assert len(graded) == 5 and graded[0][2] == pytest.approx(5 / 6) and graded[4][2] == 1.0


def test_misaligned_files_name_both(tmp_path):
    (tmp_path / "train.org").write_text("a\nb\nc\n")
    (tmp_path / "train.para").write_text("x\ny\n")
    with pytest.raises(BenchError, match=r"train.org: 3 lines, .*train.para: 2 lines"):
        L.read_aligned_pairs(tmp_path / "train.org", tmp_path / "train.para")
    (tmp_path / "train.para").write_text("x\n\nz\n")
    with pytest.raises(DataFormatError, match=r"train.para:2: expected a non-blank line"):
        L.read_aligned_pairs(tmp_path / "train.org", tmp_path / "train.para")


@pytest.mark.parametrize("bad", ["1.5", "-0.1", "nan", "high"])
def test_labels_outside_their_range_name_the_line(tmp_path, bad):
    for name, text in (("s1", "a\nb\n"), ("s2", "c\nd\n"), ("lbl", f"0.5\n{bad}\n")):
        (tmp_path / f"train.{name}").write_text(text)
    with pytest.raises(DataFormatError, match=r"train.lbl:2: expected a (label|number) in \[0, 1\]"):
        L.read_graded_files(tmp_path / "train.s1", tmp_path / "train.s2", tmp_path / "train.lbl")


def test_twitter_url_layout_is_binary(tmp_path):
    rows = L.read_twitter_url_train(ROOT / "useb" / "extra" / "twitter_url_train_tok")
    assert [r[2] for r in rows] == [1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
    for name, text in (("a.toks", "a\nb\n"), ("b.toks", "c\nd\n"), ("sim.txt", "1\n0.5\n")):
        (tmp_path / name).write_text(text)
    with pytest.raises(DataFormatError, match=r"sim.txt:2: expected a binary label 0 or 1"):
        L.read_twitter_url_train(tmp_path)


def test_stsb_train_scores_are_divided_by_five(tmp_path):
    rows = L.read_stsb_train(ROOT / "sts" / "original" / "stsbenchmark" / "sts-train.csv")
    assert rows[0] == ("A cat sits on a mat.", "A cat is sitting on a mat.", 1.0)
    assert rows[2][2] == pytest.approx(0.64) and len(rows) == 4  # 9-field line (with sources) read too
    bad = tmp_path / "sts-train.csv"
    bad.write_text("g\tf\t2012\t1\t5.5\ta\tb\n")
    with pytest.raises(DataFormatError, match=r"sts-train.csv:1: expected a label in \[0, 5\]"):
        L.read_stsb_train(bad)


def test_allnli_rows_triplets_and_unknown_labels(tmp_path):
    rows = L.read_allnli(ROOT / "nli" / "AllNLI.tsv")
    assert len(rows) == 6 and all(r[2] in L.NLI_LABELS for r in rows)  # the dev row is not in train
    trip = L.nli_triplets(rows, np.random.default_rng(0))
    # Pairs count in both directions, but only the two premises have an entailment *and* a contradiction
    # partner (a hypothesis has one partner); each gives (s, ent, con) and (ent, s, con), one choice each here.
    assert trip == [("A man is playing a guitar.", "A person plays music.", "The man is asleep."),
                    ("A person plays music.", "A man is playing a guitar.", "The man is asleep."),
                    ("Two dogs run in a field.", "Animals are outside.", "The dogs sleep indoors."),
                    ("Animals are outside.", "Two dogs run in a field.", "The dogs sleep indoors.")]
    assert L.nli_entailment_pairs(rows)[-1] == ("A woman reads a book.", "A woman is reading.")
    bad = tmp_path / "AllNLI.tsv"
    bad.write_text("split\tdataset\tfilename\tsentence1\tsentence2\tlabel\ntrain\tS\tf\ta\tb\tentail\n")
    with pytest.raises(DataFormatError, match=r"AllNLI.tsv:2: expected a label in \{contradiction, entailment"):
        L.read_allnli(bad)
    bad.write_text("premise\thypothesis\tlabel\n")
    with pytest.raises(DataFormatError, match=r"AllNLI.tsv:1: expected a header with the columns split"):
        L.read_allnli(bad)


def test_subsets_are_seeded_and_nested():
    items = list(range(5000))
    small, large = (L.labeled_subset(items, n, seed=3, what="x") for n in (1000, 2000))
    assert set(small) <= set(large) and len(set(large)) == 2000
    assert small == sorted(small)  # file order kept
    assert L.labeled_subset(items, 1000, seed=4, what="x") != small  # another seed, another subset
    assert L.labeled_subset(items, 1000, seed=3, what="x") == small
    with pytest.raises(ConfigError, match=r"--labeled-sizes 6000: the toy set has only 5,000 labeled examples"):
        L.labeled_subset(items, 6000, seed=0, what="the toy set")


@pytest.mark.slow
def test_real_twitter_url_pairs_and_stsb_train(real_data):
    rows = L.read_twitter_url_train(real_data / "useb" / "extra" / "twitter_url_train_tok")
    assert len(rows) == L.TWITTER_URL_TRAIN_PAIRS
    assert sum(r[2] for r in rows) == 11_167  # SOURCES.md: 31,033 zeros and 11,167 ones
    stsb = L.read_stsb_train(real_data / "sts" / "original" / "stsbenchmark" / "sts-train.csv")
    assert len(stsb) == L.STSB_TRAIN_PAIRS
    assert min(r[2] for r in stsb) == 0.0 and max(r[2] for r in stsb) == 1.0
