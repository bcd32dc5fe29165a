"""Where the supervised stages' labeled examples come from: ``train_data`` names a source, resolved here.

Sources (paths relative to the data root; readers in :mod:`usebench.data.labeled`):

- ``target``: the unit's target task's own labeled training set: the USEB training release
  (``useb/data-train/<task>/supervised/``; TwitterPara's folder is ``twitter``) for AskUbuntu, CQADupStack,
  SciDocs and TwitterPara, STS-benchmark train for ``stsb``;
- ``allnli``: ``nli/AllNLI.tsv`` (sentence-transformers' SNLI + MultiNLI file);
- ``stsb``: ``sts/original/stsbenchmark/sts-train.csv`` (scores / 5);
- ``twitter-url``: the Twitter URL training pairs, ``useb/extra/twitter_url_train_tok/{a,b}.toks`` + ``sim.txt``;
- a folder holding one of these layouts: ``train.org`` + ``train.para`` (pairs), ``train.s1`` + ``train.s2`` +
  ``train.lbl`` (graded), or ``a.toks`` + ``b.toks`` + ``sim.txt`` (graded, binary).

Pair methods (MNRL) get (anchor, positive[, negative]) tuples; graded methods (cosine MSE) get (s1, s2, label).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from usebench.data import labeled as L
from usebench.data.memo import remember, remember_file
from usebench.errors import ConfigError, MissingDataError
from usebench.train.plugin import TrainingData

Kind = Literal["pairs", "graded"]
SOURCES = ("target", "allnli", "stsb", "twitter-url")
USEB_TRAIN_DIR = {"askubuntu": "askubuntu", "cqadupstack": "cqadupstack", "scidocs": "scidocs",
                  "twitterpara": "twitter"}
ALLNLI = "nli/AllNLI.tsv"
STSB_TRAIN = "sts/original/stsbenchmark/sts-train.csv"
TWITTER_URL = "useb/extra/twitter_url_train_tok"
FETCH = {"useb": "bench data download useb", "allnli": "bench data download nli",
         "stsb": "bench data download sts", "twitter-url": "bench data download twitter-url"}


def fingerprint(examples: Sequence[Any]) -> str:
    """sha256 of examples in order, one JSON line each (``json.dumps(example, ensure_ascii=False)``)."""
    lines = [_json_line(ex) for ex in examples]
    if not lines:
        return hashlib.sha256().hexdigest()
    return hashlib.sha256(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")).hexdigest()


def _json_line(example: Any) -> str:
    """``json.dumps(example, ensure_ascii=False)``; a pair or triplet of strings (every NLI row, pair and triplet) is
    written with json's own string encoder directly: the same text at a third of the per-call cost."""
    kind = type(example)
    if kind is tuple or kind is list:
        if len(example) == 3:
            a, b, c = example
            if type(a) is str and type(b) is str and type(c) is str:
                return f"[{_encode_string(a)}, {_encode_string(b)}, {_encode_string(c)}]"
        elif len(example) == 2:
            a, b = example
            if type(a) is str and type(b) is str:
                return f"[{_encode_string(a)}, {_encode_string(b)}]"
    return json.dumps(example, ensure_ascii=False)


_encode_string = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) writes a str with


def _need(path: Path, what: str, fetch: str) -> Path:
    if not path.is_file():
        raise MissingDataError(what, path, fetch)
    return path


def _useb_dir(task: str, root: Path) -> Path:
    return root / "useb" / "data-train" / USEB_TRAIN_DIR[task] / "supervised"


def _folder_layout(folder: Path, kind: Kind) -> tuple[str, list[Any], tuple[str, ...]]:
    """Examples of a folder in one of the release layouts (see the module docstring)."""
    org, para = folder / "train.org", folder / "train.para"
    graded = [(folder / "train.s1", folder / "train.s2", folder / "train.lbl"),
              (folder / "a.toks", folder / "b.toks", folder / "sim.txt")]
    if kind == "pairs" and org.is_file() and para.is_file():
        return str(folder), L.read_aligned_pairs(org, para), (str(org), str(para))
    for s1, s2, lbl in graded:
        if s1.is_file() and s2.is_file() and lbl.is_file():
            rows = L.read_twitter_url_train(folder) if s1.name == "a.toks" else L.read_graded_files(s1, s2, lbl)
            files = (str(s1), str(s2), str(lbl))
            if kind == "graded":
                return str(folder), rows, files
            return str(folder), [(a, b) for a, b, y in rows if y >= 0.5], files  # positives as pairs
    want = "train.org + train.para, " if kind == "pairs" else ""
    raise MissingDataError(f"labeled training files ({want}train.s1 + train.s2 + train.lbl, or a.toks + b.toks + "
                           f"sim.txt)", folder, "bench data download useb")


def _target(task: str | None, kind: Kind, root: Path) -> tuple[str, list[Any], tuple[str, ...]]:
    if task is None:
        raise ConfigError("train_data=target needs a target task (the run trains on --corpus files); name a "
                          f"source instead: --set train_data=<{'|'.join(SOURCES[1:])}|FOLDER>")
    if task == "stsb":
        if kind == "pairs":
            raise ConfigError("stsb's labeled data are graded pairs: train it with sbert-cosine, not sbert-mnrl")
        return "stsb:train", _stsb(root), (str(root / STSB_TRAIN),)
    if task not in USEB_TRAIN_DIR:
        raise ConfigError(f"task {task!r} has no labeled training set here (tasks with one: "
                          f"{', '.join([*USEB_TRAIN_DIR, 'stsb'])}); set train_data to a source or folder")
    folder = _useb_dir(task, root)
    if kind == "graded" and task != "twitterpara":
        raise ConfigError(f"{task}'s labeled data are relevant pairs without grades: train it with sbert-mnrl")
    if kind == "pairs":
        _need(folder / "train.org", f"{task} supervised training pairs", FETCH["useb"])
    else:
        _need(folder / "train.s1", f"{task} graded training pairs", FETCH["useb"])
    _, rows, files = _folder_layout(folder, kind)
    return f"{task}:supervised", rows, files


