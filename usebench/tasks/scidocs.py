"""SciDocs citation-prediction and user-activity re-ranking (USEB task; TSDAE paper, Sec. 4).

Data: Cohan et al. (2020), allenai/scidocs, as packaged in USEB's ``data-eval.zip``:
``useb/data-eval/scidocs/data.json`` = ``{"corpus": {paper id: {"title": str|null, ...}},
"valid"|"test": {"cite"|"cocite"|"coread"|"coview": {query id: {candidate id: relevance}}}}`` (dev =
``"valid"``). The per-subtask ``*/val.qrel`` and ``*/test.qrel`` files of the package are not read (the
reference reads only data.json).

Protocol (UKPLab/useb ``unsupse_benchmark/evaluators/scidocs.py``, cosine variant, reproduced exactly):
- a query whose id is not in the corpus, or whose title is null or empty, is skipped; its candidates are
  those of its qrels (in qrels order) that have a non-empty title; titles are stripped before scoring;
- per subtask, pytrec_eval ``map`` and ``ndcg`` (full depth) of the cosine run against the subtask's *full*
  qrels (so relevant candidates without a title count as missed); a query left with no candidate stays in
  the run and scores 0; ties are broken by pytrec_eval (trec_eval: document id, descending);
- each subtask's value is the mean over its evaluated queries; ``map_avg`` (main) and ``ndcg_avg`` are the
  means of the four subtasks.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from usebench.errors import DataFormatError
from usebench.eval.items import ItemTable, Outcomes, mean_recipes, query_table
from usebench.eval.metrics import mean_measure, trec_eval
from usebench.registry import TASKS
from usebench.eval.scorer import Scorer
from usebench.eval.subsample import Limit, picked
from usebench.tasks.base import Task
from usebench.tasks.rerank import (
    RerankQuery,
    expect_type,
    read_json,
    rerank_scores,
    rerank_texts,
)

ROOT = "useb/data-eval/scidocs"
SPLIT_KEYS = {"dev": "valid", "test": "test"}  # our split name -> key in data.json
SUBTASKS = ("cite", "cocite", "coread", "coview")

Qrels = dict[str, dict[str, int]]


@dataclass(frozen=True)
class SciDocsData:
    """Per subtask: the evaluated queries (with their titled candidates) and the full qrels."""

    split: str
    queries: dict[str, tuple[RerankQuery, ...]]
    qrels: dict[str, Qrels]


def read_titles(path: Path, data: dict[str, Any]) -> dict[str, str | None]:
    """paper id -> title (null kept as None) from the ``corpus`` object."""
    corpus = expect_type(path, "['corpus']", data.get("corpus"), dict, "an object {paper id: {'title': ...}}")
    titles: dict[str, str | None] = {}
    for pid, paper in corpus.items():
        where = f"['corpus'][{pid!r}]"
        expect_type(path, where, paper, dict, "an object with a 'title'")
        if "title" not in paper:
            raise DataFormatError(path, None, f"a 'title' key at {where}", f"keys {sorted(paper)}")
        titles[pid] = expect_type(path, where + "['title']", paper["title"], (str, type(None)), "a string or null")
    return titles


def read_qrels(path: Path, data: dict[str, Any], key: str) -> dict[str, Qrels]:
    """``{subtask: {query id: {candidate id: relevance}}}`` of one split key, the four subtasks exactly."""
    split = expect_type(path, f"[{key!r}]", data.get(key), dict, f"an object {{subtask: qrels}} ({key!r} split)")
    if set(split) != set(SUBTASKS):
        raise DataFormatError(path, None, f"the subtasks {', '.join(SUBTASKS)} under {key!r}", f"{sorted(split)}")
    for subtask, qrels in split.items():
        expect_type(path, f"[{key!r}][{subtask!r}]", qrels, dict, "an object {query id: {candidate id: relevance}}")
        for qid, docs in qrels.items():
            where = f"[{key!r}][{subtask!r}][{qid!r}]"
            for rel in expect_type(path, where, docs, dict, "an object {candidate id: relevance}").values():
                expect_type(path, where, rel, int, "integer relevance labels")
    return split


def build_queries(titles: dict[str, str | None], qrels: Qrels) -> tuple[RerankQuery, ...]:
    """The queries with a non-empty title and, for each, its candidates that have a non-empty title."""
    queries = []
    for qid, docs in qrels.items():
        title = titles.get(qid)
        if not title:  # missing, null or "" (the reference tests the raw title, then strips it)
            continue
        dids = tuple(d for d in docs if titles.get(d))
        relevant = frozenset(d for d, rel in docs.items() if rel > 0)
        queries.append(RerankQuery(qid, title.strip(), dids, tuple(titles[d].strip() for d in dids), relevant))
    return tuple(queries)


def subtask_per_query(queries: tuple[RerankQuery, ...], qrels: Qrels, scores: list[np.ndarray]
                      ) -> dict[str, dict[str, float]]:
    """pytrec_eval's MAP and nDCG of each query of one subtask (``{query id: {"map", "ndcg"}}``)."""
    run = {q.qid: {d: float(s) for d, s in zip(q.candidate_ids, row, strict=True)}
           for q, row in zip(queries, scores, strict=True)}
    return trec_eval(qrels, run, ("map", "ndcg"))


