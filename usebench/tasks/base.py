"""The task adapter contract and the helpers every adapter shares.

A task is ``load -> texts -> score -> metrics``. ``score`` receives a :class:`~usebench.eval.scorer.Scorer`
(cosine over embeddings, or BM25), never a model. Protocol logic shared by a family of tasks (re-ranking,
retrieval, sentence pairs) lives in ``usebench/tasks/rerank.py`` (re-ranking and retrieval helpers; BEIR retrieval in
``usebench/tasks/beir.py``) and ``usebench/tasks/pairs.py``.
"""
from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar, Literal, Sequence

from usebench.data.corpus import read_corpus
from usebench.errors import BenchError, BenchValueError, DataFormatError, MissingDataError
from usebench.eval.items import ItemTable, Outcomes
from usebench.eval.scorer import Scorer
from usebench.eval.subsample import Limit
from usebench.tasks.release import Count, check_release

Family = Literal["rerank", "retrieval", "pairs", "classification"]  # classification: MTEB tasks only


class Task(ABC):
    """Base class of task adapters. Subclasses set the class attributes and implement the four steps."""

    name: ClassVar[str]
    group: ClassVar[str]  # "useb", "sts", "beir"
    family: ClassVar[Family]
    version: ClassVar[str] = "1"  # bump when the protocol or the data changes meaning
    main_metric: ClassVar[str]
    metric_names: ClassVar[tuple[str, ...]]
    splits: ClassVar[tuple[str, ...]] = ("test",)
    dataset: ClassVar[str]  # the `bench data download <dataset>` target that fetches this task's files
    description: ClassVar[str] = ""
    extras: ClassVar[tuple[str, ...]] = ()  # optional extras the task needs (pyproject), checked when a run is planned
    # What `--limit N` subsamples, N of each subset ("pairs", "queries"); None: the task offers no quick evaluation
    limit_unit: ClassVar[str | None] = None

    # --- files -------------------------------------------------------------------------------------------
    @abstractmethod
    def files(self, split: str) -> list[str]:
        """Paths, relative to the data root, that ``load(split)`` reads."""

    def train_files(self) -> list[str]:
        """Paths, relative to the data root, of the unlabeled in-domain training corpus."""
        return [f"useb/data-train/{self.name}/unsupervised/train.txt"]

    def check_split(self, split: str) -> None:
        if split not in self.splits:
            raise BenchError(f"task {self.name!r} has no {split!r} split (it has: {', '.join(self.splits)})")

    def require(self, data_root: str | Path, split: str) -> list[Path]:
        """The split's files, or :class:`MissingDataError` naming the first missing one and its fetch command."""
        self.check_split(split)
        paths = [Path(data_root) / f for f in self.files(split)]
        for p in paths:
            if not p.is_file():
                raise MissingDataError(f"{self.name} ({split}) file", p, f"bench data download {self.dataset}")
            if p.stat().st_size == 0:
                raise DataFormatError(p, None, "a non-empty data file", "an empty file")
        return paths

    def data_sha256(self, data_root: str | Path, split: str) -> str:
        """One hash over the split's files, so results on different data are never averaged together."""
        return self.data_digests(data_root, split)[0]

    def data_digests(self, data_root: str | Path, split: str) -> tuple[str, dict[str, str]]:
        """(:meth:`data_sha256`, sha256 of each file keyed by its path under the data root), in one read."""
        combined, per_file = hashlib.sha256(), {}
        for rel, p in zip(self.files(split), self.require(data_root, split)):
            combined.update(p.name.encode())
            one = hashlib.sha256()
            with p.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    combined.update(chunk)
                    one.update(chunk)
            per_file[rel] = one.hexdigest()
        return combined.hexdigest(), per_file

    # --- the release ---------------------------------------------------------------------------------------
    def release_counts(self, split: str, data: Any) -> list[Count]:
        """The counts the release publishes for the split's files, with what ``data`` holds (none by default)."""
        return []

    def check_release(self, split: str, data: Any, data_root: str | Path, file_sha256: dict[str, str],
                      allow_partial: bool = False) -> dict[str, Any]:
        """Refuse data that is not the release (see :mod:`usebench.tasks.release`); the result's ``release`` block."""
        return check_release(self, self.release_counts(split, data), file_sha256, data_root, allow_partial)

    # --- protocol ----------------------------------------------------------------------------------------
    @abstractmethod
    def load(self, split: str, data_root: str | Path) -> Any:
        """Parse the split's files (see :meth:`files`) into the task's data object."""

    @abstractmethod
    def texts(self, data: Any) -> list[str]:
        """Every text that ``score`` will look up (the engine encodes the unique ones once)."""

    @abstractmethod
    def score(self, data: Any, scorer: Scorer) -> Any:
        """Raw scores (similarities, rankings) of ``data`` under ``scorer``."""

    @abstractmethod
    def metrics(self, data: Any, scores: Any) -> dict[str, float]:
        """The task's metrics (0-1, unrounded) from the raw scores; includes ``main_metric``."""

    @abstractmethod
    def n_queries(self, data: Any) -> int:
        """How many queries (or pairs) the metrics are computed over."""

    def limited(self, data: Any, limit: Limit) -> Any:
        """``data`` cut to the seeded subsample ``limit`` (:mod:`usebench.eval.subsample`): at most ``limit.n`` items
        of each subset, everything else of the protocol (candidates, retrieval pools) kept whole."""
        raise BenchValueError(f"task {self.name!r} offers no --limit (a quick evaluation is offered for the pair, "
                              "re-ranking and retrieval tasks whose items the suite stores)")

    def n_items(self, data: Any) -> int:
        """How many items the per-item outcomes hold (every pair of a pair task, even those AP leaves out; every
        evaluated query of a ranking task): what a --limit subsample is counted against."""
        return self.n_queries(data)

    def subsets(self, data: Any, scores: Any) -> dict[str, dict[str, float]]:
        """Per-subset metrics (per forum, per STS subset...), if the task has subsets."""
        return {}

    def items(self, data: Any, scores: Any) -> ItemTable | None:
        """The per-item outcomes the metrics are computed from (:mod:`usebench.eval.items`); None: none stored."""
        return None

    def outcomes(self, data: Any, scores: Any) -> Outcomes:
        """Metrics, subsets and per-item outcomes of one scoring (what an evaluation stores). A task whose metrics
        are means of per-query values overrides it to compute those values once."""
        return Outcomes(self.metrics(data, scores), self.subsets(data, scores), self.items(data, scores))

    # --- training corpus ---------------------------------------------------------------------------------
    def train_corpus(self, data_root: str | Path, corpus_file: str | Path | None = None, *,
                     include_eval_queries: bool = False) -> list[str]:
        """The unlabeled in-domain sentences a method trains on (``corpus_file`` overrides). A task whose corpus
        holds its evaluation queries (BEIR retrieval) leaves them out unless ``include_eval_queries``; the USEB
        tasks read the release's own training files, which this flag does not change."""
        if corpus_file is not None:
            return read_corpus(corpus_file)
        for rel in self.train_files():
            path = Path(data_root) / rel
            if path.is_file():
                return read_corpus(path)
        raise MissingDataError(
            f"{self.name} training corpus", Path(data_root) / self.train_files()[0],
            f"bench data download {self.dataset}` or pass `--corpus FILE",
        )


def split_fields(path: Path, lineno: int, line: str, n_min: int, n_max: int | None = None, what: str = "") -> list[str]:
    """Tab-separated fields of one line, with a clear error when their count is wrong."""
    fields = line.split("\t")
    if len(fields) < n_min or (n_max is not None and len(fields) > n_max):
        want = f"{n_min}" if n_max == n_min else f"{n_min}-{n_max or 'more'}"
        raise DataFormatError(path, lineno, f"{want} tab-separated fields {what}".rstrip(), line)
    return fields


def parse_float(path: Path, lineno: int, value: str, what: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise DataFormatError(path, lineno, f"a number ({what})", value) from None


def unique(texts: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(texts))
