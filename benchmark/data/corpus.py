"""Unlabeled training corpora: one sentence per line, UTF-8."""
from __future__ import annotations

from pathlib import Path

from benchmark.errors import BenchError, DataFormatError


def read_corpus(path: str | Path) -> list[str]:
    """Sentences of a one-per-line file. Blank lines are skipped (they carry no training signal);
    a file with no sentence at all, or that is not UTF-8, is an error naming the file."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"corpus file {path} does not exist")
    sentences = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                raise DataFormatError(path, lineno, "UTF-8 text") from None
            if line:
                sentences.append(line)
    if not sentences:
        raise BenchError(f"corpus file {path} has no sentences (expected one sentence per line)")
    return sentences
