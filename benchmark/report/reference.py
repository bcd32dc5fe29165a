"""The papers' published numbers (``benchmark/report/paper_reference.json``): lookup for our rows, the
ours-vs-paper comparison (a column set per column: ours, paper, difference), and the published tables.

The file: ``{"about", "sources": {<paper>: {citation, url, text}}, "tables": {<table id>: {source, table, metric,
columns, [decimals], setting, rows: [...]}}}``. A row: ``label``, ``block``, ``match`` (which of our rows it is
the counterpart of: ``method`` and optionally ``group``/``model``/``pooling``; null = none), ``model``, ``values``
(points, as printed), optional ``std``/``marks``/``note``, and ``settings``, the setting the published number
assumes::

    "settings": {"preset": "paper" | ["paper", "official"] | null,   # our preset(s) that are the row's run
                 "model": "bert-base-uncased",                       # backbone (evaluated model if untrained)
                 "train_data": "none" | "in-domain" | "file:<glob>" | "<not reproducible here>",
                 "config": {"paraphrases": true, "top_k": 5},        # what the row's table varies / defines it
                 "precision": "fp32" | "fp16" | null,                # the published run's training precision
                 "note": "..."}                                      # optional

A row of ours is compared only with a published row whose ``match`` fits it *and* whose settings it meets
(:mod:`benchmark.report.row_settings`); a row that fits some published rows but meets none is shown without a
published neighbour, and the comparison's notes say which setting differs. The table-level ``setting`` is prose
(corpus and steps by method) printed beside each compared pair.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from benchmark.errors import BenchError
from benchmark.report.build import Built, Cell, Row, rank_correlation_note
from benchmark.report.row_settings import RunSettings, same_model, unmet
from benchmark.report.rows import UNTRAINED, ResultIndex, RowKey, find_key
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
    setting: dict[str, Any] | None = None  # the table's training setting (corpus, steps), see paper_setting
    settings: dict[str, Any] | None = None  # the row's own settings (module docstring), checked before comparing


def entries(table_id: str) -> list[RefEntry]:
    """The rows of one published table."""
    data = load_reference()
    if table_id not in data["tables"]:
        raise BenchError(f"unknown reference table {table_id!r} (known: {', '.join(sorted(data['tables']))})")
    table = data["tables"][table_id]
    source = f"{table['source'].replace('tsdae', 'TSDAE').replace('denosent', 'DenoSent').replace('paser', 'PaSeR')}"
    return [RefEntry(table_id=table_id, source=f"{source} {table['table']}", label=r["label"], block=r["block"],
                     model=r.get("model"), match=r.get("match"), values=r["values"], std=r.get("std", {}),
                     marks=r.get("marks", {}), note=r.get("note"), setting=table.get("setting"),
                     settings=r.get("settings"))
            for r in table["rows"]]


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


def find_reference(table_ids: tuple[str, ...], key: RowKey, run: RunSettings | None = None
                   ) -> tuple[RefEntry | None, list[tuple[RefEntry, list[str]]]]:
    """(the published counterpart of our row, the rows it fits but whose settings it misses, with what it misses).
    Without ``run`` (no results to read settings from): one trained from the same model if any, else the first."""
    found = [e for t in table_ids for e in entries(t) if matches(e, key)]
    if run is None:
        same = [e for e in found if same_model(key.model, e.model)]
        return (same or found or [None])[0], []
    gaps = [(e, unmet(e.settings, run)) for e in found]
    met = [e for e, g in gaps if not g]
    return (met[0] if met else None), [(e, g) for e, g in gaps if g]


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


@dataclass(frozen=True)
class Setting:
    """How a row was trained: backbone, steps (with batch size) and training corpus, as words."""

    backbone: str
    steps: str
    corpus: str
    n_steps: int | None = None  # the step count, where one is known (to flag a gap)


def _lookup(field_: Any, key: RowKey) -> str:
    """A setting field: a string, or a map looked up by method, then ``group:<block>``, then ``default``."""
    if not isinstance(field_, dict):
        return str(field_ or "not stated")
    for k in (key.method, f"group:{key.group}", "default"):
        if k in field_:
            return str(field_[k])
    return "not stated"


def paper_setting(entry: RefEntry, key: RowKey) -> Setting:
    """The published row's setting (its model; the table's corpus and steps for our row's method/block)."""
    setting = entry.setting or {}
    steps = _lookup(setting.get("steps"), key)
    m = re.match(r"\s*(\d+(?:\.\d+)?)\s*([KkM]?)\s+steps", steps)
    n = int(float(m.group(1)) * {"": 1, "k": 1000, "K": 1000, "M": 10**6}[m.group(2)]) if m else None
    return Setting(entry.model or "not stated", steps, _lookup(setting.get("corpus"), key), n)


