"""Reading text files: the one line reader every data file goes through, and one-sentence-per-line corpora."""
from __future__ import annotations

from pathlib import Path

from benchmark.errors import BenchError, DataFormatError


def read_lines(path: str | Path) -> list[str]:
    r"""Lines of a UTF-8 text file without their line endings, split as Python's text mode splits them (``\n``,
    ``\r\n`` and a lone ``\r`` end a line), which is how the reference loaders (useb's evaluators, BEIR's
    ``GenericDataLoader``, sentence-transformers' examples) read their files. Unlike ``str.splitlines``, form
    feeds, ``\x1c``-``\x1e``, ``\x85`` and U+2028 stay inside their line: forum and tweet text contains them.
    A file that is not UTF-8 is a DataFormatError naming the line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")  # newline=None: \r\n and a lone \r become \n
    except UnicodeDecodeError as e:
        line = path.read_bytes()[: e.start].count(b"\n") + 1
        raise DataFormatError(path, line, "UTF-8 text") from None
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
