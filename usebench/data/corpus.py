"""Reading text files: the one line reader every data file goes through, and one-sentence-per-line corpora (or
PIT-2015's train/dev pairs, read as their two sentence columns)."""
from __future__ import annotations

import re
from pathlib import Path

from usebench.data.memo import remember_file
from usebench.errors import BenchError, DataFormatError


def read_lines(path: str | Path) -> list[str]:
    r"""Lines of a UTF-8 text file without their line endings, split as Python's text mode splits them (``\n``,
    ``\r\n`` and a lone ``\r`` end a line), which is how the reference loaders (useb's evaluators, BEIR's
    ``GenericDataLoader``, sentence-transformers' examples) read their files. Unlike ``str.splitlines``, form
    feeds, ``\x1c``-``\x1e``, ``\x85`` and U+2028 stay inside their line: forum and tweet text contains them.
    A file that is not UTF-8 is a DataFormatError naming the line."""
    return _split_utf8(Path(path), universal_newlines=True)


def read_lines_lf(path: str | Path) -> list[str]:
    """Lines split on ``\n`` alone, a ``\r`` kept in its line (SentEval's files are converted byte for byte)."""
    return _split_utf8(Path(path), universal_newlines=False)


def _split_utf8(path: Path, universal_newlines: bool) -> list[str]:
    """A copy of the file's lines (read once per planning session, :mod:`usebench.data.memo`)."""
    return list(remember_file("lines", path, lambda: _read_split(path, universal_newlines), universal_newlines,
                              announce=True))


def _read_split(path: Path, universal_newlines: bool) -> list[str]:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataFormatError(path, data[: e.start].count(b"\n") + 1, "UTF-8 text") from None
    if universal_newlines:  # as text mode's newline=None: \r\n and a lone \r end a line
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# PIT-2015's train and dev files (SemEval-2015 Task 1): topic id, topic name, sentence 1, sentence 2, the crowd's
# (positive, negative) votes, and the two sentences' tags; its test file gives an expert label 0-5 instead
PIT_TRAIN_VOTES = re.compile(r"^\(\d+, \d+\)$")
PIT_TEST_LABEL = re.compile(r"^[0-5]$")


def read_corpus(path: str | Path) -> list[str]:
    """Sentences of a one-per-line file, stripped. Blank lines are skipped (they carry no training signal);
    a missing file, a file with no sentence at all, or one that is not UTF-8 is an error naming the file. A file
    whose every line is a PIT-2015 train/dev pair (7 tab-separated fields, the votes ``(p, n)`` in the fifth) gives
    each pair's two sentences, in file order: decided by the content, never by the name. PIT's test pairs are
    refused: training on them would train on the test set."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"corpus file {path} does not exist")
    lines = read_lines(path)
    pairs = pit_pairs(lines, path)
    sentences = [s for s in (line.strip() for line in (pairs if pairs is not None else lines)) if s]
    if not sentences:
        raise BenchError(f"corpus file {path} has no sentences (expected one sentence per line)")
    return sentences


def pit_pairs(lines: list[str], path: Path) -> list[str] | None:
    """The sentences of PIT-2015 train/dev pairs (columns 3 and 4 of each line), or None when ``lines`` are not
    all such pairs; PIT's test file (an expert label in the fifth field) is a BenchError."""
    first = next((line for line in lines if line.strip()), "")
    if first.count("\t") != 6:  # a plain corpus (the first line is no pair): decided without splitting 1M lines
        return None
    rows = [line.split("\t") for line in lines if line.strip()]
    if not rows or any(len(r) != 7 for r in rows):
        return None
    if all(PIT_TEST_LABEL.match(r[4].strip()) for r in rows):
        raise BenchError(f"corpus file {path}: PIT-2015 test pairs (an expert label 0-5 in the fifth field); "
                         "TwitterPara is scored on them, so they are no training corpus (its train and dev pairs "
                         "are: useb/extra/pit2015/dev.data)")
    if not all(PIT_TRAIN_VOTES.match(r[4].strip()) for r in rows):
        return None
    return [s for r in rows for s in (r[2], r[3])]
