"""Which local files may carry an MTEB task's name, and the check that they are MTEB's data.

``mteb:<Task>`` promises MTEB's dataset (DESIGN.md, "Names are promises"). Where the data root holds the same
release MTEB packaged, the suite builds the task from it instead of the Hugging Face cache; before anything is
encoded, the build is compared with the statistics MTEB publishes for the task (``TaskMetadata.descriptive_stats``:
pairs, unique pairs, unique texts per side, characters, text lengths, score range and mean). A build that
differs is refused (:class:`~benchmark.errors.ReleaseMismatchError`) with the field, MTEB's value and ours.

The local builds (each reproduces MTEB's published all-MiniLM-L6-v2 scores, ``tests/tasks/test_mteb_published.py``):

- STS12-16: SentEval's tokenised, lower-cased files (``sts/senteval/STS1x-en-test``), the subsets SentEval lists.
  Pairs, unique pairs, unique texts and every score statistic equal MTEB's exactly; MTEB's texts have 0.1-0.2%
  fewer characters (another run of the same tokeniser: spacing around punctuation, which BERT's tokeniser
  ignores), so the character statistics of these five are compared within :data:`TOKENISED_TOLERANCE`.
- STSBenchmark: the release's ``sts-test.csv`` (``sts/original/stsbenchmark``), sentences as written: every
  statistic equals MTEB's.
- SICK-R: MTEB's SICK-R is all 9,927 pairs of SICK's train, trial and test files (``sick/``), sentences as
  written: every statistic equals MTEB's.

Not built locally: TwitterURLCorpus and TwitterSemEval2015. MTEB's versions hold 51,534 and 16,777 test pairs
(the Twitter URL corpus' train and test pairs; PIT-2015's), the USEB files 9,334 and 838 labelled test pairs.
Those run from the Hugging Face cache only; the USEB files through MTEB's evaluator are the tasks
``mteb-evaluator:useb-twitterurl`` and ``mteb-evaluator:useb-pit`` (:data:`USEB_THROUGH_MTEB`), whose names do
not claim MTEB's data.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.errors import ReleaseMismatchError
from tasks.base import parse_float, read_lines, split_fields
from tasks.pairs import PairSet, make_pairset, require_pairs
from tasks.sts import SPECS, read_senteval_subset
from tasks.twitterpara import DIR as TP_DIR, PIT_DATA, PIT_LABEL, URL_FILE, read_pit, read_twitter_url

# STS12-16 only (see the module docstring): character totals within 0.3%, shortest/longest text within 4 characters
# (measured: totals 0.10-0.19% apart, lengths at most 3 characters).
TOKENISED_TOLERANCE = 0.003
LENGTH_SLACK = 4
EXACT_FIELDS = ("num_samples", "unique_pairs", "text1.unique_texts", "text2.unique_texts", "score.min",
                "score.max", "score.avg")
CHAR_FIELDS = ("number_of_characters", "text1.total_text_length", "text2.total_text_length",
               "text1.min_text_length", "text1.max_text_length", "text2.min_text_length", "text2.max_text_length")


@dataclass(frozen=True)
class LocalBuild:
    """An MTEB task built from data-root files: which files, how to read them, how exactly they must match."""

    files: tuple[str, ...]  # relative to the data root
    read: Callable[[Path], PairSet]
    kind: str  # "sts": sentence1, sentence2, score | "pairs": sentence1, sentence2, labels
    tolerance: float = 0.0  # relative tolerance on CHAR_FIELDS (0: every statistic must be equal)
    note: str = ""


def _senteval_sts(name: str) -> LocalBuild:
    spec = next(s for s in SPECS if s.name == name)
    files = tuple(f"{spec.directory}/STS.{kind}.{sub}.txt" for sub in spec.test for kind in ("input", "gs"))

    def read(root: Path) -> PairSet:
        parts = [read_senteval_subset(root / spec.directory, sub) for sub in spec.test]
        return PairSet(name, tuple(s for p in parts for s in p.s1), tuple(s for p in parts for s in p.s2),
                       np.concatenate([p.gold for p in parts]))

    return LocalBuild(files, read, "sts", TOKENISED_TOLERANCE,
                      "SentEval's tokenised files; MTEB's texts differ in spacing around punctuation only")


STSB_TEST = "sts/original/stsbenchmark/sts-test.csv"
SICK_FILES = ("sick/SICK_train.txt", "sick/SICK_trial.txt", "sick/SICK_test_annotated.txt")


def read_stsb_raw(root: Path) -> PairSet:
    """STS-benchmark test as released: score in field 5, sentences 6 and 7 exactly as written."""
    path = root / STSB_TEST
    rows = []
    for lineno, line in enumerate(read_lines(path), 1):
        fields = split_fields(path, lineno, line, 7, 9, "(genre, file, year, id, score, s1, s2[, src1, src2])")
        rows.append((fields[5], fields[6], parse_float(path, lineno, fields[4], "gold score")))
    return require_pairs(make_pairset("sts-test", rows), path)


def read_sick_all(root: Path) -> PairSet:
    """SICK's train, trial and test pairs (MTEB's SICK-R), relatedness score, sentences exactly as written."""
    rows = []
    for rel in SICK_FILES:
        path = root / rel
        lines = read_lines(path)
        if not lines or not lines[0].startswith("pair_ID\t"):
            raise ReleaseMismatchError(f"{path}: expected the SICK header 'pair_ID\\tsentence_A\\t...'")
        for lineno, line in enumerate(lines[1:], 2):
            fields = split_fields(path, lineno, line, 5, 5, "(pair_ID, sentence_A, sentence_B, relatedness, entailment)")
            rows.append((fields[1], fields[2], parse_float(path, lineno, fields[3], "relatedness score")))
    return require_pairs(make_pairset("sick", rows), root / SICK_FILES[0])


LOCAL_BUILDS: dict[str, LocalBuild] = {
    **{f"STS1{y}": _senteval_sts(f"sts1{y}") for y in "23456"},
    "STSBenchmark": LocalBuild((STSB_TEST,), read_stsb_raw, "sts", note="the release's sts-test.csv as written"),
    "SICK-R": LocalBuild(SICK_FILES, read_sick_all, "sts", note="SICK train + trial + test (9,927 pairs)"),
}

# USEB's files scored by MTEB's evaluator: (MTEB task whose evaluator runs, files, reader). Not MTEB's data.
USEB_THROUGH_MTEB: dict[str, tuple[str, LocalBuild]] = {
    "useb-twitterurl": ("TwitterURLCorpus", LocalBuild(
        (f"{TP_DIR}/{URL_FILE}",), lambda root: read_twitter_url(root / TP_DIR / URL_FILE), "pairs",
        note="USEB's Twitter URL test pairs (n > 3 of 6 positive, n = 3 dropped); MTEB's TwitterURLCorpus is "
             "51,534 train + test pairs")),
    "useb-pit": ("TwitterSemEval2015", LocalBuild(
        (f"{TP_DIR}/{PIT_DATA}", f"{TP_DIR}/{PIT_LABEL}"),
        lambda root: read_pit(root / TP_DIR / PIT_DATA, root / TP_DIR / PIT_LABEL), "pairs",
        note="USEB's PIT-2015 test pairs (expert 4-5 positive, 3 dropped); MTEB's TwitterSemEval2015 has 16,777")),
}


# --- the statistics MTEB publishes ---------------------------------------------------------------------------

def _text_stats(texts: Sequence[str]) -> dict[str, int]:
    lengths = [len(t) for t in texts]
    return {"total_text_length": sum(lengths), "min_text_length": min(lengths), "max_text_length": max(lengths),
            "unique_texts": len(set(texts))}


def sts_statistics(s1: Sequence[str], s2: Sequence[str], scores: Sequence[float]) -> dict[str, Any]:
    """The fields of MTEB's STS descriptive statistics, computed as MTEB computes them (characters = len)."""
    t1, t2 = _text_stats(s1), _text_stats(s2)
    return {"num_samples": len(s1), "number_of_characters": t1["total_text_length"] + t2["total_text_length"],
            "unique_pairs": len(set(zip(s1, s2))), "text1_statistics": t1, "text2_statistics": t2,
            "label_statistics": {"min_score": float(min(scores)), "avg_score": float(sum(scores) / len(scores)),
                                 "max_score": float(max(scores))}}


