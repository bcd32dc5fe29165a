"""The one line reader (usebench.data.corpus.read_lines) and one-sentence-per-line corpora."""
from __future__ import annotations

import pytest

from usebench.data.corpus import read_corpus, read_lines
from usebench.errors import BenchError, DataFormatError


def test_lines_split_as_python_text_mode_and_keep_other_separators_inside(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes("a\tb\r\nform\x0cfeed\nlone\rcr\nnel\u0085 and \u2028ls\n\nlast".encode())
    with path.open(encoding="utf-8") as fh:  # the reference loaders' way: iterate over open(path)
        reference = [line.rstrip("\n") for line in fh]
    assert read_lines(path) == reference
    assert read_lines(path) == ["a\tb", "form\x0cfeed", "lone", "cr", "nel\u0085 and \u2028ls", "", "last"]


def test_a_file_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nalso fine\nbad \xff byte\n")
    with pytest.raises(DataFormatError, match=r"bad.txt:3"):
        read_lines(path)


def test_corpus_strips_and_skips_blank_lines_through_the_same_reader(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"  one sentence \r\n\r\n\ttwo\rthree\n   \n")
    assert read_corpus(path) == ["one sentence", "two", "three"]
    (tmp_path / "blank.txt").write_text("\n \n", encoding="utf-8")
    with pytest.raises(BenchError, match="no sentences"):
        read_corpus(tmp_path / "blank.txt")
    with pytest.raises(BenchError, match="does not exist"):
        read_corpus(tmp_path / "missing.txt")


PIT_DEV = ("17\tA Walk To Remember\tA Walk to Remember is the definition of true love\tA Walk to Remember is on and "
           "Im in town and Im upset\t(1, 4)\tA/O/DT/B-NP/O\tA/O/DT/B-NP/O\n"
           "17\tA Walk To Remember\tA Walk to Remember is the definition of true love\tA Walk to Remember is the "
           "cutest thing\t(3, 2)\tA/O/DT/B-NP/O\tA/O/DT/B-NP/O\n")


def test_a_pit2015_train_or_dev_file_gives_its_two_sentence_columns(tmp_path):
    """PIT-2015's train format (SOURCES.md: topic id, topic name, sentence 1, sentence 2, (pos, neg) votes, tags),
    decided by content: each pair's two sentences in file order (duplicates are dropped later, by the corpus)."""
    path = tmp_path / "dev.data"
    path.write_text(PIT_DEV, encoding="utf-8")
    assert read_corpus(path) == ["A Walk to Remember is the definition of true love",
                                 "A Walk to Remember is on and Im in town and Im upset",
                                 "A Walk to Remember is the definition of true love",
                                 "A Walk to Remember is the cutest thing"]
    one_off = tmp_path / "mixed.txt"  # one line that is no pair: the file is one sentence per line, as ever
    one_off.write_text(PIT_DEV + "just a sentence\n", encoding="utf-8")
    assert read_corpus(one_off)[-1] == "just a sentence" and len(read_corpus(one_off)) == 3


def test_pit2015_test_pairs_are_refused_as_a_training_corpus():
    from pathlib import Path

    test_pairs = Path(__file__).resolve().parents[1] / "assets" / "useb" / "data-eval" / "twitterpara" / "test.data"
    with pytest.raises(BenchError, match="PIT-2015 test pairs"):
        read_corpus(test_pairs)


@pytest.mark.slow
def test_the_real_pit2015_dev_file_gives_4772_distinct_sentences_none_of_them_a_test_sentence(real_data):
    """SOURCES.md: 4,727 pairs; their 9,454 sentences hold 4,772 distinct ones, none in PIT-2015's test pairs (the
    test file's sentence columns read here by hand) nor, lowercased, in the tokenised Twitter URL sides."""
    dev = read_corpus(real_data / "useb" / "extra" / "pit2015" / "dev.data")
    assert len(dev) == 9454 and len(set(dev)) == 4772
    test = {s for line in read_lines(real_data / "useb" / "data-eval" / "twitterpara" / "test.data")
            for s in line.split("\t")[2:4]}
    assert len(test) > 1000 and not set(dev) & test
