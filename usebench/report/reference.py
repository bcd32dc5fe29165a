"""The papers' published numbers (``usebench/report/paper_reference.json``): lookup for our rows, the
ours-vs-paper comparison (a column set per column: ours, paper, difference), and the published tables.

The file: ``{"about", "sources": {<paper>: {citation, url, text}}, "tables": {<table id>: {source, table, metric,
columns, [decimals], setting, rows: [...]}}}``. A row: ``label``, ``block``, ``match`` (which of our rows it is
the counterpart of: ``method`` and optionally ``group``/``model``/``pooling``; null = none), ``model``, ``values``
(points, as printed), optional ``std``/``marks``/``note``, and ``settings``, the setting the published number
assumes::

    "settings": {"preset": "paper" | ["paper", "official"] | null,   # our preset(s) that are the row's run
                 "model": "bert-base-uncased",       # backbone, by its fingerprint in published_backbones.json
                 "train_data": "none" | "in-domain"  # the evaluated task's own release (hashed from the data root)
                             | {"source": "denosent/denosent-pairs"}  # a usebench/data/sources.json release
                             | {"unpublished": "thesis-openwebtext-1m", "what": "..."}  # --user-sample only
                             | "<not reproducible here>",
                 "dev_data": {...},                  # optional: the validation sentences of dev_metric=loss
                 "chains": [["sbert-nli", "sbert-stsb", "tsdae"]],  # optional: the stages of a chain row
                 "config": {"paraphrases": true, "top_k": 5},  # applied to the resolved preset (all keys compared)
                 "precision": "fp32" | "fp16" | null,  # the published run's precision (the preset's amp says it)
                 "note": "..."}                                      # optional

A row of ours is compared only with a published row whose ``match`` fits it (method, block, pooling: which of
our rows it is the counterpart of) *and* whose setting every result of the row equals, by content
(:mod:`usebench.report.pairing`: each stage's resolved config, the backbone's fingerprint, the training data's
sha256). A row that fits some published rows but equals none is shown without a published neighbour, and the
comparison's notes list the exact keys that differ, ours against the paper's. The table-level ``setting`` is
prose (corpus and steps by method or ``group:<block>``) printed beside each compared pair.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from usebench.errors import BenchError
from usebench.report.build import Built, Cell, Row, rank_correlation_note
from usebench.report.pairing import PairingContext, record_stages
from usebench.report.row_settings import RunSettings, verdict
from usebench.stats.table_rows import UNTRAINED, ResultIndex, RowKey, find_key
from usebench.stats.table_specs import COLUMNS, Column, TableSpec


@lru_cache(maxsize=1)
def load_reference() -> dict[str, Any]:
    """The reference data shipped with the package."""
    text = resources.files("usebench.report").joinpath("paper_reference.json").read_text(encoding="utf-8")
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
    seeds: int | None = None  # how many seeds the published number averages (None: the paper does not say)


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
                     settings=_row_settings(table, r), seeds=table.get("seeds"))
            for r in table["rows"]]


def _row_settings(table: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any] | None:
    """A row's ``settings`` with what its table states for every row: the split its numbers are on (``split``,
    default test) and, for an untrained row, the pooling its ``match`` names (how the backbone was scored)."""
    settings = row.get("settings")
    if settings is None:
        return None
    pooling = (row.get("match") or {}).get("pooling")
    extra = {"pooling": pooling} if pooling and not settings.get("preset") else {}
    return {**settings, "split": table.get("split", "test"), **extra}


def matches(entry: RefEntry, key: RowKey) -> bool:
    """Whether a published row is the counterpart of our row: its method, and its block and pooling when given.
    A ``model`` in ``match`` is no test here: the backbone is decided by its fingerprint
    (:func:`usebench.report.pairing.backbone_gaps`), never by a name."""
    if not entry.match:
        return False
    for field_, want in entry.match.items():
        if field_ == "model":
            continue
        if {"method": key.method, "group": key.group, "pooling": key.pooling}.get(field_) != want:
            return False
    return True


def find_reference(table_ids: tuple[str, ...], key: RowKey, run: RunSettings | None = None,
                   ctx: PairingContext | None = None
                   ) -> tuple[RefEntry | None, list[tuple[RefEntry, list[str]]], tuple[str, ...]]:
    """(the published row whose setting our row's results equal, the rows it fits but whose setting differs with
    the keys that differ, the pair's notes). Without ``run`` (no results to read a setting from) nothing pairs."""
    found = [e for t in table_ids for e in entries(t) if matches(e, key)]
    if run is None:
        return None, [], ()
    verdicts = [(e, verdict(e.settings, run, str(e.match["method"]) if e.match else "", ctx)) for e in found]
    met = [(e, v) for e, v in verdicts if v.paired]
    missed = [(e, list(v.gaps)) for e, v in verdicts if not v.paired]
    return (met[0][0], missed, met[0][1].notes) if met else (None, missed, ())


@dataclass(frozen=True)
class Comparison:
    """Ours vs paper for the rows of a built table that have a published counterpart."""

    name: str
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Row, RefEntry], ...]
    decimals: int
    notes: tuple[str, ...]
    # per pair, "n of N seeds" (shown beside the Δ: a one-seed mean beside a five-seed one is said, never hidden)
    seeds: tuple[str, ...] = ()
    # per row without a published neighbour: (our label, ((published row, every key that differs), ...)); the notes
    # say the main differences, this holds them all (the JSON's "unpaired", the HTML page's collapsible detail)
    unpaired: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()

    def delta(self, row: Row, entry: RefEntry, col_id: str) -> float | None:
        ours, paper = row.cells[col_id], entry.values.get(col_id)
        return None if ours.missing or paper is None else ours.mean - paper

    def seeds_of(self, i: int) -> str:
        return self.seeds[i] if i < len(self.seeds) else ""


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


