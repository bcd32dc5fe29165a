"""MTEB's descriptive statistics of a USEB task's split, in MTEB's own schemas, computed by MTEB's own functions.

MTEB's quality checks (duplicates, empty or very short texts, queries without a relevant document, labels with one
value) read a task's ``descriptive_stats``; this module gives them what MTEB's own task of the same type would report:

- TwitterPara (PairClassification): ``PairClassificationDescriptiveStatistics`` over the labelled pairs the main score
  (AP) is computed on, the Twitter URL file's then PIT-2015's: sentence 1 and 2 statistics, unique pairs, the binary
  labels.
- AskUbuntu and SciDocs (Reranking, which MTEB 2 runs as retrieval over each query's candidates) and CQADupStack
  (Retrieval): ``RetrievalDescriptiveStatistics`` over the evaluated queries, their documents (a re-ranking part's
  candidates, a forum's retrieval pool), the relevant documents as the release lists them, and, for re-ranking, the
  candidates per query (``top_ranked``). A task of several parts (SciDocs' four subtasks, CQADupStack's 12 forums)
  has its ids prefixed with the part, as MTEB prefixes the subsets of a task it describes as a whole, so that a query
  of two parts counts twice and a document of two pools twice.

Relevant ids that are not among the documents (a SciDocs positive without a title, a CQADupStack duplicate that is a
query of the split and so not in the pool) are counted by MTEB's ``num_missing_corpus_ids``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from usebench.errors import BenchError
from usebench.eval.evaluate import LoadedSplit
from usebench.tasks.pairs import UNLABELLED

try:  # MTEB's own statistics: the same hashing (unique texts), counts and rounding as its tasks
    from mteb.abstasks._statistics_calculation import (calculate_label_statistics, calculate_pair_modality_statistics,
                                                       calculate_relevant_docs_statistics,
                                                       calculate_single_input_modality_statistics,
                                                       calculate_top_ranked_statistics)
    from mteb.types.statistics import PairClassificationDescriptiveStatistics, RetrievalDescriptiveStatistics
except ImportError as e:  # imported only where MTEB is wanted
    raise BenchError(f"USEB's MTEB statistics need MTEB's statistics functions (mteb>=2.26,<3: pip install -e "
                     f"'.[mteb]') ({e})") from None


@dataclass
class RetrievalParts:
    """Queries, documents, relevant documents and (re-ranking) candidates of a task's parts, ids prefixed."""

    queries: dict[str, str]
    documents: dict[str, str]
    relevant: dict[str, dict[str, int]]
    candidates: dict[str, list[str]] | None

    def add_documents(self, part: str, docs: Sequence[tuple[str, str]]) -> list[str]:
        """The part's documents (id, text); returns their prefixed ids."""
        ids = [_prefixed(part, d) for d, _ in docs]
        self.documents.update(zip(ids, (text for _, text in docs)))
        return ids

    def add_query(self, part: str, qid: str, text: str, relevant: Sequence[str],
                  candidates: list[str] | None = None) -> None:
        key = _prefixed(part, qid)
        self.queries[key] = text
        self.relevant[key] = {_prefixed(part, d): 1 for d in relevant}
        if self.candidates is not None and candidates is not None:
            self.candidates[key] = candidates


def _prefixed(part: str, item: str) -> str:
    return f"{part}/{item}" if part else item


def split_statistics(loaded: LoadedSplit) -> dict[str, Any]:
    """MTEB's descriptive statistics of ``loaded`` (one USEB task's split), in the schema of its MTEB type."""
    builders = {"twitterpara": pair_statistics, "askubuntu": askubuntu_parts, "scidocs": scidocs_parts,
                "cqadupstack": cqadupstack_parts}
    name = loaded.task.name
    if name not in builders:
        raise BenchError(f"no MTEB statistics for task {name!r} (USEB's four tasks have them)")
    out = builders[name](loaded.data)
    return out if name == "twitterpara" else retrieval_statistics(out)


