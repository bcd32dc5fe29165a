"""Paraphrase pairs for DenoSent's discrete noise: the authors' released data in the suite's corpus layout.

DenoSent (Wang et al. 2024) trains on SimCSE's wiki1m sentences paired with their back-translations (en -> zh -> en,
Helsinki-NLP opus-mt; paper appendix), released by the authors as the Hugging Face dataset ``Singhoo/denosent_data``
(columns ``sent0`` = sentence, ``sent1`` = back-translation; the README's training command reads it). ``bench data
download denosent`` fetches the hub's parquet export of its train split (``usebench/data/sources.json``; its sha256
is recorded on the first download and checked on every later one) and derives ``denosent/paraphrases.tsv``: one
``sentence<TAB>paraphrase`` line per pair, the corpus layout of DenoSent's ``paraphrases=true``. A local copy is
placed with ``bench data import FILE.parquet --as denosent-data``, or, already in that layout, ``bench data import
FILE.tsv --as denosent-pairs`` (checked line by line).

Tabs and line breaks inside a sentence become spaces (the layout has one tab and one pair per line); pairs with
an empty side are dropped and counted.
"""
from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from usebench.data.corpus import read_lines
from usebench.errors import BenchError, DataFormatError

PYARROW_HINT = "pip install pyarrow (it comes with the mteb extra's `datasets`)"


def _one_line(text: str) -> str:
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ").strip()


def read_parquet_pairs(path: Path, columns: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(sentence, paraphrase) rows of the two ``columns`` of a parquet file, in file order."""
    if importlib.util.find_spec("pyarrow") is None:
        raise BenchError(f"reading {path.name} (parquet) needs pyarrow: {PYARROW_HINT}")
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, columns=list(columns))
    except (OSError, ValueError, KeyError) as e:  # not parquet, or the columns are absent
        raise DataFormatError(path, None, f"a parquet file with columns {', '.join(columns)}", str(e)[:120]) from None
    first, second = (table.column(c).to_pylist() for c in columns)
    yield from zip(first, second)


def write_tsv(src: Path, out: Path, columns: Sequence[str]) -> tuple[int, int]:
    """Write ``out`` (sentence<TAB>paraphrase lines) from the parquet ``src``; returns (pairs written, dropped)."""
    kept = dropped = 0
    with out.open("w", encoding="utf-8", newline="\n") as fh:
        for a, b in read_parquet_pairs(src, columns):
            a, b = _one_line(a or ""), _one_line(b or "")
            if not a or not b:
                dropped += 1
                continue
            fh.write(f"{a}\t{b}\n")
            kept += 1
    if not kept:
        raise DataFormatError(src, None, "at least one pair with both sides non-empty", "none")
    os.chmod(out, 0o666 & ~_umask())
    return kept, dropped


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_tsv(path: Path, shown: str | Path | None = None) -> int:
    """The number of pairs of a ``sentence<TAB>paraphrase`` file; a line in another layout is a DataFormatError
    naming ``shown`` (default: ``path``) and the line."""
    lines, where = read_lines(path), shown or path
    for lineno, line in enumerate(lines, 1):
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise DataFormatError(where, lineno, "'sentence<TAB>paraphrase' (DenoSent's paraphrase layout)", line)
    if not lines:
        raise DataFormatError(where, None, "at least one 'sentence<TAB>paraphrase' line", "an empty file")
    return len(lines)