def our_settings(index: ResultIndex) -> dict[RowKey, Setting]:
    """Our rows' settings from their results' configs (steps and batch size; corpus label and size)."""
    out = {}
    for key, cells in index.rows.items():
        records = [r.record for results in cells.values() for r in results]
        if key.method in UNTRAINED:
            out[key] = Setting(key.model, "no training", "none (no training)")
            continue
        steps = sorted({str(find_key(r.get("config", {}), "max_steps") or "?") for r in records})
        batch = sorted({str(find_key(r.get("config", {}), "batch_size") or "?") for r in records})
        corpora = {}
        for r in records:
            c = r.get("config", {}).get("corpus") or {}
            own = c.get("label") == r["task"]["name"]
            label = "each task's own unlabeled sentences (in-domain)" if own else str(c.get("label") or "not recorded")
            corpora.setdefault(label, set()).add(c.get("sentences"))
        corpus = "; ".join(f"{lab} ({', '.join(f'{n:,}' for n in sorted(x for x in ns if x))} sent.)"
                           if any(ns) else lab for lab, ns in corpora.items())
        n = int(steps[0]) if len(steps) == 1 and steps[0].isdigit() else None
        words = "steps not recorded" if steps == ["?"] else f"{'/'.join(steps)} steps at batch {'/'.join(batch)}"
        out[key] = Setting(key.model, words, corpus, n)
    return out


def setting_gap(label: str, entry: RefEntry, ours: Setting, paper: Setting) -> str:
    """One line: our row's backbone, steps and corpus beside the paper's, with the differences named."""
    gaps = []
    if not same_model(ours.backbone, paper.backbone):
        gaps.append("backbone")
    if ours.n_steps is not None and paper.n_steps is not None and ours.n_steps != paper.n_steps:
        gaps.append("steps")
    if ours.corpus.startswith("none") != paper.corpus.startswith("none"):
        gaps.append("corpus")
    verdict = f"differs in {', '.join(gaps)}" if gaps else "no gap detected in backbone or steps; compare corpora"
    return (f"Setting of {label} vs {entry.source} {entry.label}: {verdict}. Ours: {ours.backbone}; {ours.steps}; "
            f"corpus {ours.corpus}. Paper: {paper.backbone}; {paper.steps}; corpus {paper.corpus}.")


def compare(built: Built, spec: TableSpec, source: str | None = None,
            settings: Mapping[RowKey, Setting] | None = None,
            runs: Mapping[RowKey, RunSettings] | None = None) -> Comparison:
    """Pair each of our rows with its published counterpart (``source`` restricts to one reference table);
    with ``runs`` (:func:`benchmark.report.row_settings.run_settings`) only a published row whose settings the run
    meets, and a note for each row left without one saying what differs; with ``settings`` (ours, see
    :func:`our_settings`) the notes state each pair's setting gap."""
    table_ids = (source,) if source else spec.references
    pairs, unpaired = [], []
    for row in built.rows:
        if row.key is None:
            continue
        entry, missed = find_reference(table_ids, row.key, runs.get(row.key) if runs is not None else None)
        if entry is not None:
            pairs.append((row, entry))
        elif missed:
            unpaired.append(_unpaired_note(row.label, missed))
    notes = ["Ours: mean over seeds; paper: as printed; Δ = ours − paper (points)."] + unpaired
    mismatched = sorted({f"{r.label} ({r.key.model} vs {e.model})" for r, e in pairs
                         if r.key and e.model and not same_model(r.key.model, e.model)})
    if mismatched:
        notes.append("Different base model than the paper: " + "; ".join(mismatched) + ".")
    if not pairs:
        notes.append("None of these rows has a published counterpart (see the published table).")
    for row, entry in pairs:
        if settings and row.key in settings:
            notes.append(setting_gap(row.label, entry, settings[row.key], paper_setting(entry, row.key)))
    return Comparison(name=f"{built.name}-vs-paper", title=f"{built.title}: ours vs paper",
                      columns=built.columns, rows=tuple(pairs), decimals=built.decimals, notes=tuple(notes))


def _unpaired_note(label: str, missed: list[tuple[RefEntry, list[str]]]) -> str:
    """``label`` has no published neighbour: the rows it would fit and the settings it does not meet."""
    shown = [f"{e.source} {e.label} assumes {', '.join(g)}" for e, g in missed[:3]]
    more = f" (and {len(missed) - 3} more rows)" if len(missed) > 3 else ""
    return f"No published neighbour for {label}: " + "; ".join(shown) + more + "."


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
                         columns=cols, rows=tuple(rows), decimals=data.get("decimals", 2 if "denosent" in table_id or
                                                                          "paser" in table_id else 1),
                         notes=tuple(notes), show_n=False))
    return out
