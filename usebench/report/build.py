"""Turn a table spec and the indexed results into a built table: cells (x100) with seed statistics and, where the
results store per-item outcomes, a bootstrap interval; per column the best row and every row not significantly
worse than it in bold (usebench/stats/table_cells.py); the paper's dagger, blocks by setting, and notes (e.g. a rank
correlation)."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from usebench.stats.table_rows import (
    GROUP_TITLES,
    UNTRAINED,
    UPPER_BOUND_GROUPS,
    ResultIndex,
    RowKey,
    row_label,
)
from usebench.stats.table_specs import COLUMNS, Column, TableSpec, column_tasks
from usebench.stats.seeds import SeedStats, beats_all_in_every_seed
from usebench.stats.intervals import Interval
from usebench.stats.table_cells import TableStats

Spread = Literal["ci", "std"]  # what a cell's ± shows: the interval's half-width (where there is one) or the std


@dataclass(frozen=True)
class Cell:
    """One table cell in display units (x100). ``mean`` None = missing (shown as missing, never as 0)."""

    mean: float | None
    std: float | None = None
    n: int | None = None  # None: unknown (published numbers)
    per_seed: dict[int, float] = field(default_factory=dict)
    bold: bool = False
    dagger: bool = False
    ci: tuple[float, float] | None = None  # the bootstrap interval (x100), where the results store per-item outcomes

    @property
    def missing(self) -> bool:
        return self.mean is None

    @classmethod
    def from_stats(cls, stats: SeedStats) -> Cell:
        if stats.n == 0:
            return cls(None, n=0)
        std = stats.std
        return cls(stats.mean, None if math.isnan(std) else std, stats.n, dict(stats.values))


@dataclass(frozen=True)
class Row:
    """A row: its label, block title and cells by column id."""

    label: str
    block: str
    cells: dict[str, Cell]
    key: RowKey | None = None
    upper_bound: bool = False
    slot: int | None = None  # the published row this row is (usebench.report.skeleton), None: no skeleton
    note: str = ""  # why a skeleton row has no results of ours
    not_release: str = ""  # why its evaluation data is not the release (fixtures, --allow-partial...): never bold

    @property
    def n(self) -> int | None:
        ns = [c.n for c in self.cells.values() if c.n]
        return max(ns) if ns else None


@dataclass(frozen=True)
class Built:
    """A table ready to render: ordered rows (grouped in blocks), columns, caption and notes."""

    name: str
    title: str
    caption: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    decimals: int
    notes: tuple[str, ...] = ()
    show_n: bool = True
    split: str | None = None  # the evaluation split of every cell (None: a table of another kind)
    spread: Spread = "std"  # what the cells' ± shows (the notes say which)

    def blocks(self) -> list[tuple[str, list[Row]]]:
        out: list[tuple[str, list[Row]]] = []
        for row in self.rows:
            if not out or out[-1][0] != row.block:
                out.append((row.block, []))
            out[-1][1].append(row)
        return out


def _group_rank(group: str) -> tuple[int, str]:
    order = list(GROUP_TITLES)
    return (order.index(group) if group in order else len(order), group)


def build_table(spec: TableSpec, index: ResultIndex, split: str | None = None, data_root: Path | None = None,
                cell_stats: TableStats | None = None, spread: Spread = "ci", intervals: bool = True) -> Built:
    """The table ``spec`` over every row of ``index`` that has at least one of its cells. A row evaluated on data
    that is not its tasks' release is marked in its label and never bold (``data_root``: where ``bench data``
    recorded the release identities the package does not pin). ``cell_stats``: the report's interval and test
    machinery (one per report, so each cell is drawn once); ``spread``: what a cell's ± shows; ``intervals=False``:
    none drawn, bold by the displayed value (for callers that read which rows exist, such as `bench reproduce`'s
    status)."""
    split = split or spec.split
    columns = tuple(COLUMNS[c] for c in spec.columns)
    stats: dict[RowKey, dict[str, SeedStats]] = {}
    for key in index.rows:
        if spec.groups is not None and key.group not in spec.groups:
            continue
        cells = {c.id: index.held_cell(key, c, split).scaled(100.0) for c in columns}
        if any(s.n for s in cells.values()):
            stats[key] = cells
    stats = _minus_baseline(spec, stats)
    keys = sorted(stats, key=lambda k: (_group_rank(k.group), k.sort_key()))
    trained_models = {k.model for k in keys if k.method not in UNTRAINED}
    show_model = len(trained_models) > 1
    rows = []
    for key in keys:
        cells = {cid: Cell.from_stats(s) for cid, s in stats[key].items()}
        cells = _daggers(spec, key, stats, cells)
        not_release = not_release_mark(index, key, columns, split, data_root)
        rows.append(Row(label=row_label(key, show_model) + (f" · {not_release}" if not_release else ""),
                        block=GROUP_TITLES.get(key.group, key.group), cells=cells, key=key,
                        upper_bound=key.group in UPPER_BOUND_GROUPS, not_release=not_release))
    if intervals:
        cell_stats = cell_stats if cell_stats is not None else TableStats(index)
        rows, stat_notes = _intervals_and_marks(rows, columns, spec, cell_stats, split)
    else:
        rows, stat_notes = _bold(rows, columns, spec.decimals), lambda spread: []
    notes = [spec.caption]
    if any(r.not_release for r in rows):
        notes.append("Rows marked \"eval data not a release\" were scored on data that is not the tasks' release (test "
                     "fixtures, a subset, --allow-partial, other files): their cells are no test-set scores, never "
                     "bold, and never beside a published number.")
    if any(r.key is not None and r.key.limit for r in rows):
        notes.append("Rows marked \"limit N\" are quick evaluations (--limit): scored on a seeded subsample of at most "
                     "N test items per subset, so each cell is an estimate (its interval is over those items); never "
                     "bold, never beside a published number, never averaged with a full result.")
    if len(trained_models) == 1:
        notes.append(f"Trained rows start from {next(iter(trained_models))}.")
    notes.append(f"Split: {split}.")
    notes += index.refusal_notes(index.rows, (c.id for c in columns), split)
    if spec.baseline:
        notes.append(f"Cells are differences to {spec.baseline} of the same setting (rows without it are left out).")
    if spec.correlate:
        notes.append(rank_correlation_note(rows, *spec.correlate))
    notes += stat_notes(spread)
    return Built(name=spec.name, title=spec.title, caption=spec.caption, columns=columns, rows=tuple(rows),
                 decimals=spec.decimals, notes=tuple(notes), split=split, spread=spread)


def not_release_mark(index: ResultIndex, key: RowKey, columns: tuple[Column, ...], split: str,
                     data_root: Path | None) -> str:
    """"eval data not a release: <why> (<n> items)" when a result behind the row's cells was not scored on its
    task's release, "" otherwise."""
    return release_mark([r.record for t in sorted(column_tasks(columns)) for r in index.results(key, t, split)],
                        data_root)


