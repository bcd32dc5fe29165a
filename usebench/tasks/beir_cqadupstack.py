"""BEIR's CQADupStack: 12 StackExchange forums as BEIR retrieval tasks, and their average (R. Wang 2022, thesis).

Data: BEIR's ``cqadupstack.zip`` (Thakur et al. 2021, from Hoogeveen et al. 2015), unpacked as
``beir/cqadupstack/<forum>/{corpus.jsonl, queries.jsonl, qrels/test.tsv}`` for the forums android, english, gaming,
gis, mathematica, physics, programmers, stats, tex, unix, webmasters, wordpress. A query is a question's title; a
document is a question's title and body; test split only. Release counts (BEIR; thesis Table 4.5): 13,145 queries,
457,199 documents over the 12 forums (per forum below, as MTEB's metadata of the same files lists them).

Protocol: each forum is a :class:`~usebench.tasks.beir.BeirTask` (retrieval over its own corpus, own ids dropped, nDCG@10,
MAP@100, recall@k and P@k at k 1-1000); ``beir-cqadupstack`` is the unweighted mean of the 12 forums' metrics, as
BEIR and the thesis ("we report the average of the results for these 12 subforums", Sec. 4.3.2) report it, the
forums' own values in its subsets.

Not the USEB task ``cqadupstack`` (TSDAE paper): that one retrieves titles from titles with its own split files
and a found-normalised MAP@100; this one is BEIR's release and BEIR's metrics.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from usebench.eval.items import ItemTable, Outcomes, mean_recipes, query_table
from usebench.registry import TASKS
from usebench.eval.scorer import Scorer
from usebench.eval.subsample import Limit
from usebench.tasks.base import Family, Task
from usebench.tasks.beir import (MEASURES, BeirData, BeirTask, beir_per_query, limited_queries, per_query_columns,
                                 per_query_means)
from usebench.tasks.release import Count

SOURCE = "BEIR cqadupstack release (Thakur et al. 2021); per forum as MTEB's CQADupstack*Retrieval metadata"
# forum -> (judged test queries, documents)
FORUMS: dict[str, tuple[int, int]] = {
    "android": (699, 22998), "english": (1570, 40221), "gaming": (1595, 45301), "gis": (885, 37637),
    "mathematica": (804, 16705), "physics": (1039, 38316), "programmers": (876, 32176), "stats": (652, 42269),
    "tex": (2906, 68184), "unix": (1072, 47382), "webmasters": (506, 17405), "wordpress": (541, 48605),
}
RELEASE_QUERIES, RELEASE_DOCUMENTS = 13145, 457199  # thesis Table 4.5; BEIR paper Table 1


class BeirCQADupStackForum(BeirTask):
    """One forum of BEIR's CQADupStack."""

    splits: ClassVar[tuple[str, ...]] = ("test",)
    dataset: ClassVar[str] = "beir-cqadupstack"
    release_source: ClassVar[str] = SOURCE


def forum_task(forum: str) -> BeirCQADupStackForum:
    """The adapter of one forum (a subclass per forum, so that names stay class-level)."""
    queries, documents = FORUMS[forum]
    attrs = {"name": f"beir-cqadupstack-{forum}", "beir_name": f"cqadupstack/{forum}",
             "release_documents": documents, "release_queries": {"test": queries},
             "description": f"BEIR CQADupStack, {forum} forum ({queries} queries, {documents} documents)"}
    return type(f"BeirCQADupStack_{forum}", (BeirCQADupStackForum,), attrs)()


FORUM_TASKS: dict[str, BeirCQADupStackForum] = {forum: forum_task(forum) for forum in FORUMS}


