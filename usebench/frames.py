"""Result records (the store's JSON, usebench/store.py) as rows of a long pandas DataFrame.

One row per metric: the task's own metrics with ``subset == ""`` (``main`` marks the task's main metric), then
each subset's metrics (CQADupStack's forums, TwitterPara's two corpora, SciDocs' subtasks...) with the subset's
name. Values are 0-1, unrounded, as stored. Subset entries that are counts, not scores (TwitterPara's
``n_pairs`` and ``n_labelled``), are left out: every ``value`` is a score.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

# The columns of usebench.evaluate's frame, in order.
EVAL_COLUMNS = ("task", "split", "subset", "metric", "value", "main", "run_id")


def metric_rows(record: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``(subset, metric, value, main)`` of every score in one record."""
    main = record["main_metric"]
    for metric, value in record["scores"].items():
        yield {"subset": "", "metric": metric, "value": float(value), "main": metric == main}
    for subset, scores in (record.get("subsets") or {}).items():
        for metric, value in scores.items():
            if metric.startswith("n_"):  # a count (pairs, labelled pairs), not a score
                continue
            yield {"subset": str(subset), "metric": metric, "value": float(value), "main": False}


def eval_frame(records: Iterable[dict[str, Any]]):
    """usebench.evaluate's frame: task, split, subset, metric, value (0-1), main, run_id."""
    import pandas as pd

    rows = [{"task": r["task"]["name"], "split": r["task"]["split"], **row, "run_id": r["run_id"]}
            for r in records for row in metric_rows(r)]
    return pd.DataFrame(rows, columns=list(EVAL_COLUMNS))
