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


def split_paraphrases(lines: Sequence[str], source: str = "corpus", numbered: bool = True
                      ) -> tuple[list[str], list[str]]:
    """``sentence<TAB>paraphrase`` lines -> (sentences, paraphrases), as DenoSent's collate reads a batch of them. A
    line without exactly one TAB, or with an empty side, is a DataFormatError naming ``source``, the line (1-based,
    when ``numbered``) and its text."""
    originals, paraphrases = [], []
    for i, line in enumerate(lines, 1):
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise DataFormatError(source, i if numbered else None,
                                  "'sentence<TAB>paraphrase' (DenoSent with paraphrases=true)", line)
        originals.append(parts[0].strip())
        paraphrases.append(parts[1].strip())
    return originals, paraphrases


PARAPHRASE_HELP = (
    "DenoSent with paraphrases=true (the paper and official presets) trains on 'sentence<TAB>paraphrase' lines, but "
    "line {line} of the corpus is not one ({text!r}). The published setting needs the authors' back-translated "
    "data: `bench data download denosent` (or `bench data import FILE --as denosent-data`), then --corpus "
    "<data-root>/denosent/paraphrases.tsv. Without it, --preset paper-no-bt runs the paper's 'w/o discrete noise' "
    "ablation (Table 3), which is not the paper's main setting.")


def check_paraphrase_corpus(texts: Sequence[str]) -> None:
    """Refuse a training corpus (its cleaned lines) of which a line is not ``sentence<TAB>paraphrase``, saying what the
    published setting needs (DenoSent's ``paraphrases=true``, checked when the run is planned)."""
    bad = next((i for i, t in enumerate(texts, 1) if t.count("\t") != 1), None)
    if bad is not None:
        raise BenchError(PARAPHRASE_HELP.format(line=bad, text=texts[bad - 1][:80]))
