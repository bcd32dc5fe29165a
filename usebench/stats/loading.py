"""A stored result's per-item outcomes, read and checked against its record, and a row's results as a
:class:`~usebench.stats.intervals.Measurement`.

Results stored before per-item outcomes were (every store written before them, the committed ones included) stay
valid results; they have no interval and pair with nothing. What needs their items says so, with the command that
adds them: ``bench run ... --reevaluate TASK`` (re-scored from the unit's checkpoint) or ``bench eval ... --force``.
"""
from __future__ import annotations

from collections.abc import Sequence

from usebench.errors import BenchError
from usebench.eval.items import ItemsError, ItemTable
from usebench.stats.intervals import Interval, Measurement, Resampler, measurement
from usebench.store import StoredResult, items_path
from usebench.store.validity import items_reason

ADD_ITEMS = ("`bench run ... --reevaluate TASK` re-scores a trained unit from its checkpoint, `bench eval ... --force` "
             "an untrained model, and both store the items")


class NoItemsError(BenchError):
    """A result whose per-item outcomes are not there to read: the file, why, and what adds them (``why`` without the
    file)."""

    def __init__(self, path: object, why: str):
        self.why = f"{why}; {ADD_ITEMS}"
        super().__init__(f"{path}: {self.why}")


def load_items(result: StoredResult) -> ItemTable:
    """The result's per-item outcomes; :class:`NoItemsError` naming the file and why when there are none to use."""
    named = result.record.get("items")
    if not isinstance(named, dict):
        raise NoItemsError(result.path, "stored without per-item outcomes (before they were stored, or its task "
                                        "stores none)")
    why = items_reason(result.path, result.record)
    if why:
        raise NoItemsError(result.path, why)
    path = items_path(result.path)
    try:
        return ItemTable.from_bytes(path.read_bytes(), str(path))
    except ItemsError as e:
        raise NoItemsError(path, str(e).removeprefix(f"{path}: ")) from None


def measurement_of(results: Sequence[StoredResult]) -> Measurement:
    """The seed repeats ``results`` (one task split, one data version, one task version) as a measurement."""
    if not results:
        raise BenchError("no results to measure")
    first = results[0].record["task"]
    for r in results[1:]:
        task = r.record["task"]
        for key in ("name", "split", "data_sha256"):
            if task.get(key) != first.get(key):
                raise BenchError(f"{r.path}: {key} {task.get(key)!r}, not {first.get(key)!r} as {results[0].path}")
        if str(task.get("version", "1")) != str(first.get("version", "1")):
            raise BenchError(f"{r.path}: task version {task.get('version')}, not {first.get('version')} as "
                             f"{results[0].path}")
    return measurement(first["name"], first["split"], str(first.get("data_sha256")), str(first.get("version", "1")),
                       [(int(r.record["seed"]), load_items(r)) for r in results])


def result_intervals(result: StoredResult, metrics: Sequence[str] | None = None,
                     resampler: Resampler | None = None) -> dict[str, Interval]:
    """One stored result's bootstrap interval of each of ``metrics`` (default: every metric its items give) over
    the items its per-item file holds: a `--limit` result's subsample, a full result's whole test set."""
    m = measurement_of([result])
    resampler = resampler or Resampler()
    names = list(m.tables[0].recipes) if metrics is None else list(metrics)
    return {metric: resampler.interval(m, metric) for metric in names}