def _stsb(root: Path) -> list[Any]:
    return L.read_stsb_train(_need(root / STSB_TRAIN, "STS-benchmark train", FETCH["stsb"]))


@dataclass(frozen=True)
class Labeled:
    """Loaded examples; ``sha256`` identifies the source data (for NLI the rows before the seeded sampling of
    triplets), so that the seed repeats of one experiment share it."""

    label: str
    examples: list[Any]
    files: tuple[str, ...]
    sha256: str


def load_labeled(source: str, task: str | None, data_root: Path, kind: Kind, *, hard_negatives: bool = False,
                 seed: int = 0) -> Labeled:
    """The examples of ``source`` for a method of ``kind``; NLI triplets are drawn with ``seed``. Loaded once per
    planning session and draw (:mod:`usebench.data.memo`): the examples are shared, never to be changed."""
    root = Path(data_root)
    if source == "allnli":
        if kind == "graded":
            raise ConfigError("train_data=allnli has entailment labels, not similarity grades: use sbert-mnrl")
        path = _need(root / ALLNLI, "AllNLI (SNLI + MultiNLI)", FETCH["allnli"])
        tag = "triplets" if hard_negatives else "entailment-pairs"
        draw = seed if hard_negatives else None  # only the triplets' partners are drawn
        return remember_file("allnli-examples", path, lambda: _allnli(path, hard_negatives, seed), tag, draw)
    return remember(("labeled", source, task, str(root.resolve()), kind), lambda: _load_deterministic(
        source, task, root, kind))


def labeled_training_data(source: str, task: str | None, data_root: Path, kind: Kind, labeled_size: int | None,
                          seed: int, *, hard_negatives: bool = False) -> TrainingData:
    """A supervised stage's training data: the examples of ``source``, cut to ``labeled_size`` (seeded by ``seed``,
    nested across sizes), with the label and hash a run records."""
    data = load_labeled(source, task, data_root, kind, hard_negatives=hard_negatives, seed=seed)
    examples = L.labeled_subset(data.examples, labeled_size, seed, f"the {data.label} training set")
    label = data.label if labeled_size is None else f"{data.label}[{labeled_size}]"
    # The source's hash plus the size: the seeds of one experiment share it (the subset is a function of it
    # and of the seed, which the run id holds).
    sha = data.sha256 if labeled_size is None else f"{data.sha256}:{labeled_size}"
    return TrainingData(label=label, examples=examples, sha256=sha, files=data.files)


def _allnli(path: Path, hard_negatives: bool, seed: int) -> Labeled:
    rows = L.read_allnli(path)
    examples = L.nli_triplets(rows, np.random.default_rng([seed, 0x4E4C49])) if hard_negatives \
        else L.nli_entailment_pairs(rows)
    return Labeled("allnli", examples, (str(path),), _allnli_sha(path, hard_negatives))


def _allnli_sha(path: Path, hard_negatives: bool) -> str:
    """The rows' fingerprint, tagged with what is drawn from them: the same for every seed."""
    tag = "triplets" if hard_negatives else "entailment-pairs"
    return remember_file("allnli-sha", path, lambda: fingerprint([[tag], *L.read_allnli(path)]), tag)


def _load_deterministic(source: str, task: str | None, root: Path, kind: Kind) -> Labeled:
    label, examples, files = _deterministic(source, task, root, kind)
    return Labeled(label, examples, files, fingerprint(examples))


@dataclass(frozen=True)
class Census:
    """What a source's examples are for every seed, known without drawing them (planning, issue 37)."""

    label: str
    count: int  # examples, whatever the seed
    files: tuple[str, ...]
    sha256: str  # as Labeled.sha256
    clean: bool  # every text any draw can hold is non-blank (False: the draws must be checked one by one)


def census_labeled(source: str, data_root: Path, kind: Kind, *, hard_negatives: bool = False) -> Census | None:
    """The :class:`Census` of a source whose examples are drawn per seed (AllNLI's triplets), None for the others
    (their examples do not depend on the seed: load them once)."""
    if source != "allnli" or not hard_negatives or kind != "pairs":
        return None
    path = _need(Path(data_root) / ALLNLI, "AllNLI (SNLI + MultiNLI)", FETCH["allnli"])
    count, clean = remember_file("allnli-census", path, lambda: L.nli_triplet_census(L.read_allnli(path)))
    return Census("allnli", count, (str(path),), _allnli_sha(path, True), clean)


def _deterministic(source: str, task: str | None, root: Path, kind: Kind) -> tuple[str, list[Any], tuple[str, ...]]:
    if source == "target":
        return _target(task, kind, root)
    if source == "stsb":
        if kind == "pairs":
            raise ConfigError("train_data=stsb holds graded pairs: use sbert-cosine")
        return "stsb:train", _stsb(root), (str(root / STSB_TRAIN),)
    if source == "twitter-url":
        folder = root / TWITTER_URL
        _need(folder / "a.toks", "Twitter URL training pairs", FETCH["twitter-url"])
        _, rows, files = _folder_layout(folder, kind)
        return "twitter-url", rows, files
    folder = Path(source).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"train_data={source!r} is neither a source ({', '.join(SOURCES)}) nor a folder")
    return _folder_layout(folder, kind)
