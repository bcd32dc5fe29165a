"""AskUbuntu duplicate-question re-ranking (USEB task; TSDAE paper, Wang et al. 2021, Sec. 4).

Data: Lei et al. (2016), taolei87/askubuntu, as packaged in USEB's ``data-eval.zip``:
``useb/data-eval/askubuntu/text_tokenized.txt`` (``id \\t title \\t body``, one question a line) and
``dev.txt`` / ``test.txt`` (``query id \\t similar ids \\t 20 BM25 candidate ids \\t 20 BM25 scores``).

Protocol (UKPLab/useb ``unsupse_benchmark/evaluators/askubuntu.py``, reproduced exactly):
- queries whose similar-id field is empty are skipped (dev 11 and test 14 of 200 lines);
- the candidates are put in BM25 order (stable sort by descending BM25 score, ties keep file order), then
  re-ranked by the cosine of the *titles* (stripped); tied cosines keep the BM25 order;
- AP is the mean of precision@i over the ranks i of relevant candidates, i.e. normalised by the relevant
  candidates in the list (all of them: every similar id of the release is among its 20 candidates);
  P@1, P@5 and MRR per query; each metric is the mean over the evaluated queries. Main metric: ``map``.
  (P@k divides by k, the reference by min(k, list length): the same for the release's 20 candidates.)
A line whose similar ids are all outside its candidates is an error here; the reference aborts on it too.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from usebench.errors import DataFormatError
from usebench.eval.items import ItemTable, Outcomes, mean_recipes, query_table
from usebench.eval.metrics import average_precision_at_ranks, precision_at, reciprocal_rank
from usebench.registry import TASKS
from usebench.eval.scorer import Scorer
from usebench.eval.subsample import Limit, picked
from usebench.tasks.base import Task, parse_float, split_fields
from usebench.data.corpus import read_lines
from usebench.tasks.release import Count
from usebench.tasks.rerank import (
    RerankQuery,
    rank_by_score,
    ranked_hits,
    rerank_scores,
    rerank_texts,
)

ROOT = "useb/data-eval/askubuntu"
POOL_FILE = "text_tokenized.txt"
# Lines (queries) of dev.txt / test.txt in the release: 200 each (TSDAE paper Table 1 "#queries 200";
# taolei87/askubuntu dev.txt and test.txt), of which 189 / 186 have a similar id and are evaluated.
RELEASE_LINES = 200


@dataclass(frozen=True)
class EvalLine:
    """One line of dev.txt/test.txt: the query, its similar ids and its candidates in BM25 order."""

    lineno: int
    qid: str
    similar: tuple[str, ...]
    bm25_ranked: tuple[str, ...]


@dataclass(frozen=True)
class AskUbuntuData:
    """The evaluated queries of one split and how many lines were skipped for having no similar id."""

    split: str
    queries: tuple[RerankQuery, ...]
    n_skipped: int


def read_eval(path: Path) -> list[EvalLine]:
    """Every line of a dev/test file, candidates sorted by BM25 score (stable, as the reference)."""
    lines = []
    for lineno, line in enumerate(read_lines(path), 1):
        fields = split_fields(path, lineno, line, 4, 4, "(query id, similar ids, candidate ids, BM25 scores)")
        candidates = fields[2].split()
        scores = [parse_float(path, lineno, s, "BM25 score") for s in fields[3].split()]
        if not candidates or len(candidates) != len(scores):
            raise DataFormatError(path, lineno, "as many BM25 scores as candidate ids (at least one)",
                                  f"{len(candidates)} ids and {len(scores)} scores")
        similar = tuple(fields[1].split())
        lines.append(EvalLine(lineno, fields[0], similar, tuple(rank_by_score(candidates, scores))))
    return lines


def read_titles(path: Path) -> dict[str, str]:
    """id -> stripped title from text_tokenized.txt (a repeated id keeps its last line, as the reference)."""
    titles = {}
    for lineno, line in enumerate(read_lines(path), 1):
        qid, title, _body = split_fields(path, lineno, line, 3, 3, "(id, title, body)")
        titles[qid] = title.strip()
    return titles


def build_queries(path: Path, lines: list[EvalLine], titles: dict[str, str]) -> list[RerankQuery]:
    """Queries with at least one similar id, their title and their candidates' titles in BM25 order."""
    queries = []
    for ln in lines:
        if not ln.similar:
            continue  # the reference skips these before looking any title up
        if not set(ln.similar) & set(ln.bm25_ranked):
            raise DataFormatError(path, ln.lineno, "a similar id among the candidate ids", " ".join(ln.similar))
        for qid in (ln.qid, *ln.bm25_ranked):
            if qid not in titles:
                raise DataFormatError(path, ln.lineno, f"ids that are in {POOL_FILE}", f"unknown id {qid}")
        queries.append(RerankQuery(ln.qid, titles[ln.qid], ln.bm25_ranked,
                                   tuple(titles[c] for c in ln.bm25_ranked), frozenset(ln.similar)))
    return queries


