"""`bench reproduce`'s last mile: write a recipe's tables with the report (:func:`usebench.report.make.make_report`)
and say, per table, which of the paper's rows were made, which were not (and why), and which can never be made here.

Which rows a table has and whether ours fills each is the skeleton's answer
(:func:`usebench.report.skeleton.table_status`, one :class:`SlotStatus` per published row); this module only
selects the rows of the recipe's table (its ``reference``), applies ``--methods`` (rows of methods left out are
"not selected", not failures) and the recipe's never-reproducible rows, and checks the files were written.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.errors import BenchError
from usebench.reproduce.recipes import Known, Recipe, TableEntry, load_recipe

# Report figures and derived tables (not `--table` names): the file that says each was written, under --out.
FIGURE_FILES = {"pretraining": "plots/pretraining.png", "corpus-size": "plots/corpus-size.png",
                "pretraining-breakeven": "pretraining-breakeven.md", "thesis-alpha": "plots/thesis-alpha.png",
                "loss-curves": "plots/loss-curves.png"}
States = ("made", "not made", "never", "not selected")


def known_names() -> Known:
    """The report's tables and figures and the published tables' row labels, for checking a recipe."""
    from usebench.report.catalog import artifacts
    from usebench.report.reference import load_reference

    writes = frozenset(a.name for a in artifacts() if "<" not in a.name and "/" not in a.name)
    published = {name: tuple(r["label"] for r in t["rows"]) for name, t in load_reference()["tables"].items()}
    return Known(writes, published)


def load_checked_recipe(paper_or_path: str | Path) -> Recipe:
    """A recipe checked down to its report names (tables, figures, published tables and rows)."""
    return load_recipe(paper_or_path, known_names())


@dataclass(frozen=True)
class RowLine:
    """One published row of a recipe table, as made here or not."""

    report: str
    block: str
    label: str
    state: str  # one of States
    reason: str = ""


def skeleton_of(name: str, entry: TableEntry, paper: str) -> str | None:
    """The published table whose rows report table ``name`` is checked against for this recipe table of
    ``paper``: the report table's skeleton when the recipe table names it, or names none and the skeleton is
    ``paper``'s own (a recipe table written into another paper's table, e.g. a user's recipe writing sts-table,
    whose skeleton is TSDAE's Table 11, is not held to it)."""
    from usebench.report.reference import load_reference
    from usebench.stats.table_specs import TABLES

    from usebench.report.tsdae_analyses import SECTION_SLOTS

    skeleton = TABLES.get(name).skeleton if name in TABLES.names() else None
    if not skeleton and name in SECTION_SLOTS:  # laid out by its own builder: its first published table names it
        skeleton = SECTION_SLOTS[name][0]
    if not skeleton:
        return None
    if entry.reference is not None:
        return skeleton if entry.reference == skeleton else None
    return skeleton if load_reference()["tables"][skeleton].get("source") == paper else None


@dataclass
class TableOutcome:
    """What `bench reproduce` did for one recipe table."""

    entry: TableEntry
    written: list[str] = field(default_factory=list)
    not_written: list[tuple[str, str]] = field(default_factory=list)  # (name, why)
    rows: list[RowLine] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every file written and every row it can make here made (never and not-selected rows aside)."""
        return not self.not_written and all(r.state in ("made", "never", "not selected") for r in self.rows)


def write_tables(tables: list[TableEntry], results_dir: Path, out: Path,
                 formats: tuple[str, ...]) -> dict[str, str]:
    """Write the selected tables, each by its own report (a table the store cannot build, e.g. runs that may not
    be averaged, is said and does not stop the others), then the figures. A recipe table held to a published
    table that its report table does not put first is written to ``out/<reference>/`` beside that table (Table 9
    beside paper-table2). Returns why each table or figure that failed was not written."""
    from usebench.report.make import ReportOptions, make_report
    from usebench.stats.table_specs import TABLES

    failed: dict[str, str] = {}
    done: set[tuple[str, str | None]] = set()
    for entry in tables:
        for name in entry.writes:
            own = _own_reference(name, entry)
            if name not in TABLES.names() or (name, own) in done:
                continue
            done.add((name, own))
            opts = ReportOptions(results_dir=results_dir, out=out / own if own else out, tables=(name,),
                                 formats=formats, reference_source=own,  # type: ignore[arg-type]
                                 plots=name in ("thesis-fig5.3", "thesis-fig5.4"))  # drawn from the table
            try:
                make_report(opts)
            except BenchError as e:
                failed[name] = str(e)
    figures = [n for t in tables for n in t.writes if n in FIGURE_FILES]
    if figures:
        try:  # the figures and Table 10 are drawn from the whole store
            make_report(ReportOptions(results_dir=results_dir, out=out, tables=(), formats=formats))  # type: ignore[arg-type]
        except BenchError as e:
            failed.update({n: str(e) for n in figures})
    return failed


def _own_reference(name: str, entry: TableEntry) -> str | None:
    """The published table a recipe table is written beside when its report table puts another first."""
    from usebench.stats.table_specs import TABLES

    if name in TABLES.names() and entry.reference and TABLES.get(name).references[:1] != (entry.reference,):
        return entry.reference
    return None


def table_outcomes(tables: list[TableEntry], paper: str, results_dir: Path, out: Path,
                   methods: frozenset[str] | None = None, failed: dict[str, str] | None = None) -> list[TableOutcome]:
    """Per recipe table: the files written or not (``failed``: why the report could not write some), and each
    published row's state."""
    from usebench.stats.table_rows import index_results
    from usebench.stats.table_specs import TABLES
    from usebench.store import iter_results

    results = list(iter_results(results_dir)) if results_dir.is_dir() else None
    index = index_results(results) if results is not None else None
    outcomes = []
    for entry in tables:
        oc = TableOutcome(entry)
        for name in entry.writes:
            where = _written(name, entry, out)
            if where is not None and (failed or {}).get(name):
                where = f"{where}: {failed[name]}"
            (oc.written.append(name) if where is None else oc.not_written.append((name, where)))
            if name in TABLES.names():
                oc.rows += _rows(name, entry, paper, index, methods, results)
        outcomes.append(oc)
    return outcomes


