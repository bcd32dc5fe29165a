"""BM25 rescoring: one wrapper, ``bm25+<task>``, over any ranking task (re-ranking or retrieval).

Method (R. Wang 2022, RWTH master's thesis, Sec. 5.3.2, eq. 5.1): take BM25's top-k (k = 1000) for each query,
score each of them ``bm25(q, d) + alpha * cos(q, d)`` with the evaluated encoder, and re-rank. The thesis tries
alpha in {0, 1, 5, 10, 20, ..., 100, 120} and reports alpha = 20 as best; alpha = 0 is BM25 alone.

How it wraps a task: the wrapped task runs its own protocol unchanged, with a :class:`RescoreScorer` in place
of the encoder's scorer. For retrieval tasks its ``search`` returns BM25's top-k re-ranked by the combined score
(documents BM25 does not match at all, or past the top-k, follow in BM25 order); for re-ranking tasks
(AskUbuntu, SciDocs) ``rerank`` combines the two scores over the task's fixed candidate list, which plays the
part of BM25's top-k. BM25 results and cosines are computed once and cached, so the alpha grid is cheap.

Scores are combined per query, optionally normalised over that query's rescored candidates first: ``none``
(the thesis's raw sum), ``minmax`` (each score to [0, 1]) or ``zscore`` (zero mean, unit variance). Every
(normalisation, alpha) is reported in the result's subsets as ``<norm>/alpha=<a>`` (and ``dev/<norm>/...``);
the headline scores use ``selection_normalisation`` at the alpha with the best dev main metric where the task
has a dev split (ties: the smaller alpha), else ``default_alpha``; ``selected/<norm>`` records each choice.
``bm25-pyserini-a20+<task>`` is the thesis' own setting: Lucene BM25, alpha fixed at 20, no dev selection.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from usebench.eval.bm25 import BM25Scorer, make_bm25_scorer
from usebench.errors import BenchError
from usebench.registry import TASKS
from usebench.eval.scorer import DenseScorer, Scorer
from usebench.tasks.base import Task
from usebench.tasks.release import Count

Normalisation = Literal["none", "minmax", "zscore"]
THESIS_ALPHAS = (0.0, 1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0, 120.0)
RANKING_FAMILIES = ("rerank", "retrieval")


@dataclass(frozen=True)
class RescoreConfig:
    """Everything that defines a rescoring run (recorded in the task version)."""

    preset: str = "elasticsearch"  # the TSDAE paper's BM25 (the thesis used Pyserini: preset "anserini")
    top_k: int = 1000  # thesis: BM25 top-1000 rescored
    # the thesis grid, plus small values where normalised scores (both in ~[0, 1]) need them
    alphas: tuple[float, ...] = tuple(sorted({0.1, 0.25, 0.5, 2.0, *THESIS_ALPHAS}))
    default_alpha: float = 20.0  # thesis Table 5.8 (best on eProduct); used where the task has no dev split
    normalisations: tuple[Normalisation, ...] = ("none", "minmax", "zscore")
    selection_normalisation: Normalisation = "none"  # eq. 5.1 adds raw scores
    fixed_alpha: bool = False  # True: the headline is default_alpha even where a dev split could choose one
    prefix: str = ""  # the wrapper's task-name prefix ("": PREFIXES[preset])


def normalise(x: np.ndarray, how: Normalisation) -> np.ndarray:
    """Per-query score normalisation; a constant list maps to zeros under minmax and zscore."""
    if how == "none" or x.size == 0:
        return x
    if how == "minmax":
        span = x.max() - x.min()
        return (x - x.min()) / span if span > 0 else np.zeros_like(x)
    if how == "zscore":
        std = x.std()
        return (x - x.mean()) / std if std > 0 else np.zeros_like(x)
    raise BenchError(f"unknown normalisation {how!r} (known: none, minmax, zscore)")


def combine(bm25: np.ndarray, dense: np.ndarray, rescored: np.ndarray, alpha: float,
            how: Normalisation) -> np.ndarray:
    """Combined score of one query's list (in BM25 order). Items not ``rescored`` get scores below every
    rescored one that keep BM25's order and its ties (all unmatched documents tie), so tie-aware metrics see
    them exactly as they see BM25's list."""
    out = np.empty(len(bm25), np.float64)
    live = np.flatnonzero(rescored)
    out[live] = normalise(bm25[live], how) + alpha * normalise(dense[live], how)
    floor = out[live].min() if len(live) else 0.0
    rest = np.flatnonzero(~rescored)
    levels, rank = np.unique(-bm25[rest], return_inverse=True)  # rank 0 = highest BM25 among the rest
    out[rest] = floor - 1.0 - (rank + 1) / (len(levels) + 1)
    return out