LEXICAL = frozenset({"bm25"})  # rows with no backbone: BM25 scores words, not a model's embeddings


def paper_setting(entry: RefEntry, key: RowKey) -> Setting:
    """The published row's setting (its model; the table's corpus and steps for our row's method/block)."""
    setting = entry.setting or {}
    steps = _lookup(setting.get("steps"), key)
    m = re.match(r"\s*(\d+(?:\.\d+)?)\s*([KkM]?)\s+steps", steps)
    n = int(float(m.group(1)) * {"": 1, "k": 1000, "K": 1000, "M": 10**6}[m.group(2)]) if m else None
    backbone = "none (lexical)" if key.method in LEXICAL else entry.model or "not stated"
    return Setting(backbone, steps, _lookup(setting.get("corpus"), key), n)


def _stage_steps(stage: Mapping[str, Any]) -> str:
    """``100000 steps at batch 8`` or ``1 epoch at batch 512`` for one stage's config."""
    cfg = stage.get("config") or {}
    epochs, steps = cfg.get("epochs"), cfg.get("max_steps")
    budget = (f"{epochs:g} epoch{'s' if epochs != 1 else ''}" + (f" (cap {steps} steps)" if steps else "")
              if epochs else f"{steps} steps" if steps else "steps not recorded")
    return f"{budget} at batch {cfg.get('batch_size', '?')}"


def _stage_corpus(stage: Mapping[str, Any], task: str) -> str:
    data = stage.get("data") or {}
    label = str(data.get("label") or "not recorded")
    if label == task:
        label = "each task's own unlabeled sentences (in-domain)" if data.get("kind") == "corpus" else \
            "each task's own labeled pairs (in-domain)"
    return label


