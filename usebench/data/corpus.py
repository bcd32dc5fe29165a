"""Reading text files: the one line reader every data file goes through, and one-sentence-per-line corpora."""
from __future__ import annotations

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


def read_corpus(path: str | Path) -> list[str]:
    """Sentences of a one-per-line file, stripped. Blank lines are skipped (they carry no training signal);
    a missing file, a file with no sentence at all, or one that is not UTF-8 is an error naming the file."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"corpus file {path} does not exist")
    sentences = [s for s in (line.strip() for line in read_lines(path)) if s]
    if not sentences:
        raise BenchError(f"corpus file {path} has no sentences (expected one sentence per line)")
    return sentences
