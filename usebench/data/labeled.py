"""Labeled training data in the formats of their original releases, for the supervised training stages.

- USEB training release (``useb/data-train/<dir>/supervised/``, UKPLab/useb README): ``train.org`` and
  ``train.para`` are line-aligned, each line pair a gold relevant pair (for MultipleNegativesRankingLoss);
  TwitterPara (release folder ``twitter``) also has ``train.s1``, ``train.s2`` and ``train.lbl``, line-aligned
  sentence pairs with a float label (for CosineSimilarityLoss).
- Twitter URL training pairs as tokenised by castorini/data (``twitterPPDB/train/``): ``a.toks``, ``b.toks``,
  ``sim.txt`` (binary label), 42,200 line-aligned pairs (the release's 51,524 minus the undecided n == 3).
- STS-benchmark train (``sts/original/stsbenchmark/sts-train.csv``, Cer et al. 2017): 5,749 pairs, score 0-5,
  divided by 5 as sentence-transformers' STSb training does.
- AllNLI (sentence-transformers' ``AllNLI.tsv``: SNLI + MultiNLI): tab-separated with a header naming at least
  ``split``, ``sentence1``, ``sentence2`` and ``label`` (contradiction | entailment | neutral).

Every reader checks what the release guarantees (aligned line counts, labels in range, known NLI labels) and
raises an error naming the file and line. Blank lines are not skipped: they would shift the alignment.
"""
from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from usebench.data.memo import remember_file
from usebench.errors import BenchError, ConfigError, DataFormatError

Pair = tuple[str, str]  # (anchor, positive)
Triplet = tuple[str, str, str]  # (anchor, positive, hard negative)
Graded = tuple[str, str, float]  # (sentence1, sentence2, similarity label)
T = TypeVar("T")

NLI_LABELS = ("contradiction", "entailment", "neutral")
NLI_COLUMNS = ("split", "sentence1", "sentence2", "label")
TWITTER_URL_TRAIN_PAIRS = 42_200  # castorini/data twitterPPDB/train (SOURCES.md: 31,033 zeros + 11,167 ones)
STSB_TRAIN_PAIRS = 5_749  # STS-benchmark readme: train 5,749 / dev 1,500 / test 1,379


def read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 file without their line endings (CRLF tolerated); ``.gz`` files are decompressed. A copy of
    what is read once per planning session (:mod:`usebench.data.memo`)."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"{path} does not exist")
    return list(remember_file("labeled-lines", path, lambda: _read_lines(path), announce=True))


def _read_lines(path: Path) -> list[str]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataFormatError(path, raw[: e.start].count(b"\n") + 1, "UTF-8 text") from None
    # Split on "\n" only: str.splitlines also breaks on \x0c, \x85 and U+2028, which occur inside tweets.
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def aligned_columns(paths: Sequence[Path]) -> list[list[str]]:
    """The lines of line-aligned files; different line counts or a blank line are errors naming the file."""
    columns = [read_lines(p) for p in paths]
    counts = {str(p): len(c) for p, c in zip(paths, columns)}
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"{p}: {n} lines" for p, n in counts.items())
        raise BenchError(f"line-aligned files differ in length ({listed}); each line i of one must pair with "
                         f"line i of the others")
    for path, lines in zip(paths, columns):
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                raise DataFormatError(path, lineno, "a non-blank line (the files are line-aligned pairs)", line)
    return columns


def read_aligned_pairs(org: Path, para: Path) -> list[Pair]:
    """USEB ``train.org`` / ``train.para``: line i of each is a relevant pair."""
    a, b = aligned_columns([Path(org), Path(para)])
    return [(x.strip(), y.strip()) for x, y in zip(a, b)]


def parse_label(path: Path, lineno: int, text: str, low: float, high: float) -> float:
    """A float label in ``[low, high]``; anything else is an error naming the file, line and range."""
    try:
        value = float(text.strip())
    except ValueError:
        raise DataFormatError(path, lineno, f"a number in [{low:g}, {high:g}]", text) from None
    if not (low <= value <= high):  # also refuses nan
        raise DataFormatError(path, lineno, f"a label in [{low:g}, {high:g}]", text)
    return value


