"""Result records (the store's JSON, usebench/store.py) as rows of a long pandas DataFrame.

One row per metric: the task's own metrics with ``subset == ""`` (``main`` marks the task's main metric), then
each subset's metrics (CQADupStack's forums, TwitterPara's two corpora, SciDocs' subtasks...) with the subset's
name. A subset score that the task's own metrics already hold (TwitterPara's ``ap_pit`` is subset ``pit``'s
``ap``) is not repeated: every score is one row. Values are 0-1, unrounded, as stored. Subset entries that are
counts, not scores (TwitterPara's ``n_pairs`` and ``n_labelled``), are left out: every ``value`` is a score.

``model`` names the model as the caller did (the name given, the model name or path) and ``revision`` tells
apart models of one name: an in-memory model's ``revision=`` (a SentenceTransformer without one: its identity
hash), a model name's weights' fingerprint.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

# The columns of usebench.evaluate's frame, in order.
EVAL_COLUMNS = ("model", "revision", "task", "split", "subset", "metric", "value", "main", "run_id")


def metric_rows(record: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``(subset, metric, value, main)`` of every score in one record."""
    main, top = record["main_metric"], record["scores"]
    for metric, value in top.items():
        yield {"subset": "", "metric": metric, "value": float(value), "main": metric == main}
    for subset, scores in (record.get("subsets") or {}).items():
        for metric, value in scores.items():
            if metric.startswith("n_"):  # a count (pairs, labelled pairs), not a score
                continue
            if top.get(f"{metric}_{subset}") == value:  # the task's own metrics hold it already
                continue
            yield {"subset": str(subset), "metric": metric, "value": float(value), "main": False}


def model_fields(record: dict[str, Any]) -> dict[str, str]:
    """``model`` and ``revision`` of a record (see the module docstring)."""
    method, config = record.get("method") or {}, record.get("config") or {}
    model = method.get("base_model") or (record.get("scorer") or {}).get("model") or method.get("name") or ""
    revision = config.get("revision") if isinstance(config, dict) else None
    if revision is None and isinstance(config, dict):
        revision = str(config.get("model_fingerprint") or "")[:8]
    return {"model": str(model), "revision": str(revision or "")}


def eval_frame(records: Iterable[dict[str, Any]]):
    """usebench.evaluate's frame: model, revision, task, split, subset, metric, value (0-1), main, run_id."""
    import pandas as pd

    rows = [{**model_fields(r), "task": r["task"]["name"], "split": r["task"]["split"], **row, "run_id": r["run_id"]}
            for r in records for row in metric_rows(r)]
    return pd.DataFrame(rows, columns=list(EVAL_COLUMNS))