def release_mark(records: list[dict], data_root: Path | None) -> str:
    """"eval data not a release: <why> (<n> items)" when one of ``records`` (a row's results) was not scored on its
    task's release, "" otherwise: what every table of ours puts after such a row's label."""
    from usebench.report.pairing_data import not_a_release

    reasons = dict.fromkeys(why for r in records if (why := not_a_release(r, data_root)))
    if not reasons:
        return ""
    items = {r["task"]["name"]: r["task"].get("n_queries") or 0 for r in records}
    return f"eval data not a release: {'; '.join(reasons)} ({sum(items.values()):,} items)"


def _minus_baseline(spec: TableSpec, stats: dict[RowKey, dict[str, SeedStats]]) -> dict[RowKey, dict[str, SeedStats]]:
    """Each row minus the ``spec.baseline`` row of the same experiment, seed by seed (common seeds only); the
    baseline rows themselves and rows without a baseline are dropped. Unchanged without a baseline."""
    if not spec.baseline:
        return stats
    out = {}
    for key, cells in stats.items():
        base = [k for k in stats if k.method == spec.baseline and k.same_experiment(key)]
        if not base and spec.baseline_own_data:  # the one baseline row of the block and backbone, on its own data
            base = [k for k in stats if k.method == spec.baseline and _same_but_data(k, key)]
            base = base if len(base) == 1 else []  # two SimCSE corpora: which one the figure meant is not known
        if key.method == spec.baseline or not base:
            continue
        out[key] = {cid: SeedStats({s: v - stats[base[0]][cid].values[s] for s, v in cell.values.items()
                                    if s in stats[base[0]][cid].values}) for cid, cell in cells.items()}
    return out


def _same_but_data(a: RowKey, b: RowKey) -> bool:
    """Same block, base model, labeled size and config marks; the training corpus and its size aside."""
    return (a.group, a.model, a.labeled_size, a.config) == (b.group, b.model, b.labeled_size, b.config)


def _daggers(spec: TableSpec, key: RowKey, stats: dict[RowKey, dict[str, SeedStats]],
             cells: dict[str, Cell]) -> dict[str, Cell]:
    """Mark the cells where the row beats every ``spec.dagger_vs`` method of its block in every seed."""
    if not spec.dagger_vs or key.method in spec.dagger_vs or (spec.dagger_for and key.method not in spec.dagger_for):
        return cells
    rivals = []
    for method in spec.dagger_vs:
        match = [k for k in stats if k.method == method and k.same_experiment(key)]
        if not match:
            return cells
        rivals.append(match[0])
    return {cid: replace(cell, dagger=beats_all_in_every_seed(stats[key][cid], [stats[r][cid] for r in rivals]))
            for cid, cell in cells.items()}


def _bold(rows: list[Row], columns: tuple[Column, ...], decimals: int,
          tied: dict[str, set[int]] | None = None) -> list[Row]:
    """Bold the best displayed value per column (ties all bold) and, where the column was tested, every row
    ``tied[column]`` holds (not significantly worse than the best); upper-bound rows and rows not evaluated on the
    release neither count nor get bold."""
    best: dict[str, float] = {}
    for col in columns:
        values = [round(r.cells[col.id].mean, decimals) for r in rows if _competes(r, col.id)]
        if values:
            best[col.id] = max(values)
    out = []
    for i, r in enumerate(rows):
        cells = {cid: replace(c, bold=_competes(r, cid) and cid in best and (
            round(c.mean, decimals) == best[cid] or i in (tied or {}).get(cid, set())))
                 for cid, c in r.cells.items()}
        out.append(replace(r, cells=cells))
    return out