def read_graded_files(s1: Path, s2: Path, labels: Path, low: float = 0.0, high: float = 1.0) -> list[Graded]:
    """Line-aligned sentence files and a label file (USEB ``train.s1/.s2/.lbl``, castorini ``a.toks/b.toks/
    sim.txt``); labels must lie in ``[low, high]`` (cosine-similarity targets)."""
    a, b, lbl = aligned_columns([Path(s1), Path(s2), Path(labels)])
    return [(x.strip(), y.strip(), parse_label(Path(labels), i, v, low, high))
            for i, (x, y, v) in enumerate(zip(a, b, lbl), 1)]


def read_twitter_url_train(folder: Path) -> list[Graded]:
    """The Twitter URL training pairs in castorini's layout; ``sim.txt`` holds 0 or 1 per pair."""
    folder = Path(folder)
    pairs = read_graded_files(folder / "a.toks", folder / "b.toks", folder / "sim.txt")
    for lineno, (_, _, y) in enumerate(pairs, 1):
        if y not in (0.0, 1.0):
            raise DataFormatError(folder / "sim.txt", lineno, "a binary label 0 or 1", str(y))
    return pairs


def read_stsb_train(path: Path) -> list[Graded]:
    """STS-benchmark csv (``genre, file, year, id, score, s1, s2[, src1, src2]``): (s1, s2, score / 5)."""
    path = Path(path)
    out = []
    for lineno, line in enumerate(read_lines(path), 1):
        fields = line.split("\t")
        if not 7 <= len(fields) <= 9:
            raise DataFormatError(path, lineno, "7-9 tab-separated fields (genre, file, year, id, score, s1, s2"
                                  "[, src1, src2])", line)
        score = parse_label(path, lineno, fields[4], 0.0, 5.0)
        out.append((fields[5].strip(), fields[6].strip(), score / 5.0))  # [ST] training_stsbenchmark.py
    if not out:
        raise DataFormatError(path, None, "STS-benchmark pairs, found none")
    return out


def read_allnli(path: Path, split: str = "train") -> list[tuple[str, str, str]]:
    """(sentence1, sentence2, label) rows of one split of ``AllNLI.tsv`` (or ``.tsv.gz``), read as
    sentence-transformers does (tab-separated, header row, no quoting); an unknown label is an error. A copy of
    what is parsed once per planning session."""
    path = Path(path)
    return list(remember_file("allnli", path, lambda: _read_allnli(path, split), split))


