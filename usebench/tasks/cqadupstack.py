"""CQADupStack duplicate-question retrieval over 12 StackExchange forums (USEB task; TSDAE paper, Sec. 4).

Data: Hoogeveen et al. (2015), as packaged in USEB's ``data-eval.zip``:
``useb/data-eval/cqadupstack/corpus.json`` = ``{forum: {question id: title}}`` and
``retrieval_split.json`` = ``{"valid"|"test": {forum: {query id: [duplicate ids]}}}`` (dev = ``"valid"``).

Protocol (UKPLab/useb ``unsupse_benchmark/evaluators/cqadupstack.py``, reproduced exactly):
- per forum, the pool is the forum's questions minus the *current split's* queries (corpus order kept); each
  query (its stripped title) retrieves the top 100 of the pool by cosine;
- "MAP@100" per query is sklearn ``average_precision_score`` of the top-100 scores against their 0/1 hits,
  i.e. normalised by the relevant documents found in the top 100, and 0 when none is (a query with an empty
  duplicate list therefore counts as 0) -- this is not trec ``map_cut_100``;
- nDCG@10 is binary DCG@10 over the ideal DCG of ``len(duplicate list)`` hits, over the queries whose list
  is non-empty (duplicates that are themselves queries were removed from the pool yet count in the ideal);
- each forum's values are means over its queries; ``map@100`` / ``ndcg@10`` are the unweighted means over the
  forums, whose own values are in ``subsets``.
Ties: the reference uses ``torch.topk``, whose order among equal scores is unspecified; here equal scores
keep the lower pool (corpus) index. sklearn's AP is invariant to the order inside a tie; nDCG@10 and the
100th-place cut are not, which only matters for exactly equal scores (e.g. identical titles).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from usebench.errors import DataFormatError
from usebench.eval.items import ItemTable, Outcomes, mean_recipes, query_table
from usebench.eval.metrics import ndcg_at, truncated_average_precision
from usebench.registry import TASKS
from usebench.eval.scorer import Scorer
from usebench.eval.subsample import Limit, picked
from usebench.tasks.base import Task
from usebench.tasks.release import Count
from usebench.tasks.rerank import expect_type, read_json

ROOT = "useb/data-eval/cqadupstack"
SPLIT_KEYS = {"dev": "valid", "test": "test"}  # our split name -> key in retrieval_split.json
MAP_K = 100  # reference: map_k
NDCG_K = 10  # reference: ndcg_k
RELEASE_FORUMS = 12  # TSDAE paper Table 1: "CQADupStack has one sub-dataset for each of the 12 forums"


@dataclass(frozen=True)
class ForumData:
    """One forum of one split: its queries, its retrieval pool and each query's duplicate list."""

    name: str
    query_ids: tuple[str, ...]
    query_texts: tuple[str, ...]
    doc_ids: tuple[str, ...]
    doc_texts: tuple[str, ...]
    relevant: tuple[tuple[str, ...], ...]  # as listed in the file; its length is nDCG's ideal count


@dataclass(frozen=True)
class ForumRun:
    """The scorer's top-k pool indices (best first) and their scores, one row per query."""

    scores: np.ndarray  # (n_queries, k)
    indices: np.ndarray  # (n_queries, k)


def read_corpus_json(path: Path) -> dict[str, dict[str, str]]:
    """``{forum: {id: text}}`` with every text a string."""
    corpus = expect_type(path, "the top level", read_json(path), dict, "an object {forum: {id: title}}")
    for forum, questions in corpus.items():
        expect_type(path, f"[{forum!r}]", questions, dict, "an object {id: title}")
        for qid, text in questions.items():
            expect_type(path, f"[{forum!r}][{qid!r}]", text, str, "a title string")
    return corpus


def read_split_json(path: Path, key: str) -> dict[str, dict[str, list[str]]]:
    """``{forum: {query id: [duplicate ids]}}`` of one split key (``valid`` or ``test``)."""
    splits = expect_type(path, "the top level", read_json(path), dict, 'an object {"valid"|"test": ...}')
    if key not in splits:
        raise DataFormatError(path, None, f"a {key!r} key", f"keys {sorted(splits)}")
    split = expect_type(path, f"[{key!r}]", splits[key], dict, "an object {forum: {query id: [ids]}}")
    for forum, qrels in split.items():
        expect_type(path, f"[{key!r}][{forum!r}]", qrels, dict, "an object {query id: [ids]}")
        for qid, dids in qrels.items():
            where = f"[{key!r}][{forum!r}][{qid!r}]"
            for did in expect_type(path, where, dids, list, "a list of duplicate ids"):
                expect_type(path, where, did, str, "duplicate ids as strings")
    return split


def build_forum(path: Path, forum: str, questions: dict[str, str], qrels: dict[str, list[str]]) -> ForumData:
    """The forum's queries and its pool (the forum's questions without this split's queries)."""
    for qid in qrels:
        if qid not in questions:
            raise DataFormatError(path, None, f"query ids that are questions of forum {forum!r} in corpus.json",
                                  qid)
    if not any(qrels.values()):
        raise DataFormatError(path, None, f"at least one query of forum {forum!r} with a duplicate")
    pool = [(did, text) for did, text in questions.items() if did not in qrels]
    # The reference strips every text before encoding it.
    return ForumData(
        forum, tuple(qrels), tuple(questions[q].strip() for q in qrels),
        tuple(d for d, _ in pool), tuple(t.strip() for _, t in pool), tuple(tuple(r) for r in qrels.values()),
    )