def _competes(row: Row, column_id: str) -> bool:
    """Whether the row's cell counts for the column's best (not an upper bound, on the release, over every test item
    rather than a --limit subsample, not missing)."""
    limited = row.key is not None and bool(row.key.limit)
    return not row.upper_bound and not row.not_release and not limited and not row.cells[column_id].missing


def _intervals_and_marks(rows: list[Row], columns: tuple[Column, ...], spec: TableSpec, stats: TableStats,
                         split: str) -> tuple[list[Row], Callable[[Spread], list[str]]]:
    """Each cell's interval, the bold of every column (tested where every competing row has per-item outcomes on the
    same items), and a function giving the notes for a spread."""
    if spec.baseline:  # cells are differences to another row: no interval of one row applies
        return _bold(rows, columns, spec.decimals), lambda spread: [
            "No intervals: the cells are differences to another row; bold marks the best displayed value."]
    missing: dict[str, str] = {}  # row label -> why it has no interval
    out = []
    for r in rows:
        cells = {}
        for cid, c in r.cells.items():
            iv = stats.interval(r.key, cid, split) if r.key is not None and not c.missing else None
            if isinstance(iv, Interval):
                c = replace(c, ci=(iv.low * 100, iv.high * 100))
            elif isinstance(iv, str):
                missing.setdefault(r.label, iv)
            cells[cid] = c
        out.append(replace(r, cells=cells))
    tied, untested = {}, {}
    for col in columns:
        competing = [i for i, r in enumerate(out) if _competes(r, col.id)]
        if not competing:
            continue
        keys = [out[i].key for i in competing]
        marked, why = stats.not_worse(keys, [out[i].cells[col.id].mean for i in competing], col, split) \
            if all(keys) else (set(), "rows without results of their own")
        if why is None:
            tied[col.id] = {competing[i] for i in marked}
        else:
            untested[f"{col.group} {col.header}".strip()] = why
    any_ci = any(c.ci for r in out for c in r.cells.values())
    return _bold(out, columns, spec.decimals, tied), lambda spread: _stat_notes(stats, spread, any_ci, missing,
                                                                                untested, bool(tied))


def _stat_notes(stats: TableStats, spread: Spread, any_ci: bool, missing: dict[str, str], untested: dict[str, str],
                any_tested: bool) -> list[str]:
    """What the ± and the bold mean in this table, and where they could not be computed (and why)."""
    why = next(iter(missing.values()), "") or next(iter(untested.values()), "")
    if not any_ci and not any_tested:  # a store written before per-item outcomes: one note says it all
        return [f"± is the sample std over seeds; bold marks the best displayed value of each column (ties all bold). "
                f"No interval and no test{': ' + why if why else ''}."]
    rows = f"{len(missing)} row(s) ({', '.join(list(missing)[:3])}{' ...' if len(missing) > 3 else ''})"
    if spread == "ci" and any_ci:
        notes = [f"± is the half-width of the {stats.describe_interval()}."]
        if missing:
            notes.append(f"± is the sample std over seeds for {rows} without an interval: {why}.")
    else:
        notes = ["± is the sample std over seeds" + (f" (the {stats.describe_interval()} is in the CSV and JSON)."
                                                    if any_ci else ".")]
        if missing:
            notes.append(f"No interval for {rows}: {why}.")
    if any_tested:
        notes.append(stats.describe_marks())
    if untested:
        notes.append(f"Bold by the displayed value alone (the best, ties all bold) in {', '.join(untested)}: "
                     f"{next(iter(untested.values()))}.")
    return notes


def rank_correlation(pairs: list[tuple[float, float]]) -> float | None:
    """Spearman's rho of the pairs (scipy); None for fewer than 3 pairs or a constant column."""
    from scipy.stats import spearmanr

    if len(pairs) < 3:
        return None
    rho = spearmanr([p[0] for p in pairs], [p[1] for p in pairs]).statistic
    return None if math.isnan(float(rho)) else float(rho)


def rank_correlation_note(rows: list[Row] | tuple[Row, ...], a: str, b: str, who: str = "ours") -> str:
    """The line printed under a table: Spearman's rho between columns ``a`` and ``b`` over the rows with both."""
    pairs = [(r.cells[a].mean, r.cells[b].mean) for r in rows
             if a in r.cells and b in r.cells and not r.cells[a].missing and not r.cells[b].missing]
    rho = rank_correlation(pairs)
    names = f"{COLUMNS[a].header} vs {COLUMNS[b].header}" if a in COLUMNS and b in COLUMNS else f"{a} vs {b}"
    if rho is None:
        return f"Rank correlation ({who}, {names}): n/a ({len(pairs)} rows with both; needs >= 3 and variation)."
    return f"Rank correlation ({who}, {names}): Spearman rho = {rho:.2f} over {len(pairs)} rows."
