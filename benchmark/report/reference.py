"""The papers' published numbers (``benchmark/report/paper_reference.json``): lookup for our rows, the
ours-vs-paper comparison (a column set per column: ours, paper, difference), and the published tables."""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from benchmark.errors import BenchError
from benchmark.report.build import Built, Cell, Row, rank_correlation_note
from benchmark.report.rows import RowKey
from benchmark.report.tables import COLUMNS, Column, TableSpec


@lru_cache(maxsize=1)
def load_reference() -> dict[str, Any]:
    """The reference data shipped with the package."""
    text = resources.files("benchmark.report").joinpath("paper_reference.json").read_text(encoding="utf-8")
    return json.loads(text)


@dataclass(frozen=True)
class RefEntry:
    """One published row: where it comes from and its values in points (x100)."""

    table_id: str
    source: str  # "TSDAE Table 2"
    label: str
    block: str
    model: str | None
    match: dict[str, str] | None
    values: dict[str, float | None]
    std: dict[str, float]
    marks: dict[str, str]
    note: str | None = None


def entries(table_id: str) -> list[RefEntry]:
    """The rows of one published table."""
    data = load_reference()
    if table_id not in data["tables"]:
        raise BenchError(f"unknown reference table {table_id!r} (known: {', '.join(sorted(data['tables']))})")
    table = data["tables"][table_id]
    source = f"{table['source'].replace('tsdae', 'TSDAE').replace('denosent', 'DenoSent').replace('paser', 'PaSeR')}"
    return [RefEntry(table_id=table_id, source=f"{source} {table['table']}", label=r["label"], block=r["block"],
                     model=r.get("model"), match=r.get("match"), values=r["values"], std=r.get("std", {}),
                     marks=r.get("marks", {}), note=r.get("note")) for r in table["rows"]]


def same_model(ours: str, ref: str | None) -> bool:
    """Our model names the reference's (an HF id, or a local path ending in it)."""
    if not ref or not ours:
        return False
    ours = ours.rstrip("/")
    return ours == ref or ours.endswith("/" + ref) or ours.rsplit("/", 1)[-1] == ref.rsplit("/", 1)[-1]


def matches(entry: RefEntry, key: RowKey) -> bool:
    """Whether a published row is the counterpart of our row (method, and group/model/pooling when given)."""
    if not entry.match:
        return False
    for field_, want in entry.match.items():
        have = {"method": key.method, "group": key.group, "pooling": key.pooling}.get(field_)
        ok = same_model(key.model, want) if field_ == "model" else have == want
        if not ok:
            return False
    return True


def find_reference(table_ids: tuple[str, ...], key: RowKey) -> RefEntry | None:
    """The published counterpart of our row: one trained from the same model if any, else the first match."""
    found = [e for t in table_ids for e in entries(t) if matches(e, key)]
    same = [e for e in found if same_model(key.model, e.model)]
    return (same or found or [None])[0]


@dataclass(frozen=True)
class Comparison:
    """Ours vs paper for the rows of a built table that have a published counterpart."""

    name: str
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Row, RefEntry], ...]
    decimals: int
    notes: tuple[str, ...]

    def delta(self, row: Row, entry: RefEntry, col_id: str) -> float | None:
        ours, paper = row.cells[col_id], entry.values.get(col_id)
        return None if ours.missing or paper is None else ours.mean - paper


def compare(built: Built, spec: TableSpec, source: str | None = None) -> Comparison:
    """Pair each of our rows with its published counterpart (``source`` restricts to one reference table)."""
    table_ids = (source,) if source else spec.references
    pairs = []
    for row in built.rows:
        entry = find_reference(table_ids, row.key) if row.key else None
        if entry is not None:
            pairs.append((row, entry))
    notes = ["Ours: mean over seeds; paper: as printed; Δ = ours − paper (points)."]
    mismatched = sorted({f"{r.label} ({r.key.model} vs {e.model})" for r, e in pairs
                         if r.key and e.model and not same_model(r.key.model, e.model)})
    if mismatched:
        notes.append("Different base model than the paper: " + "; ".join(mismatched) + ".")
    if not pairs:
        notes.append("None of these rows has a published counterpart (see the published table).")
    return Comparison(name=f"{built.name}-vs-paper", title=f"{built.title}: ours vs paper",
                      columns=built.columns, rows=tuple(pairs), decimals=built.decimals, notes=tuple(notes))


def published(spec: TableSpec) -> list[Built]:
    """The spec's published tables as built tables (paper's values and daggers, no bold recomputation)."""
    out = []
    for table_id in spec.references:
        data = load_reference()["tables"][table_id]
        cols = tuple(COLUMNS[c] for c in data["columns"])
        rows = []
        for e in entries(table_id):
            cells = {c.id: Cell(e.values.get(c.id), e.std.get(c.id), None, dagger=e.marks.get(c.id) == "dagger")
                     for c in cols}
            label = e.label + (" *" if e.marks and any(m != "dagger" for m in e.marks.values()) else "")
            rows.append(Row(label=label, block=e.block, cells=cells))
        citation = load_reference()["sources"][data["source"]]["citation"]
        notes = [f"Published: {entries(table_id)[0].source} — {data['metric']}. Source: {citation}"]
        notes += sorted({f"{e.label}: {e.note}" for e in entries(table_id) if e.note})
        if spec.correlate and all(c in data["columns"] for c in spec.correlate):
            notes.append(rank_correlation_note(rows, *spec.correlate, who="paper"))
        out.append(Built(name=table_id, title=f"Published: {entries(table_id)[0].source}", caption=data["metric"],
                         columns=cols, rows=tuple(rows), decimals=2 if "denosent" in table_id or "paser" in table_id
                         else 1, notes=tuple(notes), show_n=False))
    return out