def _written(name: str, entry: TableEntry, out: Path) -> str | None:
    """None when ``name`` was written under ``out``; else why not."""

    if name in FIGURE_FILES:
        path = out / FIGURE_FILES[name]
        return None if path.is_file() else f"{path} not written (its runs left no results to draw)"
    own = _own_reference(name, entry)
    folder = out / own if own else out
    found = [p for p in folder.glob(f"{name}.*") if p.suffix in (".md", ".tex", ".csv", ".json")]
    return None if found else f"{folder / name}.* not written"


def _rows(name: str, entry: TableEntry, paper: str, index: Any,
          methods: frozenset[str] | None, results: list[Any] | None = None) -> list[RowLine]:
    """The published rows of report table ``name`` (its skeleton's slots), each with its state. A recipe table
    held to another published table than the report table's skeleton (Table 9 beside paper-table2) has no slots
    to check: only that its file was written."""

    skeleton = skeleton_of(name, entry, paper)
    if skeleton is None:
        return _empty_table(name, entry, index, methods)
    if index is None:
        return [RowLine(name, "", "(all rows)", "not made", "no results store")]
    try:
        from usebench.report.skeleton import table_status
    except ImportError:
        return [RowLine(name, "", "(all rows)", "not made", "row status unavailable: usebench.report.skeleton "
                        "is not in this install")]
    from usebench.report.tsdae_analyses import SECTION_SLOTS

    try:
        slots = section_status(name, results or []) if name in SECTION_SLOTS else table_status(name, index)
    except BenchError as e:  # e.g. runs that may not be averaged in one row
        return [RowLine(name, "", "(all rows)", "not made", str(e))]
    published = [r for t in SECTION_SLOTS.get(name, (skeleton,)) for r in _published_rows(t)]
    match = {(r.get("block", ""), r["label"]): (r.get("match") or {}) for r in published}
    never = {n.label: n.reason for n in entry.never}
    return [_line(name, s, match.get((s.block, s.label)), never, methods) for s in slots]


def _empty_table(name: str, entry: TableEntry, index: Any, methods: frozenset[str] | None) -> list[RowLine]:
    """A table with no published rows to check (DenoSent's Table 2 and Figure 3): written with no row of ours at all,
    although the recipe ran runs for it, is not made ("rows made: 0 of 0" read as complete)."""
    from usebench.report.skeleton import build_with_skeleton
    from usebench.stats.table_specs import TABLES
    from usebench.report.tsdae_analyses import SECTION_SLOTS

    if index is None or name not in TABLES.names() or name in SECTION_SLOTS:
        return []
    chosen = [m for r in entry.runs for m in r.methods if methods is None or m in methods]
    chosen += [e.method for e in entry.evals if methods is None or e.method in methods]
    if not chosen:  # --methods left none of its runs: nothing was asked of it
        return []
    try:
        built = build_with_skeleton(TABLES.get(name), index, intervals=False)  # which rows exist: no statistics
    except BenchError as e:
        return [RowLine(name, "", "(all rows)", "not made", str(e))]
    if any(not all(c.missing for c in r.cells.values()) for r in built.rows):
        return []
    return [RowLine(name, "", "(all rows)", "not made", "the table has no row of ours: its runs left no result it "
                    "can show (for a table of differences, no row with its baseline)")]


def section_status(name: str, results: list[Any]) -> list[Any]:
    """Slot by slot, as :func:`usebench.report.skeleton.table_status`, for a table its own builder lays out
    (TSDAE Tables 4, 9 and App. A, the thesis' studies and eProduct tables: ``tsdae_analyses.SECTION_BUILDERS``),
    whose slots are the rows of the published tables ``SECTION_SLOTS[name]`` in order."""
    from usebench.report.reference import entries
    from usebench.report.skeleton import slot_statuses
    from usebench.stats.table_specs import TABLES
    from usebench.report.tsdae_analyses import SECTION_BUILDERS, SECTION_SLOTS

    built = SECTION_BUILDERS[name](results, TABLES.get(name), None).built
    return slot_statuses(name, [e for t in SECTION_SLOTS[name] for e in entries(t)], built)


def _line(name: str, slot: Any, match: dict[str, Any] | None, never: dict[str, str],
          methods: frozenset[str] | None) -> RowLine:
    if slot.never or slot.label in never:
        return RowLine(name, slot.block, slot.label, "never", slot.reason or never.get(slot.label, ""))
    if slot.made:  # a row --methods did not name can still be filled (a setting's chain trained with its run)
        return RowLine(name, slot.block, slot.label, "made")
    method = (match or {}).get("method")
    if methods is not None and method and method not in methods:
        return RowLine(name, slot.block, slot.label, "not selected", f"--methods leaves out {method}")
    return RowLine(name, slot.block, slot.label, "not made", slot.reason)


def _published_rows(table: str) -> list[dict[str, Any]]:
    from usebench.report.reference import load_reference

    return load_reference()["tables"][table]["rows"]


__all__ = ["FIGURE_FILES", "RowLine", "TableOutcome", "known_names", "load_checked_recipe", "skeleton_of",
           "table_outcomes", "write_tables"]