def subtask_metrics(queries: tuple[RerankQuery, ...], qrels: Qrels, scores: list[np.ndarray]) -> dict[str, float]:
    """pytrec_eval MAP and nDCG of one subtask, means over its evaluated queries."""
    return _means(subtask_per_query(queries, qrels, scores))


def _means(per_query: dict[str, dict[str, float]]) -> dict[str, float]:
    return {"map": mean_measure(per_query, "map"), "ndcg": mean_measure(per_query, "ndcg")}


class SciDocs(Task):
    """SciDocs: re-rank each query's candidates by title cosine; trec MAP averaged over four subtasks."""

    name = "scidocs"
    group = "useb"
    family = "rerank"
    limit_unit = "queries"
    main_metric = "map_avg"
    metric_names = tuple(f"{m}_{s}" for m in ("map", "ndcg") for s in (*SUBTASKS, "avg"))
    splits = ("dev", "test")
    dataset = "useb"
    description = "SciDocs cite/co-cite/co-read/co-view: re-rank candidates by title (MAP, mean of 4)"

    def files(self, split: str) -> list[str]:
        return [f"{ROOT}/data.json"]

    def load(self, split: str, data_root: str | Path) -> SciDocsData:
        (path,) = self.require(data_root, split)
        data = expect_type(path, "the top level", read_json(path), dict, "an object {'corpus', 'valid', 'test'}")
        titles = read_titles(path, data)
        qrels = read_qrels(path, data, SPLIT_KEYS[split])
        queries = {s: build_queries(titles, qrels[s]) for s in SUBTASKS}
        for subtask, evaluated in queries.items():
            if not evaluated:
                raise DataFormatError(path, None, f"at least one {subtask!r} query with a title in the corpus")
        return SciDocsData(split, queries, {s: qrels[s] for s in SUBTASKS})

    def limited(self, data: SciDocsData, limit: Limit) -> SciDocsData:
        """At most ``limit.n`` queries of each subtask, each with all its candidates (the qrels stay whole: a
        query's values are those of the full evaluation)."""
        return replace(data, queries={s: picked(q, limit.pick(self.name, s, len(q))) for s, q in data.queries.items()})

    def texts(self, data: SciDocsData) -> list[str]:
        return rerank_texts([q for s in SUBTASKS for q in data.queries[s]])

    def score(self, data: SciDocsData, scorer: Scorer) -> dict[str, list[np.ndarray]]:
        return {s: rerank_scores(data.queries[s], scorer) for s in SUBTASKS}

    def subsets(self, data: SciDocsData, scores: dict[str, list[np.ndarray]]) -> dict[str, dict[str, float]]:
        return {s: subtask_metrics(data.queries[s], data.qrels[s], scores[s]) for s in SUBTASKS}

    def metrics(self, data: SciDocsData, scores: dict[str, list[np.ndarray]]) -> dict[str, float]:
        return _combine(self.subsets(data, scores))

    def outcomes(self, data: SciDocsData, scores: dict[str, list[np.ndarray]]) -> Outcomes:
        """The metrics and each query's MAP and nDCG, pytrec_eval run once per subtask."""
        per_query = {s: subtask_per_query(data.queries[s], data.qrels[s], scores[s]) for s in SUBTASKS}
        per_subtask = {s: _means(per_query[s]) for s in SUBTASKS}
        return Outcomes(_combine(per_subtask), per_subtask, _items(per_query))

    def items(self, data: SciDocsData, scores: dict[str, list[np.ndarray]]) -> ItemTable:
        return _items({s: subtask_per_query(data.queries[s], data.qrels[s], scores[s]) for s in SUBTASKS})

    def n_queries(self, data: SciDocsData) -> int:
        return sum(len(data.queries[s]) for s in SUBTASKS)


def _combine(per_subtask: dict[str, dict[str, float]]) -> dict[str, float]:
    """Each subtask's MAP and nDCG, and their means over the four subtasks."""
    out = {}
    for measure in ("map", "ndcg"):
        for subtask in SUBTASKS:
            out[f"{measure}_{subtask}"] = per_subtask[subtask][measure]
        out[f"{measure}_avg"] = float(np.mean([per_subtask[s][measure] for s in SUBTASKS]))
    return out


def _items(per_query: dict[str, dict[str, dict[str, float]]]) -> ItemTable:
    """Each (subtask, query)'s MAP and nDCG; ``<measure>_<subtask>`` and ``<measure>_avg`` as recipes."""
    parts = {s: (list(per_query[s]), {m: [v[m] for v in per_query[s].values()] for m in ("map", "ndcg")})
             for s in SUBTASKS}
    recipes = {f"{m}_{s}": (m, (s,)) for m in ("map", "ndcg") for s in SUBTASKS}
    return query_table(parts, mean_recipes({**recipes, **{f"{m}_avg": (m, SUBTASKS) for m in ("map", "ndcg")}}))


TASKS.add("scidocs", SciDocs())
