"""Which local files may carry an MTEB task's name, and the checks that they are the data they claim to be.

``mteb:<Task>`` promises MTEB's dataset (DESIGN.md, "Names are promises"). Where the data root holds the same
release MTEB packaged, the suite builds the task from it instead of the Hugging Face cache; before anything is
encoded the build is checked twice:

1. its statistics against those MTEB publishes for the task (``TaskMetadata.descriptive_stats``: pairs, unique
   pairs, unique texts per side, characters, text lengths, score range and mean), every field equal;
2. its content: :func:`content_sha256` of the built pairs (text and scores) against the hash pinned here
   (:attr:`LocalBuild.sha256`), so a build whose text differs in one character, with every count and length
   equal, is refused too.

A build that fails either is refused (:class:`~usebench.errors.ReleaseMismatchError`) with what differs.

What is verifiable from here and what is not. MTEB's own datasets (``mteb/sts12-sts`` ... on the Hugging Face hub,
pinned by a git revision) cannot be read here, and MTEB publishes no hash of their text, only the statistics
above. So the pinned hashes are those of the public releases the builds read, with the transform each reader
documents, and a build is *MTEB's* data only where every statistic MTEB publishes also equals it:

- STSBenchmark: the release's ``sts-test.csv`` (``sts/original/stsbenchmark``), sentences as written (git blob
  ``edac16bb`` of the SentEval tree in amao0o0/SynWMD@59042a9): every statistic equals MTEB's; ``mteb:STSBenchmark``.
- SICK-R: MTEB's SICK-R is all 9,927 pairs of SICK's train, trial and test files (``sick/``; blobs ``3df59563``,
  ``60daa162``, ``3a92546f`` of castorini/data, as the data root's SOURCES.md lists), sentences as written: every
  statistic equals MTEB's; ``mteb:SICK-R``.
- STS12-16: SentEval's tokenised, lower-cased files (``sts/senteval/STS1x-en-test``, byte for byte the SentEval
  tree of amao0o0/SynWMD@59042a9), the subsets SentEval lists, each sentence's whitespace runs joined by one space
  (:func:`usebench.tasks.sts.words`). These are **not** MTEB's text: pairs, unique texts and scores equal MTEB's, but MTEB's
  texts have 0.1-0.2% fewer characters (STS12: 402,118 in MTEB's statistics, 402,612 here; the spacing around
  punctuation of another tokenisation, which BERT's WordPiece ignores and other tokenisers need not). They are
  therefore served as ``mteb-evaluator:senteval-sts12`` ... ``senteval-sts16`` (MTEB's STS evaluator on SentEval's
  files, :data:`SENTEVAL_THROUGH_MTEB`), content-checked against SentEval's files, and ``mteb:STS12`` ... come
  from the Hugging Face cache only.

Not built locally: TwitterURLCorpus and TwitterSemEval2015. MTEB's versions hold 51,534 and 16,777 test pairs
(the Twitter URL corpus' train and test pairs; PIT-2015's), the USEB files 9,334 and 838 labelled test pairs.
Those run from the Hugging Face cache only; the USEB files through MTEB's evaluator are the tasks
``mteb-evaluator:useb-twitterurl`` and ``mteb-evaluator:useb-pit`` (:data:`USEB_THROUGH_MTEB`), whose names do
not claim MTEB's data.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from usebench.errors import ReleaseMismatchError
from usebench.tasks.base import parse_float, split_fields
from usebench.data.corpus import read_lines
from usebench.tasks.pairs import PairSet, make_pairset, require_pairs
from usebench.tasks.sts import SPECS, read_senteval_subset
from usebench.tasks.twitterpara import DIR as TP_DIR, PIT_DATA, PIT_LABEL, URL_FILE, read_pit, read_twitter_url

EXACT_FIELDS = ("num_samples", "unique_pairs", "text1.unique_texts", "text2.unique_texts", "score.min",
                "score.max", "score.avg")
CHAR_FIELDS = ("number_of_characters", "text1.total_text_length", "text2.total_text_length",
               "text1.min_text_length", "text1.max_text_length", "text2.min_text_length", "text2.max_text_length")


@dataclass(frozen=True)
class LocalBuild:
    """A task built from data-root files: which files, how to read them, and the content they must hold."""

    files: tuple[str, ...]  # relative to the data root
    read: Callable[[Path], PairSet]
    kind: str  # "sts": sentence1, sentence2, score | "pairs": sentence1, sentence2, labels
    note: str = ""
    sha256: str = ""  # content_sha256 of the genuine build ("": none pinned, so it can never carry an mteb: name)
    release: str = ""  # what the pinned content is (named in a refusal)
    dataset: str = "useb"  # the suite's dataset/group of an mteb-evaluator: task built from these files


def content_sha256(pairs: PairSet) -> str:
    """sha256 of a build's content, in file order: one UTF-8 line per pair, ``s1 TAB s2 TAB score LF``, the score
    as Python's ``repr`` of the float (``4.0``, ``3.8``), the binary label instead for a ``pairs`` build."""
    digest = hashlib.sha256()
    values = pairs.gold if pairs.label is None else pairs.label
    for s1, s2, value in zip(pairs.s1, pairs.s2, values):
        score = repr(float(value)) if pairs.label is None else str(int(value))
        digest.update(f"{s1}\t{s2}\t{score}\n".encode("utf-8"))
    return digest.hexdigest()