class BeirCQADupStack(Task):
    """The 12 forums evaluated one by one; metrics are their unweighted mean."""

    name = "beir-cqadupstack"
    group = "beir"
    family: ClassVar[Family] = "retrieval"
    limit_unit: ClassVar[str | None] = "queries"
    version = "2"  # as BeirTask: recall@k / P@k at k 1-1000
    main_metric = "ndcg@10"
    metric_names = tuple(MEASURES)
    splits = ("test",)
    dataset = "beir-cqadupstack"
    description = "BEIR CQADupStack: mean over 12 forums (13,145 queries, 457,199 docs; nDCG@10, R@k, P@k)"

    def __init__(self) -> None:
        self._last: tuple[Any, dict[str, dict[str, float]]] | None = None  # (scores, per-forum metrics) of 1 run

    def files(self, split: str) -> list[str]:
        return [f for task in FORUM_TASKS.values() for f in task.files(split)]

    def train_files(self) -> list[str]:
        return [f for task in FORUM_TASKS.values() for f in task.train_files()]

    def train_corpus(self, data_root: str | Path, corpus_file: str | Path | None = None, *,
                     include_eval_queries: bool = False) -> list[str]:
        """Every forum's documents (each without its evaluation queries unless asked), forum by forum."""
        if corpus_file is not None:
            return FORUM_TASKS["android"].train_corpus(data_root, corpus_file)
        out: dict[str, None] = {}
        for task in FORUM_TASKS.values():
            out.update(dict.fromkeys(task.train_corpus(data_root, include_eval_queries=include_eval_queries)))
        return list(out)

    def load(self, split: str, data_root: str | Path) -> dict[str, BeirData]:
        self.check_split(split)
        return {forum: task.load(split, data_root) for forum, task in FORUM_TASKS.items()}

    def release_counts(self, split: str, data: dict[str, BeirData]) -> list[Count]:
        return [c for forum, task in FORUM_TASKS.items() for c in task.release_counts(split, data[forum])]

    def limited(self, data: dict[str, BeirData], limit: Limit) -> dict[str, BeirData]:
        """At most ``limit.n`` queries of each forum; every forum's corpus stays whole."""
        return {forum: limited_queries(d, limit.pick(self.name, forum, len(d.query_ids))) for forum, d in data.items()}

    def texts(self, data: dict[str, BeirData]) -> list[str]:
        out: dict[str, None] = {}
        for forum, task in FORUM_TASKS.items():
            out.update(dict.fromkeys(task.texts(data[forum])))
        return list(out)

    def score(self, data: dict[str, BeirData], scorer: Scorer) -> dict[str, Any]:
        return {forum: task.score(data[forum], scorer) for forum, task in FORUM_TASKS.items()}

    def subsets(self, data: dict[str, BeirData], scores: dict[str, Any]) -> dict[str, dict[str, float]]:
        if self._last is not None and self._last[0] is scores:  # metrics() just computed them: hand them over
            per_forum, self._last = self._last[1], None  # and hold no reference to the run any longer
            return per_forum
        return {forum: {**task.metrics(data[forum], scores[forum]), "n_queries": float(len(data[forum].query_ids))}
                for forum, task in FORUM_TASKS.items()}

    def metrics(self, data: dict[str, BeirData], scores: dict[str, Any]) -> dict[str, float]:
        per_forum = self.subsets(data, scores)
        self._last = (scores, per_forum)  # evaluate() asks for the subsets next: pytrec_eval runs once per forum
        return {m: float(np.mean([v[m] for v in per_forum.values()])) for m in self.metric_names}

    def outcomes(self, data: dict[str, BeirData], scores: dict[str, Any]) -> Outcomes:
        """The metrics (means over the forums), each forum's, and each query's values, pytrec_eval run once."""
        per_query = {forum: beir_per_query(data[forum], scores[forum]) for forum in FORUM_TASKS}
        per_forum = {forum: {**per_query_means(per_query[forum]), "n_queries": float(len(data[forum].query_ids))}
                     for forum in FORUM_TASKS}
        metrics = {m: float(np.mean([v[m] for v in per_forum.values()])) for m in self.metric_names}
        return Outcomes(metrics, per_forum, _items(per_query))

    def items(self, data: dict[str, BeirData], scores: dict[str, Any]) -> ItemTable:
        return _items({forum: beir_per_query(data[forum], scores[forum]) for forum in FORUM_TASKS})

    def n_queries(self, data: dict[str, BeirData]) -> int:
        return sum(len(d.query_ids) for d in data.values())


def _items(per_query: dict[str, dict[str, dict[str, float]]]) -> ItemTable:
    """Each (forum, query)'s values; a metric is the mean over the forums of the forum's mean."""
    return query_table({forum: per_query_columns(values) for forum, values in per_query.items()},
                       mean_recipes({m: (m, tuple(per_query)) for m in MEASURES}))


for _task in FORUM_TASKS.values():
    TASKS.add(_task.name, _task)
TASKS.add("beir-cqadupstack", BeirCQADupStack())