def our_settings(index: ResultIndex) -> dict[RowKey, Setting]:
    """Our rows' settings from their results' configs: each stage's budget and batch size, and its training data
    (a chain lists its stages in order)."""
    out = {}
    for key, cells in index.rows.items():
        records = [r.record for results in cells.values() for r in results]
        if key.method in UNTRAINED:
            backbone = "none (lexical)" if key.method in LEXICAL else key.model
            out[key] = Setting(backbone, "no training", "none (no training)")
            continue
        steps: dict[str, None] = {}
        corpora: dict[str, set] = {}
        for r in records:
            stages = record_stages(r)
            names = [str(s.get("method")) for s in stages]
            many = len(stages) > 1
            steps["; ".join((f"{n}: " if many else "") + _stage_steps(s) for n, s in zip(names, stages))
                  or "steps not recorded"] = None
            label = " > ".join((f"{n}: " if many else "") + _stage_corpus(s, r["task"]["name"])
                               for n, s in zip(names, stages)) or "not recorded"
            sizes = {(s.get("data") or {}).get("sentences") for s in stages[:1]}
            corpora.setdefault(label, set()).update(sizes)
        corpus = "; ".join(f"{lab} ({', '.join(f'{n:,}' for n in sorted(x for x in ns if x))} sent.)"
                           if any(ns) else lab for lab, ns in corpora.items())
        found = sorted({find_key(r.get("config", {}), "max_steps") for r in records} - {None})
        n = int(found[0]) if len(found) == 1 and len(records) and all(len(record_stages(r)) == 1 for r in records) \
            else None
        out[key] = Setting(key.model, " / ".join(steps), corpus, n)
    return out


def setting_gap(label: str, entry: RefEntry, ours: Setting, paper: Setting) -> str:
    """One line beside a compared pair: our row's backbone, budget and corpus beside the paper's prose. A pair
    exists only when the two settings are equal by content, so the line states that and shows both."""
    return (f"Setting of {label} vs {entry.source} {entry.label}: the same setting by content (every "
            "score-affecting config key of each stage, the backbone's config, weights and tokenizer, the training "
            "and evaluation data's sha256, the split). "
            f"Ours: {ours.backbone}; {ours.steps}; corpus {ours.corpus}. Paper: {paper.backbone}; {paper.steps}; "
            f"corpus {paper.corpus}.")


def compare(built: Built, spec: TableSpec, source: str | None = None,
            settings: Mapping[RowKey, Setting] | None = None,
            runs: Mapping[RowKey, RunSettings] | None = None, context: PairingContext | None = None) -> Comparison:
    """Pair each of our rows with the published row whose setting it equals by content (``source`` restricts to
    one reference table; ``runs``: :func:`usebench.report.row_settings.run_settings`, without which nothing is
    paired), with a short note for each row left without one naming the main keys that differ (all of them in
    ``Comparison.unpaired``); with ``settings`` (ours, see :func:`our_settings`) the notes show each pair's setting
    beside the paper's. Only the results behind the table's cells are compared: its columns' tasks, its split."""
    from usebench.report.pair_notes import seeds_text, shown_records, unpaired_note

    table_ids = (source,) if source else spec.references
    pairs, seeds, unpaired, pair_notes, detail = [], [], [], [], []
    for row in built.rows:
        if row.key is None:
            continue
        run = shown_records(runs.get(row.key), built.columns, built.split) if runs is not None else None
        entry, missed, notes = find_reference(table_ids, row.key, run, context)
        if entry is not None:
            shown = replace(row, label=f"{row.label} (user's sample)") if any("user's sample" in n for n in notes) \
                else row
            pairs.append((shown, entry))
            seeds.append(seeds_text(row.n, entry.seeds))
            pair_notes += [f"{row.label} vs {entry.source} {entry.label}: {n}." for n in notes]
        elif missed:
            unpaired.append(unpaired_note(row.label, missed))
            detail.append((row.label, tuple((f"{e.source} {e.label}", tuple(g)) for e, g in missed)))
    notes = ["Ours: mean over seeds; paper: as printed; Δ = ours − paper (points); seeds: ours of the paper's. A Δ has "
             "no interval: the paper's side has no per-item outcomes (nor its seeds' values) to pair with ours."]
    notes += pair_notes + unpaired
    if not pairs:
        notes.append("None of these rows has a published counterpart of the same setting (see the published table).")
    for row, entry in pairs:
        if settings and row.key in settings:
            notes.append(setting_gap(row.label, entry, settings[row.key], paper_setting(entry, row.key)))
    return Comparison(name=f"{built.name}-vs-paper", title=f"{built.title}: ours vs paper",
                      columns=built.columns, rows=tuple(pairs), decimals=built.decimals, notes=tuple(notes),
                      seeds=tuple(seeds), unpaired=tuple(detail))


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