def rank_list(combined: np.ndarray) -> np.ndarray:
    """Positions by combined score descending; ties keep list (BM25) order."""
    return np.argsort(-combined, kind="stable")


@dataclass
class _SearchCache:
    bm25: np.ndarray  # (nq, K) BM25 scores in BM25 order
    indices: np.ndarray  # (nq, K) corpus indices
    dense: np.ndarray  # (nq, K) cosines of the same documents
    rescored: np.ndarray  # (nq, K) bool: matched by BM25 and within its top_k


class RescoreScorer:
    """``norm(bm25) + alpha * norm(dense)`` over BM25's top-k, as a Scorer for ranking tasks."""

    def __init__(self, bm25: BM25Scorer | Scorer, dense: Scorer, top_k: int):
        self.bm25, self.dense, self.top_k = bm25, dense, top_k
        self.name = f"{bm25.name}+{dense.name}"
        self.alpha, self.normalisation = 0.0, "none"
        self._rerank: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._search: dict[tuple, _SearchCache] = {}

    def set(self, alpha: float, normalisation: Normalisation) -> None:
        self.alpha, self.normalisation = float(alpha), normalisation

    def prepare(self, texts: Sequence[str]) -> None:
        """Nothing: the wrapper prepares BM25 and the dense scorer itself."""

    def use_collection(self, name: str, texts: Sequence[str]) -> None:
        """Nothing: each wrapped split gets a BM25 scorer prepared on its own texts."""

    def pairs(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        raise BenchError("BM25 rescoring ranks candidates; pair tasks are not supported")

    def rerank(self, query: str, candidates: Sequence[str]) -> np.ndarray:
        key = (query, tuple(candidates))
        if key not in self._rerank:
            self._rerank[key] = (np.asarray(self.bm25.rerank(query, candidates), np.float64),
                                 np.asarray(self.dense.rerank(query, candidates), np.float64))
        bm25, dense = self._rerank[key]
        rescored = np.ones(len(bm25), bool)
        if len(bm25) > self.top_k:  # only BM25's top-k of a longer candidate list is rescored
            rescored[:] = False
            rescored[np.argsort(-bm25, kind="stable")[: self.top_k]] = True
        return combine(bm25, dense, rescored, self.alpha, self.normalisation)

    def search(self, queries: Sequence[str], corpus: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        cache = self._cached_search(queries, corpus, k)
        k = min(k, cache.indices.shape[1])
        scores = np.empty((len(queries), k), np.float64)  # float32 would merge close scores into ties
        indices = np.empty((len(queries), k), np.int64)
        for row in range(len(queries)):
            combined = combine(cache.bm25[row], cache.dense[row], cache.rescored[row], self.alpha,
                               self.normalisation)
            order = rank_list(combined)[:k]
            scores[row], indices[row] = combined[order], cache.indices[row, order]
        return scores, indices

    def _cached_search(self, queries: Sequence[str], corpus: Sequence[str], k: int) -> _SearchCache:
        depth = min(len(corpus), max(k, self.top_k))
        key = (len(queries), hash(tuple(queries)), len(corpus), hash(tuple(corpus)), depth)
        if key not in self._search:
            bm25, indices, matches = self.bm25.search_with_matches(queries, corpus, depth)
            position = np.arange(depth)[None, :]
            rescored = (position < matches[:, None]) & (position < self.top_k)
            dense = self._dense_scores(queries, corpus, indices)
            self._search[key] = _SearchCache(bm25.astype(np.float64), indices, dense, rescored)
        return self._search[key]

    def _dense_scores(self, queries: Sequence[str], corpus: Sequence[str], indices: np.ndarray) -> np.ndarray:
        """Cosine of each query with each of its BM25 documents -> (nq, K)."""
        if not isinstance(self.dense, DenseScorer):  # any Scorer: one rerank call per query
            return np.stack([np.asarray(self.dense.rerank(q, [corpus[j] for j in row]), np.float64)
                             for q, row in zip(queries, indices)]).reshape(indices.shape)
        qv, cv = self.dense.vectors(list(queries)), self.dense.vectors(list(corpus))
        out = np.empty(indices.shape, np.float64)
        for s in range(0, len(queries), 256):
            out[s : s + 256] = np.einsum("nkd,nd->nk", cv[indices[s : s + 256]], qv[s : s + 256])
        return out

    def describe(self) -> dict:
        return {"kind": "bm25-rescore", "bm25": self.bm25.describe(), "dense": self.dense.describe(),
                "alpha": self.alpha, "normalisation": self.normalisation, "top_k": self.top_k}


@dataclass(frozen=True, eq=False)
class RescoreData:
    """The wrapped task's data for the evaluated split, and for its dev split where alpha is chosen."""

    split: str
    main: Any
    dev: Any | None


@dataclass
class RescoreRun:
    """Metrics (and the wrapped task's subsets) for every (part, normalisation, alpha)."""

    metrics: dict[tuple[str, str, float], dict[str, float]] = field(default_factory=dict)
    subsets: dict[tuple[str, float], dict[str, dict[str, float]]] = field(default_factory=dict)


class BM25Rescore(Task):
    """``bm25+<task>``: the wrapped ranking task scored by BM25's top-k re-ranked with ``bm25 + alpha * cos``."""

    def __init__(self, inner: Task, config: RescoreConfig | None = None):
        if inner.family not in RANKING_FAMILIES:
            raise BenchError(f"bm25+ wraps ranking tasks; {inner.name!r} is a {inner.family!r} task")
        self.inner, self.config = inner, config or RescoreConfig()
        if self.config.default_alpha not in self.config.alphas:
            raise BenchError(f"default alpha {self.config.default_alpha} is not in the grid {self.config.alphas}")
        self.name = f"{self.config.prefix or PREFIXES[self.config.preset]}{inner.name}"
        self.group, self.family, self.dataset = inner.group, inner.family, inner.dataset
        self.extras = (*inner.extras, *(("pyserini",) if self.config.preset == "pyserini" else ()))
        self.main_metric, self.metric_names, self.splits = inner.main_metric, inner.metric_names, inner.splits
        c = self.config
        fixed = f",alpha={c.default_alpha:g}" if c.fixed_alpha else ""
        self.version = f"{inner.version}+rescore1({c.preset},top{c.top_k},{c.selection_normalisation}{fixed})"
        self.description = f"{inner.name} with BM25 ({c.preset}) top-{c.top_k} rescored by bm25 + alpha*cos"

    def _dev_split(self, split: str) -> str | None:
        return "dev" if "dev" in self.inner.splits and not self.config.fixed_alpha else None

    def files(self, split: str) -> list[str]:
        dev = self._dev_split(split)
        extra = self.inner.files(dev) if dev and dev != split else []
        return list(dict.fromkeys([*self.inner.files(split), *extra]))

    def train_files(self) -> list[str]:
        return self.inner.train_files()

    def train_corpus(self, data_root: str | Path, corpus_file: str | Path | None = None) -> list[str]:
        return self.inner.train_corpus(data_root, corpus_file)

    def load(self, split: str, data_root: str | Path) -> RescoreData:
        self.check_split(split)
        dev = self._dev_split(split)
        main = self.inner.load(split, data_root)
        dev_data = main if dev == split else self.inner.load(dev, data_root) if dev else None
        return RescoreData(split, main, dev_data)

    def release_counts(self, split: str, data: RescoreData) -> list[Count]:
        """The wrapped task's counts for the evaluated split, and for the dev split alpha is chosen on."""
        counts = list(self.inner.release_counts(split, data.main))
        dev = self._dev_split(split)
        if data.dev is not None and data.dev is not data.main and dev:
            counts += self.inner.release_counts(dev, data.dev)
        return counts

    def texts(self, data: RescoreData) -> list[str]:
        extra = self.inner.texts(data.dev) if data.dev is not None and data.dev is not data.main else []
        return list(dict.fromkeys([*self.inner.texts(data.main), *extra]))

    def score(self, data: RescoreData, scorer: Scorer) -> RescoreRun:
        if scorer.describe().get("kind") == "lexical":
            raise BenchError(f"{self.name} re-scores BM25 with an encoder; evaluate it with a dense --model")
        run = RescoreRun()
        parts = [("main", data.main)] + ([("dev", data.dev)] if data.dev is not None else [])
        for part, part_data in parts:
            if part == "dev" and data.dev is data.main:
                run.metrics.update({("dev", n, a): m for (p, n, a), m in run.metrics.items() if p == "main"})
                continue
            bm25 = make_bm25_scorer(self.config.preset)
            bm25.prepare(self.inner.texts(part_data))
            combo = RescoreScorer(bm25, scorer, self.config.top_k)
            for how in self.config.normalisations:
                for alpha in self.config.alphas:
                    combo.set(alpha, how)
                    raw = self.inner.score(part_data, combo)
                    run.metrics[(part, how, alpha)] = self.inner.metrics(part_data, raw)
                    if part == "main":
                        run.subsets[(how, alpha)] = self.inner.subsets(part_data, raw)
        return run

    def selected_alpha(self, run: RescoreRun, how: Normalisation) -> tuple[float, bool]:
        """(alpha, chosen on dev?) for normalisation ``how``: best dev main metric, ties to the smaller alpha."""
        dev = [(run.metrics[("dev", how, a)][self.main_metric], a) for a in self.config.alphas
               if ("dev", how, a) in run.metrics]
        if not dev:
            return self.config.default_alpha, False
        best = max(v for v, _ in dev)
        return min(a for v, a in dev if v == best), True

    def metrics(self, data: RescoreData, scores: RescoreRun) -> dict[str, float]:
        how = self.config.selection_normalisation
        alpha, _ = self.selected_alpha(scores, how)
        return dict(scores.metrics[("main", how, alpha)])

    def subsets(self, data: RescoreData, scores: RescoreRun) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for (part, how, alpha), values in scores.metrics.items():
            out[f"{'' if part == 'main' else 'dev/'}{how}/alpha={alpha:g}"] = dict(values)
        for how in self.config.normalisations:
            alpha, on_dev = self.selected_alpha(scores, how)
            out[f"selected/{how}"] = {"alpha": alpha, "chosen_on_dev": float(on_dev), "top_k": self.config.top_k,
                                      **scores.metrics[("main", how, alpha)]}
        alpha, _ = self.selected_alpha(scores, self.config.selection_normalisation)
        out.update(scores.subsets.get((self.config.selection_normalisation, alpha), {}))
        return out

    def n_queries(self, data: RescoreData) -> int:
        return self.inner.n_queries(data.main)


def rescore_wrapper(preset: str):
    """The builder of ``<prefix><task>`` for a ranking task (re-ranking or retrieval) with BM25 ``preset``;
    it returns None for the others (pairs, wrappers)."""

    def build(task: Task) -> BM25Rescore | None:
        return BM25Rescore(task, RescoreConfig(preset=preset)) if task.family in RANKING_FAMILIES else None

    return build


# The BM25 each wrapper rescores: bm25+ the TSDAE paper's (Elasticsearch), bm25-anserini+ our Pyserini-default
# emulation, bm25-pyserini+ Lucene itself (the thesis's BM25; needs the `pyserini` extra).
PREFIXES: dict[str, str] = {"elasticsearch": "bm25+", "anserini": "bm25-anserini+", "pyserini": "bm25-pyserini+"}
# Each exists for every ranking task, whenever that task is enrolled (resolved at lookup).
for _preset, _prefix in PREFIXES.items():
    TASKS.add_wrapper(_prefix, rescore_wrapper(_preset))
# The thesis' eq. 5.1 as it ran it: Lucene's BM25 (Pyserini, k1 0.9, b 0.4) top-1000 + 20 * cos, alpha fixed at 20
# (Table 5.8) rather than chosen on a dev split; every alpha of the grid is still in the subsets (the sweep).
THESIS_PREFIX = "bm25-pyserini-a20+"
TASKS.add_wrapper(THESIS_PREFIX, lambda task: BM25Rescore(task, RescoreConfig(
    preset="pyserini", fixed_alpha=True, prefix=THESIS_PREFIX)) if task.family in RANKING_FAMILIES else None)