def pair_statistics(data: dict[str, Any]) -> PairClassificationDescriptiveStatistics:
    """The labelled pairs of every file, as MTEB's PairClassification describes its ``sentence1/sentence2/labels``."""
    columns: dict[str, list[Any]] = {"sentence1": [], "sentence2": [], "labels": []}
    for pairs in data.values():
        for s1, s2, label in zip(pairs.s1, pairs.s2, pairs.label, strict=True):
            if label != UNLABELLED:
                columns["sentence1"].append(s1)
                columns["sentence2"].append(s2)
                columns["labels"].append(int(label))
    n = len(columns["labels"])
    sides = calculate_pair_modality_statistics({"sentence1": "text"}, {"sentence2": "text"}, columns.__getitem__, n)
    text1, text2 = sides["text1_statistics"], sides["text2_statistics"]
    return PairClassificationDescriptiveStatistics(
        num_samples=n, number_of_characters=text1["total_text_length"] + text2["total_text_length"],
        unique_pairs=sides["unique_pairs"], text1_statistics=text1, image1_statistics=None, audio1_statistics=None,
        video1_statistics=None, text2_statistics=text2, image2_statistics=None, audio2_statistics=None,
        video2_statistics=None, labels_statistics=calculate_label_statistics(columns["labels"]))


def askubuntu_parts(data: Any) -> RetrievalParts:
    """Each evaluated query, its 20 BM25 candidates (the documents) and its similar questions."""
    parts = RetrievalParts({}, {}, {}, {})
    for q in data.queries:
        candidates = parts.add_documents("", list(zip(q.candidate_ids, q.candidate_texts)))
        parts.add_query("", q.qid, q.text, sorted(q.relevant), candidates)
    return parts


def scidocs_parts(data: Any) -> RetrievalParts:
    """Per subtask, each evaluated query, its titled candidates and its positives (relevance > 0)."""
    parts = RetrievalParts({}, {}, {}, {})
    for subtask, queries in data.queries.items():
        for q in queries:
            candidates = parts.add_documents(subtask, list(zip(q.candidate_ids, q.candidate_texts)))
            parts.add_query(subtask, q.qid, q.text, sorted(q.relevant), candidates)
    return parts


def cqadupstack_parts(data: Sequence[Any]) -> RetrievalParts:
    """Per forum, each query, the forum's pool (every query retrieves from all of it) and its duplicates."""
    parts = RetrievalParts({}, {}, {}, None)
    for forum in data:
        parts.add_documents(forum.name, list(zip(forum.doc_ids, forum.doc_texts)))
        for qid, text, relevant in zip(forum.query_ids, forum.query_texts, forum.relevant, strict=True):
            parts.add_query(forum.name, qid, text, relevant)
    return parts


def retrieval_statistics(parts: RetrievalParts) -> RetrievalDescriptiveStatistics:
    """MTEB's Retrieval statistics of the queries and documents (text only), relevant and top-ranked documents."""
    documents = calculate_single_input_modality_statistics({"text": list(parts.documents.values())})
    queries = calculate_single_input_modality_statistics({"text": list(parts.queries.values())})
    n_queries, n_documents = len(parts.queries), len(parts.documents)
    top_ranked = calculate_top_ranked_statistics(parts.candidates, n_queries) if parts.candidates else None
    return RetrievalDescriptiveStatistics(
        num_samples=n_queries + n_documents, num_queries=n_queries, num_documents=n_documents,
        number_of_characters=documents["text_statistics"]["total_text_length"]
        + queries["text_statistics"]["total_text_length"],
        documents_text_statistics=documents["text_statistics"], documents_image_statistics=None,
        documents_audio_statistics=None, documents_video_statistics=None,
        queries_text_statistics=queries["text_statistics"], queries_image_statistics=None,
        queries_audio_statistics=None, queries_video_statistics=None,
        relevant_docs_statistics=calculate_relevant_docs_statistics(parts.relevant, parts.queries, parts.documents),
        top_ranked_statistics=top_ranked)
