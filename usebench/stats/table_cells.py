"""The report's cells: each cell's bootstrap interval, and per column the best row with every row not significantly
worse than it.

A cell is a row's results on one task metric (over its seeds), or the per-seed mean of other cells (the USEB and
STS averages): its bootstrap draws are ``(resamples, seeds)`` values, each test set resampled on its own (cells of one
task share its resamples) and composed per seed as the column is, then the seeds drawn with replacement (the
two-level bootstrap of :mod:`usebench.stats.intervals`).

Marking a column: the row with the highest mean, and every other row that a paired two-level bootstrap test (the
same item resamples on both sides) does not find worse at the table's level after Holm's correction within the
column. A column where some row has no per-item outcomes (results stored before them), or rows on different test
items, is marked by the displayed value alone, and the notes say so.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np

from usebench.errors import BenchError
from usebench.stats.table_rows import ResultIndex, RowKey
from usebench.stats.table_specs import COLUMNS, Column
from usebench.stats.intervals import Interval, Measurement, Resampler
from usebench.stats.loading import ADD_ITEMS, NoItemsError, measurement_of
from usebench.stats.paired import BOOTSTRAP_P, bootstrap_p, holm
from usebench.stats.resample import percentile_interval
from usebench.store import StoredResult

C = TypeVar("C")  # the report's Cell (usebench/report/build.py: a dataclass with ``missing`` and ``ci``)


@dataclass(frozen=True, eq=False)
class Draws:
    """A cell's bootstrap draws before the seeds are drawn: ``per_seed[b, s]`` for ``seeds[s]``."""

    seeds: tuple[int, ...]
    per_seed: np.ndarray
    parts: tuple[Measurement, ...]  # the task measurements it is computed from

    @property
    def n_items(self) -> int:
        return sum(m.n_items for m in {(m.task, m.split): m for m in self.parts}.values())

    def same_items(self, other: Draws) -> str | None:
        """Why ``other`` is not on the same test items, or None."""
        mine, theirs = {(m.task, m.split): m for m in self.parts}, {(m.task, m.split): m for m in other.parts}
        if set(mine) != set(theirs):
            return "computed from other tasks"
        return next((why for k in mine if (why := mine[k].same_items(theirs[k]))), None)