def _read_allnli(path: Path, split: str) -> list[tuple[str, str, str]]:
    lines = read_lines(path)
    rows = _allnli_rows_split(lines, split)  # csv's own reading, ~5x faster, where the two provably agree
    if rows is None:
        reader = csv.DictReader(io.StringIO("\n".join(lines)), delimiter="\t", quoting=csv.QUOTE_NONE)
        missing = [c for c in NLI_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise DataFormatError(path, 1, f"a header with the columns {', '.join(NLI_COLUMNS)} (missing "
                                  f"{', '.join(missing)})", "\t".join(reader.fieldnames or []))
        rows = ((lineno, row["split"], row["sentence1"], row["sentence2"], row["label"])
                for lineno, row in enumerate(reader, 2))
    out = []
    for lineno, row_split, s1, s2, label in rows:
        if row_split != split:
            continue
        if label not in NLI_LABELS or s2 is None:
            raise DataFormatError(path, lineno, f"a label in {{{', '.join(NLI_LABELS)}}}", str(label))
        out.append((s1.strip(), s2.strip(), label))
    if not out:
        raise DataFormatError(path, None, f"rows of split {split!r}, found none")
    return out


def _allnli_rows_split(lines: list[str], split: str) -> list[tuple] | None:
    """(line number, split, sentence1, sentence2, label) of every row, read by splitting on tabs: what
    ``csv.DictReader(delimiter="\\t", quoting=QUOTE_NONE)`` reads from these lines whenever no line is empty (csv skips
    it, shifting the line numbers), none holds a carriage return or NUL (csv ends or refuses a record there), the
    header names each needed column once, every row has at least the header's fields (csv fills short rows with
    None) and no line reaches csv's field size limit. None otherwise: the caller reads with csv itself."""
    if not lines or "" in lines or max(map(len, lines)) >= csv.field_size_limit():
        return None
    header = lines[0].split("\t")
    if any(header.count(c) != 1 for c in NLI_COLUMNS) or any("\r" in x or "\0" in x for x in lines):
        return None
    width = len(header)
    i_split, i_s1, i_s2, i_label = (header.index(c) for c in NLI_COLUMNS)
    rows = []
    for lineno, line in enumerate(lines[1:], 2):
        fields = line.split("\t")
        if len(fields) < width:
            return None
        rows.append((lineno, fields[i_split], fields[i_s1], fields[i_s2], fields[i_label]))
    return rows


def nli_triplets(rows: Sequence[tuple[str, str, str]], rng: np.random.Generator) -> list[Triplet]:
    """(anchor, entailed, contradicting) triplets as sentence-transformers' ``training_nli_v2.py`` builds them:
    every pair counts in both directions; each sentence with at least one entailment and one contradiction
    gives two triplets, (s, random entailment, random contradiction) and (random entailment, s, random
    contradiction). The random choices come from ``rng`` (the reference uses Python's ``random``)."""
    partners: dict[str, dict[str, dict[str, None]]] = {}
    for s1, s2, label in rows:
        for a, b in ((s1, s2), (s2, s1)):
            partners.setdefault(a, {lab: {} for lab in NLI_LABELS})[label][b] = None  # ordered sets
    out: list[Triplet] = []
    for sent, by_label in partners.items():
        ent, con = list(by_label["entailment"]), list(by_label["contradiction"])
        if ent and con:
            out.append((sent, ent[rng.integers(len(ent))], con[rng.integers(len(con))]))
            out.append((ent[rng.integers(len(ent))], sent, con[rng.integers(len(con))]))
    return out


def nli_triplet_census(rows: Sequence[tuple[str, str, str]]) -> tuple[int, bool]:
    """What :func:`nli_triplets` gives for *any* generator, without drawing: (the number of triplets, whether every
    text a triplet can hold is non-blank). Two triplets per sentence that has an entailment and a contradiction
    partner, whichever it drew; every text of a triplet is a sentence of an entailment or contradiction row, so if
    none of those is blank no draw holds a blank one (False does not mean some draw does: check the draws then)."""
    entailed: set[str] = set()
    contradicted: set[str] = set()
    clean = True
    for s1, s2, label in rows:
        if label == "entailment":
            entailed.update((s1, s2))
        elif label == "contradiction":
            contradicted.update((s1, s2))
        else:
            continue
        clean = clean and bool(s1.strip()) and bool(s2.strip())
    return 2 * len(entailed & contradicted), clean


def nli_entailment_pairs(rows: Sequence[tuple[str, str, str]]) -> list[Pair]:
    """(premise, hypothesis) of every entailment row (MNRL without hard negatives)."""
    return [(s1, s2) for s1, s2, label in rows if label == "entailment"]


def labeled_subset(examples: Sequence[T], size: int | None, seed: int, what: str) -> list[T]:
    """The first ``size`` examples of a permutation seeded by ``seed``, kept in file order: for one seed the
    subsets are nested (the 1,000-example subset is inside the 2,000 one); ``None`` keeps everything."""
    if size is None:
        return list(examples)
    check_subset_size(size, len(examples), what)
    keep = np.sort(np.random.default_rng([seed, 0x1AB]).permutation(len(examples))[:size])
    return [examples[i] for i in keep]


def check_subset_size(size: int, available: int, what: str) -> None:
    """ConfigError unless a subset of ``size`` can be cut from ``available`` examples (``what`` names them)."""
    if size < 1:
        raise ConfigError(f"--labeled-sizes {size}: a labeled-set size must be >= 1")
    if size > available:
        raise ConfigError(f"--labeled-sizes {size}: {what} has only {available:,} labeled examples")

