"""A quick evaluation's frame (``usebench.evaluate(..., limit=N)``): each task-level score with its bootstrap
interval over the subsample's items, since a score on a few hundred items is an estimate whose spread a reader
must see beside it (`bench eval --limit` prints the same interval)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def with_intervals(frame: pd.DataFrame, results: Path, records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """``frame`` as it is when no record is limited; else with ``ci_low`` and ``ci_high`` (0-1, the 95% percentile
    bootstrap over the subsample's items; NaN on subset rows and metrics the items do not give) and
    ``attrs["limit"]``: each limited task's subsample (n per subset, seed, rule, items, their ids' sha256)."""
    limited = {r["task"]["name"]: r for r in records if r["task"].get("limit")}
    if not limited:
        return frame
    from usebench.stats.loading import result_intervals
    from usebench.store import StoredResult, result_path

    bounds: dict[tuple[str, str], tuple[float, float]] = {}
    for task, record in limited.items():
        path = result_path(results, record["run_id"], task, record["task"]["split"])
        for metric, ci in result_intervals(StoredResult(path, record)).items():
            bounds[(task, metric)] = (ci.low, ci.high)
    keys = list(zip(frame["task"], frame["metric"], frame["subset"]))
    frame = frame.assign(ci_low=[bounds.get((t, m), (float("nan"),) * 2)[0] if s == "" else float("nan")
                                 for t, m, s in keys],
                         ci_high=[bounds.get((t, m), (float("nan"),) * 2)[1] if s == "" else float("nan")
                                  for t, m, s in keys])
    frame.attrs["limit"] = {task: dict(r["task"]["limit"]) for task, r in limited.items()}
    return frame