@dataclass
class TableStats:
    """Draws, intervals and pairwise tests of one report's cells (shared by its tables: each cell drawn once)."""

    index: ResultIndex
    resampler: Resampler = field(default_factory=Resampler)
    draws_cache: dict[tuple, Draws | str] = field(default_factory=dict)

    def draws(self, key: RowKey, column: Column | str, split: str) -> Draws | str:
        """The cell's draws, or why it has none (in words)."""
        col = COLUMNS[column] if isinstance(column, str) else column
        cache_key = (key, col.id, split)
        if cache_key not in self.draws_cache:
            self.draws_cache[cache_key] = self._draws(key, col, split)
        return self.draws_cache[cache_key]

    def _draws(self, key: RowKey, col: Column, split: str) -> Draws | str:
        if col.mean_of:
            parts = [self.draws(key, c, split) for c in col.mean_of]
            bad = next((p for p in parts if isinstance(p, str)), None)
            return bad if bad is not None else _mean_of(parts)
        results = self.index.results(key, col.task or "", split)
        if not results:
            return "no results"
        try:
            self.index.cell(key, col, split)  # seed repeats of one measurement, or MixedRunsError (its reason)
            m = measurement_of(results)
            return Draws(m.seeds, self.resampler.per_seed(m, col.metric or ""), (m,))
        except NoItemsError as e:
            return e.why  # without the file's path: the same words for every row of a table
        except BenchError as e:
            return str(e)

    def interval(self, key: RowKey, column: Column | str, split: str) -> Interval | str:
        """The cell's interval (0-1 units), or why it has none."""
        d = self.draws(key, column, split)
        if isinstance(d, str):
            return d
        values = self.resampler.over_seeds(d.per_seed, d.seeds)
        low, high = percentile_interval(values, self.resampler.level)
        point = self.index.cell(key, column, split).mean  # the value the table shows
        return Interval(point, low, high, self.resampler.level, d.n_items, len(d.seeds), self.resampler.resamples)

    def paired_cell(self, a: RowKey, b: RowKey, column: Column | str, split: str
                    ) -> tuple[float, float, float, float] | str:
        """(B - A, its interval's low and high, the two-sided p of the paired two-level bootstrap test) of one column
        (0-1 units), or why the two cells cannot be paired."""
        da, db = self.draws(a, column, split), self.draws(b, column, split)
        for d in (da, db):
            if isinstance(d, str):
                return d
        why = da.same_items(db)
        if why:
            return why
        deltas = self.resampler.over_seeds(db.per_seed, db.seeds, "B") - self.resampler.over_seeds(
            da.per_seed, da.seeds, "A")
        low, high = percentile_interval(deltas, self.resampler.level)
        delta = self.index.cell(b, column, split).mean - self.index.cell(a, column, split).mean
        return delta, low, high, bootstrap_p(deltas)

    def p_worse(self, best: RowKey, other: RowKey, column: Column | str, split: str) -> float | str:
        """Two-sided p of the paired bootstrap test of ``other`` - ``best`` on one column, or why there is none."""
        found = self.paired_cell(best, other, column, split)
        return found if isinstance(found, str) else found[3]

    def not_worse(self, rows: Sequence[RowKey], means: Sequence[float], column: Column | str,
                  split: str) -> tuple[set[int], str | None]:
        """Positions of the best row and of every row not significantly worse (Holm within the column), or
        (empty, why the column cannot be tested)."""
        if not rows:
            return set(), None
        best = int(np.argmax(means))
        tested = [i for i in range(len(rows)) if i != best]
        ps = [self.p_worse(rows[best], rows[i], column, split) for i in tested]
        why = next((p for p in ps if isinstance(p, str)), None)
        if why is not None:
            return set(), why
        alpha = 1 - self.resampler.level
        adjusted = holm([float(p) for p in ps])
        return {best} | {i for i, p in zip(tested, adjusted) if p >= alpha}, None

    def describe_interval(self) -> str:
        """The interval in words (the notes say "± is the half-width of the ...")."""
        return self.resampler.describe(True)

    def describe_marks(self) -> str:
        """The notes' sentence on the bold: which test, which level and correction."""
        alpha = 1 - self.resampler.level
        return (f"Bold: the best mean of each column and every row not significantly worse than it at alpha = "
                f"{alpha:g} ({BOOTSTRAP_P} of the two rows on the same item resamples, Holm's correction within the "
                "column): bold cells of one column are statistically tied.")


def with_interval(cell: C, results: Sequence[StoredResult], metric: str, resampler: Resampler) -> C:
    """``cell`` (x100) with the two-level bootstrap interval of ``metric`` over ``results`` (seed repeats of one
    measurement), or unchanged when they have no per-item outcomes: for the tables whose rows are configurations."""
    if cell.missing or not results:  # type: ignore[attr-defined]
        return cell
    try:
        iv = resampler.interval(measurement_of(results), metric)
    except BenchError:
        return cell
    return replace(cell, ci=(iv.low * 100, iv.high * 100))


def interval_note(cells: Iterable[object], resampler: Resampler) -> str:
    """The ± of a table whose cells :func:`with_interval` gave an interval where it could (the others: the std)."""
    cells = list(cells)
    with_ci = sum(getattr(c, "ci", None) is not None for c in cells)
    if not with_ci:
        return ("± is the sample std over seeds (no interval: these results store no per-item outcomes; "
                f"{ADD_ITEMS}).")
    return (f"± is the half-width of the {resampler.describe(True)} where the results store per-item outcomes "
            f"({with_ci} of {len(cells)} cells), else the sample std over seeds.")


def _mean_of(parts: Sequence[Draws]) -> Draws | str:
    """The per-seed mean of the parts' draws over the seeds every part has (the tables' per-seed average)."""
    common = sorted(set(parts[0].seeds).intersection(*(p.seeds for p in parts[1:])))
    if not common:
        return "its parts share no seed"
    cols = [np.stack([p.per_seed[:, p.seeds.index(s)] for s in common], axis=1) for p in parts]
    return Draws(tuple(common), np.mean(cols, axis=0), tuple(m for p in parts for m in p.parts))