def forum_values(forum: ForumData, run: ForumRun) -> dict[str, list[float]]:
    """MAP@100 and nDCG@10 of each query, in query order (nDCG NaN for a query without duplicates: undefined,
    and no part of the forum's mean)."""
    aps, ndcgs = [], []
    for row, relevant in enumerate(forum.relevant):
        relevant_set = set(relevant)
        hits = [1 if forum.doc_ids[j] in relevant_set else 0 for j in run.indices[row]]
        aps.append(truncated_average_precision(hits[:MAP_K], run.scores[row][:MAP_K]))
        ndcgs.append(ndcg_at(hits, len(relevant), NDCG_K) if relevant else float("nan"))
    return {"map@100": aps, "ndcg@10": ndcgs}


def means(values: dict[str, list[float]]) -> dict[str, float]:
    """A forum's metrics: means over its queries (NaN values, queries where a metric is undefined, left out)."""
    return {m: float(np.mean([x for x in v if not np.isnan(x)])) for m, v in values.items()}


def forum_metrics(forum: ForumData, run: ForumRun) -> dict[str, float]:
    """MAP@100 and nDCG@10 of one forum (means over its queries, nDCG over those with duplicates)."""
    return means(forum_values(forum, run))


class CQADupStack(Task):
    """CQADupStack: per-forum duplicate retrieval by title cosine; MAP@100 (found-normalised), nDCG@10."""

    name = "cqadupstack"
    group = "useb"
    family = "retrieval"
    limit_unit = "queries"
    main_metric = "map@100"
    metric_names = ("map@100", "ndcg@10")
    splits = ("dev", "test")
    dataset = "useb"
    description = "CQADupStack (12 forums): retrieve duplicate questions by title (MAP@100, mean of forums)"

    def files(self, split: str) -> list[str]:
        return [f"{ROOT}/corpus.json", f"{ROOT}/retrieval_split.json"]

    def load(self, split: str, data_root: str | Path) -> tuple[ForumData, ...]:
        corpus_path, split_path = self.require(data_root, split)
        corpus = read_corpus_json(corpus_path)
        split_data = read_split_json(split_path, SPLIT_KEYS[split])
        for forum in split_data:
            if forum not in corpus:
                raise DataFormatError(split_path, None, f"forums that are in {corpus_path.name}", forum)
        forums = []
        for forum, questions in corpus.items():  # the reference evaluates every forum of corpus.json
            if forum not in split_data:
                raise DataFormatError(split_path, None, f"forum {forum!r} under {SPLIT_KEYS[split]!r}")
            forums.append(build_forum(split_path, forum, questions, split_data[forum]))
        return tuple(forums)

    def release_counts(self, split: str, data: tuple[ForumData, ...]) -> list[Count]:
        return [Count(f"{ROOT}/corpus.json", "forums", len(data), RELEASE_FORUMS,
                      "CQADupStack (Hoogeveen et al. 2015; TSDAE paper Table 1)")]

    def limited(self, data: tuple[ForumData, ...], limit: Limit) -> tuple[ForumData, ...]:
        """At most ``limit.n`` queries of each forum; each forum's pool stays whole (without *every* query of the
        split, as the protocol removes them), so a kept query retrieves exactly as in the full evaluation."""
        out = []
        for forum in data:
            rows = limit.pick(self.name, forum.name, len(forum.query_ids))
            out.append(replace(forum, query_ids=picked(forum.query_ids, rows),
                               query_texts=picked(forum.query_texts, rows), relevant=picked(forum.relevant, rows)))
        return tuple(out)

    def texts(self, data: tuple[ForumData, ...]) -> list[str]:
        texts: dict[str, None] = {}
        for forum in data:
            texts.update(dict.fromkeys(forum.query_texts))
            texts.update(dict.fromkeys(forum.doc_texts))
        return list(texts)

    def score(self, data: tuple[ForumData, ...], scorer: Scorer) -> dict[str, ForumRun]:
        runs = {}
        for forum in data:
            scores, indices = scorer.search(list(forum.query_texts), list(forum.doc_texts), max(MAP_K, NDCG_K))
            runs[forum.name] = ForumRun(np.asarray(scores, dtype=np.float64), np.asarray(indices))
        return runs

    def subsets(self, data: tuple[ForumData, ...], scores: dict[str, ForumRun]) -> dict[str, dict[str, float]]:
        return {forum.name: forum_metrics(forum, scores[forum.name]) for forum in data}

    def metrics(self, data: tuple[ForumData, ...], scores: dict[str, ForumRun]) -> dict[str, float]:
        per_forum = self.subsets(data, scores)
        return {m: float(np.mean([v[m] for v in per_forum.values()])) for m in self.metric_names}

    def outcomes(self, data: tuple[ForumData, ...], scores: dict[str, ForumRun]) -> Outcomes:
        """The metrics and each query's values, computed once; the metrics are the mean over the forums."""
        values = {forum.name: forum_values(forum, scores[forum.name]) for forum in data}
        per_forum = {name: means(v) for name, v in values.items()}
        metrics = {m: float(np.mean([v[m] for v in per_forum.values()])) for m in self.metric_names}
        return Outcomes(metrics, per_forum, self._items(data, values))

    def items(self, data: tuple[ForumData, ...], scores: dict[str, ForumRun]) -> ItemTable:
        return self._items(data, {forum.name: forum_values(forum, scores[forum.name]) for forum in data})

    def _items(self, data: tuple[ForumData, ...], values: dict[str, dict[str, list[float]]]) -> ItemTable:
        forums = tuple(forum.name for forum in data)
        return query_table({forum.name: (forum.query_ids, values[forum.name]) for forum in data},
                           mean_recipes({m: (m, forums) for m in self.metric_names}))

    def n_queries(self, data: tuple[ForumData, ...]) -> int:
        return sum(len(forum.query_ids) for forum in data)


TASKS.add("cqadupstack", CQADupStack())
