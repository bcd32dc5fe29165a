"""The papers' published numbers (``benchmark/report/paper_reference.json``): lookup for our rows, the
ours-vs-paper comparison (a column set per column: ours, paper, difference), and the published tables."""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from benchmark.errors import BenchError
from benchmark.report.build import Built, Cell, Row, rank_correlation_note
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
    settings: dict[str, Any] | None = None  # the row's run config values a run must have (flat keys), if any


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


def settings_gap(entry: RefEntry, values: Mapping[str, Any] | None) -> list[str]:
    """The settings of a published row that our row's config does not meet ("key: ours vs paper"); a row without
    ``settings`` asks for none. ``values``: the flat config values all of our row's results share."""
    gaps = []
    for k, want in (entry.settings or {}).items():
        have = (values or {}).get(k)
        if k == "model":
            ok = same_model(str(have or ""), str(want))
        elif isinstance(want, float) and isinstance(have, (int, float)) and not isinstance(have, bool):
            ok = abs(float(have) - want) <= 1e-9 * max(1.0, abs(want))
        else:
            ok = have == want
        if not ok:
            gaps.append(f"{k}: {have!r} vs {want!r}")
    return gaps


def find_reference(table_ids: tuple[str, ...], key: RowKey,
                   values: Mapping[str, Any] | None = None) -> RefEntry | None:
    """The published counterpart of our row: one trained from the same model if any, else the first match.
    A published row with ``settings`` is a counterpart only of a row whose config meets every one of them."""
    found = [e for t in table_ids for e in entries(t) if matches(e, key) and not settings_gap(e, values)]
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


@dataclass(frozen=True)
class Setting:
    """How a row was trained: backbone, steps (with batch size) and training corpus, as words."""

    backbone: str
    steps: str
    corpus: str
    n_steps: int | None = None  # the step count, where one is known (to flag a gap)
    values: Mapping[str, Any] = field(default_factory=dict)  # the config values every result of the row shares


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
            out[key] = Setting(key.model, "no training", "none (no training)", values=shared_values(records))
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
        out[key] = Setting(key.model, words, corpus, n, shared_values(records))
    return out


def shared_values(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The flat config values (a single stage's config keys, its preset and the method) all ``records`` share."""
    shared: dict[str, Any] | None = None
    for r in records:
        cfg = r.get("config", {}) if isinstance(r.get("config"), dict) else {}
        inner = cfg.get("config") if isinstance(cfg.get("config"), dict) else cfg
        one = {**inner, "preset": cfg.get("preset"), "method": r["method"]["name"]}
        shared = one if shared is None else {k: v for k, v in shared.items() if k in one and one[k] == v}
    return shared or {}


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
            settings: Mapping[RowKey, Setting] | None = None) -> Comparison:
    """Pair each of our rows with its published counterpart (``source`` restricts to one reference table);
    with ``settings`` (ours, see :func:`our_settings`) the notes state each pair's setting gap."""
    table_ids = (source,) if source else spec.references
    pairs, unmet = [], []
    for row in built.rows:
        values = settings[row.key].values if settings and row.key in settings else None
        entry = find_reference(table_ids, row.key, values) if row.key else None
        if entry is not None:
            pairs.append((row, entry))
        elif row.key is not None:
            unmet += _unmet_settings(table_ids, row, values)
    notes = ["Ours: mean over seeds; paper: as printed; Δ = ours − paper (points)."] + unmet
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


def _unmet_settings(table_ids: tuple[str, ...], row: Row, values: Mapping[str, Any] | None) -> list[str]:
    """A note for a row that only the settings keep from a published row of the same method: which differ."""
    close = [(e, settings_gap(e, values)) for t in table_ids for e in entries(t) if matches(e, row.key)]
    close = sorted((c for c in close if c[1]), key=lambda c: len(c[1]))
    if not close:
        return []
    entry, gaps = close[0]
    return [f"{row.label}: not compared with {entry.source} {entry.label}, whose setting it does not meet "
            f"(ours vs paper: {'; '.join(gaps)})."]


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
