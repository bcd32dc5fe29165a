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
