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
    """Lines of a UTF-8 file without their line endings (CRLF tolerated); ``.gz`` files are decompressed."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"{path} does not exist")
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
    sentence-transformers does (tab-separated, header row, no quoting); an unknown label is an error."""
    path = Path(path)
    reader = csv.DictReader(io.StringIO("\n".join(read_lines(path))), delimiter="\t", quoting=csv.QUOTE_NONE)
    missing = [c for c in NLI_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise DataFormatError(path, 1, f"a header with the columns {', '.join(NLI_COLUMNS)} (missing "
                              f"{', '.join(missing)})", "\t".join(reader.fieldnames or []))
    rows = []
    for lineno, row in enumerate(reader, 2):
        if row["split"] != split:
            continue
        if row["label"] not in NLI_LABELS or row["sentence2"] is None:
            raise DataFormatError(path, lineno, f"a label in {{{', '.join(NLI_LABELS)}}}", str(row["label"]))
        rows.append((row["sentence1"].strip(), row["sentence2"].strip(), row["label"]))
    if not rows:
        raise DataFormatError(path, None, f"rows of split {split!r}, found none")
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


def nli_entailment_pairs(rows: Sequence[tuple[str, str, str]]) -> list[Pair]:
    """(premise, hypothesis) of every entailment row (MNRL without hard negatives)."""
    return [(s1, s2) for s1, s2, label in rows if label == "entailment"]


def labeled_subset(examples: Sequence[T], size: int | None, seed: int, what: str) -> list[T]:
    """The first ``size`` examples of a permutation seeded by ``seed``, kept in file order: for one seed the
    subsets are nested (the 1,000-example subset is inside the 2,000 one); ``None`` keeps everything."""
    if size is None:
        return list(examples)
    if size < 1:
        raise ConfigError(f"--labeled-sizes {size}: a labeled-set size must be >= 1")
    if size > len(examples):
        raise ConfigError(f"--labeled-sizes {size}: {what} has only {len(examples):,} labeled examples")
    keep = np.sort(np.random.default_rng([seed, 0x1AB]).permutation(len(examples))[:size])
    return [examples[i] for i in keep]

