"""The re-ranking protocol shared by AskUbuntu and SciDocs: score each query's fixed candidate list, rank it.

A query carries its candidates in their *fallback order* (AskUbuntu: the BM25 order of the release file;
SciDocs: the order of its qrels). Ranking is a stable sort by descending score, so tied candidates keep that
order, exactly as the useb reference's ``rank_by_score`` (Python's stable ``sorted(..., reverse=True)``).
Also here: reading a release text file line by line the way the reference's ``for line in open(path)`` does,
and the JSON reader the USEB JSON files need.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from usebench.errors import BenchError, DataFormatError
from usebench.eval.scorer import Scorer


@dataclass(frozen=True)
class RerankQuery:
    """One query and the candidates it re-ranks (ids and texts aligned, in fallback order)."""

    qid: str
    text: str
    candidate_ids: tuple[str, ...]
    candidate_texts: tuple[str, ...]
    relevant: frozenset[str]


def rank_by_score(ids: Sequence[str], scores: Sequence[float]) -> list[str]:
    """``ids`` by descending score; equal scores keep their input order (stable), as the useb reference."""
    if len(ids) != len(scores):
        raise BenchError(f"{len(ids)} ids but {len(scores)} scores")
    order = sorted(range(len(ids)), key=lambda i: -float(scores[i]))
    return [ids[i] for i in order]


def rerank_texts(queries: Sequence[RerankQuery]) -> list[str]:
    """Every query and candidate text, each once, for ``Scorer.prepare``."""
    texts: dict[str, None] = {}
    for q in queries:
        texts[q.text] = None
        texts.update(dict.fromkeys(q.candidate_texts))
    return list(texts)


def rerank_scores(queries: Sequence[RerankQuery], scorer: Scorer) -> list[np.ndarray]:
    """The scorer's score of every candidate of every query -> one (n_candidates,) array per query."""
    out = []
    for q in queries:
        if q.candidate_texts:
            out.append(np.asarray(scorer.rerank(q.text, list(q.candidate_texts)), dtype=np.float64))
        else:
            out.append(np.zeros(0, dtype=np.float64))
    return out


def ranked_hits(query: RerankQuery, scores: Sequence[float]) -> np.ndarray:
    """0/1 relevance of the candidates in model order (ties broken by the fallback order)."""
    ranked = rank_by_score(query.candidate_ids, scores)
    return np.array([1 if d in query.relevant else 0 for d in ranked], dtype=np.int64)


def read_json(path: Path) -> Any:
    """A JSON file; a syntax error names the file and line."""
    try:
        with path.open(encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as e:
        raise DataFormatError(path, e.lineno, f"valid JSON ({e.msg} at column {e.colno})") from None
    except UnicodeDecodeError:
        raise DataFormatError(path, None, "UTF-8 JSON") from None


def expect_type(path: Path, where: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    """``value`` if it has JSON type ``kind``, else a :class:`DataFormatError` naming the key path."""
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise DataFormatError(path, None, f"{what} at {where}", f"{type(value).__name__} {value!r}")
    return value