def check_content(task_name: str, build: LocalBuild, pairs: PairSet) -> None:
    """Refuse a build whose text or scores are not the pinned release's (any character, any score)."""
    found = content_sha256(pairs)
    if found != build.sha256:
        pinned = f"{build.sha256[:16]}..." if build.sha256 else "none pinned"
        release = build.release or "the release this task names"
        raise ReleaseMismatchError(
            f"{task_name} refused: the local build from {', '.join(build.files)} is not {release}: its content "
            f"sha256 (text and scores) is {found[:16]}..., the release's is {pinned}. The files were edited, "
            "re-tokenised or are another version; restore them (`bench data download sts`) and try again.")


def _senteval_sts(name: str, sha256: str) -> LocalBuild:
    spec = next(s for s in SPECS if s.name == name)
    files = tuple(f"{spec.directory}/STS.{kind}.{sub}.txt" for sub in spec.test for kind in ("input", "gs"))

    def read(root: Path) -> PairSet:
        parts = [read_senteval_subset(root / spec.directory, sub) for sub in spec.test]
        return PairSet(name, tuple(s for p in parts for s in p.s1), tuple(s for p in parts for s in p.s2),
                       np.concatenate([p.gold for p in parts]))

    return LocalBuild(files, read, "sts", f"SentEval's tokenised {name.upper()} files (not MTEB's text: spacing "
                      "around punctuation differs)", sha256, f"SentEval's tokenised {name.upper()} test files",
                      dataset="sts")


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


# content_sha256 of each build from the genuine files (provenance in the module docstring; recomputed from the real
# data root by tests/tasks/test_mteb_content.py).
CONTENT_SHA256 = {
    "STSBenchmark": "19cbb472f0bafd465825abfb5f1036b6f816e5dd53b37aa1f65d530f53b05a38",
    "SICK-R": "87258550a2cd86208e43a6dad217a0661378d15b594107fe8440e375a3d3fd96",
    "sts12": "b53c4cd866b05c7825c73ae366a9c54463c220d9a63066016c98d8826c6a233f",
    "sts13": "6585c25f276c22ef06e355217df559d35ea350b93b338ee6753d5bd5a51ffe65",
    "sts14": "84f68d57c5d58ca796e6f8c63bb09ee4fc0b42f77b2483430721873ebf0bb25b",
    "sts15": "8f80f9d31d105147d879c69c3e09fac40d0ee0df97351569082394f76b15a3c4",
    "sts16": "f76b567d41aebc45b47991c543efef91cb3029d47a89fdfe7e0115aeec6a27d1",
}

LOCAL_BUILDS: dict[str, LocalBuild] = {  # mteb:<Task> built from the data root: MTEB's data, checked twice
    "STSBenchmark": LocalBuild((STSB_TEST,), read_stsb_raw, "sts", "the release's sts-test.csv as written",
                               CONTENT_SHA256["STSBenchmark"], "the STS-benchmark release's sts-test.csv"),
    "SICK-R": LocalBuild(SICK_FILES, read_sick_all, "sts", "SICK train + trial + test (9,927 pairs)",
                         CONTENT_SHA256["SICK-R"], "SICK's train, trial and test release files"),
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
# SentEval's STS12-16 files scored by MTEB's STS evaluator: same pairs and scores as MTEB's STS1x, other text.
SENTEVAL_THROUGH_MTEB: dict[str, tuple[str, LocalBuild]] = {
    f"senteval-sts1{y}": (f"STS1{y}", _senteval_sts(f"sts1{y}", CONTENT_SHA256[f"sts1{y}"])) for y in "23456"}
EVALUATOR_BUILDS: dict[str, tuple[str, LocalBuild]] = {**USEB_THROUGH_MTEB, **SENTEVAL_THROUGH_MTEB}


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


def differences(expected: Mapping[str, Any], found: Mapping[str, Any]) -> list[str]:
    """Human-readable mismatches between MTEB's statistics and the build's (empty: every statistic is equal)."""
    want, have = _flat(expected), _flat(found)
    out = []
    for key in (*EXACT_FIELDS, *CHAR_FIELDS):
        if key not in want:
            continue
        a, b = float(want[key]), float(have.get(key, math.nan))
        if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9):
            out.append(f"{key} {_fmt(b)} here, {_fmt(a)} in MTEB's metadata")
    if "num_samples" not in want:
        out.append("MTEB publishes no pair count for this split, so a local build cannot be checked")
    return out


def _fmt(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:.6g}"


def check_build(task_name: str, split: str, metadata: Any, build: LocalBuild, pairs: PairSet) -> None:
    """Refuse a local build that is not MTEB's data (before anything is encoded): every statistic MTEB publishes
    must be equal, then the content must be the pinned release's (:func:`check_content`)."""
    stats = (metadata.descriptive_stats or {}).get(split)
    if not stats:
        raise ReleaseMismatchError(f"mteb:{task_name}: MTEB publishes no statistics for its {split!r} split, so "
                                   f"the local files {', '.join(build.files)} cannot be shown to be its data")
    found = sts_statistics(pairs.s1, pairs.s2, [float(g) for g in pairs.gold])
    diffs = differences(stats, found)
    if diffs:
        dataset = f"{metadata.dataset['path']}@{metadata.dataset.get('revision')}"
        raise ReleaseMismatchError(
            f"mteb:{task_name} ({split}) refused: the local build from {', '.join(build.files)} is not MTEB's "
            f"dataset ({dataset}): " + "; ".join(diffs[:4]) + (f" (and {len(diffs) - 4} more)" if len(diffs) > 4 else "")
            + ". An MTEB task name is only given to MTEB's data.")
    check_content(f"mteb:{task_name} ({split})", build, pairs)