class AskUbuntu(Task):
    """AskUbuntu: re-rank 20 BM25 candidates by title cosine; MAP, P@1, P@5, MRR."""

    name = "askubuntu"
    group = "useb"
    family = "rerank"
    limit_unit = "queries"
    main_metric = "map"
    metric_names = ("map", "p@1", "p@5", "mrr")
    splits = ("dev", "test")
    dataset = "useb"
    description = "AskUbuntu duplicate questions: re-rank 20 BM25 candidates by title (MAP)"

    def files(self, split: str) -> list[str]:
        return [f"{ROOT}/{POOL_FILE}", f"{ROOT}/{split}.txt"]

    def load(self, split: str, data_root: str | Path) -> AskUbuntuData:
        pool_path, eval_path = self.require(data_root, split)
        lines = read_eval(eval_path)
        queries = build_queries(eval_path, lines, read_titles(pool_path))
        if not queries:
            raise DataFormatError(eval_path, None, "at least one query with similar ids")
        return AskUbuntuData(split, tuple(queries), len(lines) - len(queries))

    def release_counts(self, split: str, data: AskUbuntuData) -> list[Count]:
        return [Count(f"{ROOT}/{split}.txt", "lines", len(data.queries) + data.n_skipped, RELEASE_LINES,
                      "AskUbuntu release (Lei et al. 2016; TSDAE paper Table 1)")]

    def limited(self, data: AskUbuntuData, limit: Limit) -> AskUbuntuData:
        """At most ``limit.n`` of the evaluated queries, each with its 20 candidates."""
        return replace(data, queries=picked(data.queries, limit.pick(self.name, self.name, len(data.queries))))

    def texts(self, data: AskUbuntuData) -> list[str]:
        return rerank_texts(data.queries)

    def score(self, data: AskUbuntuData, scorer: Scorer) -> list[np.ndarray]:
        return rerank_scores(data.queries, scorer)

    def per_query(self, data: AskUbuntuData, scores: list[np.ndarray]) -> dict[str, list[float]]:
        """Each metric's value per evaluated query (AP, P@1, P@5, RR), in query order."""
        hits = [ranked_hits(q, s) for q, s in zip(data.queries, scores, strict=True)]
        return {"map": [average_precision_at_ranks(h) for h in hits], "p@1": [precision_at(h, 1) for h in hits],
                "p@5": [precision_at(h, 5) for h in hits], "mrr": [reciprocal_rank(h) for h in hits]}

    def metrics(self, data: AskUbuntuData, scores: list[np.ndarray]) -> dict[str, float]:
        return {m: float(np.mean(values)) for m, values in self.per_query(data, scores).items()}

    def items(self, data: AskUbuntuData, scores: list[np.ndarray]) -> ItemTable:
        return self._items(data, self.per_query(data, scores))

    def outcomes(self, data: AskUbuntuData, scores: list[np.ndarray]) -> Outcomes:
        values = self.per_query(data, scores)
        return Outcomes({m: float(np.mean(v)) for m, v in values.items()}, {}, self._items(data, values))

    def _items(self, data: AskUbuntuData, values: dict[str, list[float]]) -> ItemTable:
        return query_table({self.name: ([q.qid for q in data.queries], values)},
                           mean_recipes({m: (m, (self.name,)) for m in values}))

    def n_queries(self, data: AskUbuntuData) -> int:
        return len(data.queries)


TASKS.add("askubuntu", AskUbuntu())