def _flat(stats: Mapping[str, Any]) -> dict[str, float]:
    """MTEB's nested statistics -> the flat names of EXACT_FIELDS / CHAR_FIELDS (missing ones left out)."""
    out: dict[str, float] = {}
    for key in ("num_samples", "number_of_characters", "unique_pairs"):
        if stats.get(key) is not None:
            out[key] = stats[key]
    for side in ("text1", "text2"):
        for key, value in (stats.get(f"{side}_statistics") or {}).items():
            out[f"{side}.{key}"] = value
    labels = stats.get("label_statistics") or {}
    for key, name in (("min_score", "score.min"), ("max_score", "score.max"), ("avg_score", "score.avg")):
        if labels.get(key) is not None:
            out[name] = labels[key]
    return out


def differences(expected: Mapping[str, Any], found: Mapping[str, Any], tolerance: float) -> list[str]:
    """Human-readable mismatches between MTEB's statistics and the build's (empty: the build is MTEB's data)."""
    want, have = _flat(expected), _flat(found)
    out = []
    for key in (*EXACT_FIELDS, *CHAR_FIELDS):
        if key not in want:
            continue
        a, b = float(want[key]), float(have.get(key, math.nan))
        if key in EXACT_FIELDS:
            ok = math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
        else:  # characters: equal, or within the build's declared tolerance
            ok = abs(a - b) <= (max(tolerance * a, LENGTH_SLACK) if tolerance else 0.0)
        if not ok:
            out.append(f"{key} {_fmt(b)} here, {_fmt(a)} in MTEB's metadata")
    if "num_samples" not in want:
        out.append("MTEB publishes no pair count for this split, so a local build cannot be checked")
    return out


def _fmt(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:.6g}"


def check_build(task_name: str, split: str, metadata: Any, build: LocalBuild, pairs: PairSet) -> None:
    """Refuse a local build that is not MTEB's data (before anything is encoded)."""
    stats = (metadata.descriptive_stats or {}).get(split)
    if not stats:
        raise ReleaseMismatchError(f"mteb:{task_name}: MTEB publishes no statistics for its {split!r} split, so "
                                   f"the local files {', '.join(build.files)} cannot be shown to be its data")
    found = sts_statistics(pairs.s1, pairs.s2, [float(g) for g in pairs.gold])
    diffs = differences(stats, found, build.tolerance)
    if diffs:
        dataset = f"{metadata.dataset['path']}@{metadata.dataset.get('revision')}"
        raise ReleaseMismatchError(
            f"mteb:{task_name} ({split}) refused: the local build from {', '.join(build.files)} is not MTEB's "
            f"dataset ({dataset}): " + "; ".join(diffs[:4]) + (f" (and {len(diffs) - 4} more)" if len(diffs) > 4 else "")
            + ". An MTEB task name is only given to MTEB's data.")
