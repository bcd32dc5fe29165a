"""A table's skeleton is the paper's: its blocks, rows and columns in the paper's order, each row named as the
paper prints it, every slot filled with our row of that setting or shown as "—" with the reason.

A report table that reproduces a published table names it (``TableSpec.skeleton``). Each published row is a slot;
a slot admits our row only when the row's resolved setting is the slot's: method, setting block (a chain's shape),
pooling, the evaluated model of an untrained row, the kind of training data, and every key that tells the paper's
rows apart (:func:`slot_settings`: the keys in which the published rows of the same method, in any of the paper's
tables, differ, e.g. PaSeR's ``top_k``/``signal``, DenoSent's ``paraphrases`` and loss weights, TSDAE's noise and
tying, ``loss`` in the thesis' Table 5.9), read from each result's resolved config, never from a label or a preset's
name. Budget keys (steps, batch size, dev selection) count only where the table's own rows differ in them. A slot's
label is the paper's, with our marks where our row differs from it in something a reader must see (a variant of
the preset, another backbone, another training corpus). Our rows that fit no slot
follow the skeleton in blocks of their own, marked as not in the paper's table. Whether the paper's *number* may
stand beside ours is a separate, stricter question (:mod:`usebench.report.reference`).

:func:`table_status` says, slot by slot, whether a table was made: what `bench reproduce` reports and exits on.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from usebench.report.build import Built, Cell, Row, build_table
from usebench.report.pairing import NO_SCORE_KEYS
from usebench.report.reference import RefEntry, entries, load_reference, matches
from usebench.report.row_settings import same_model
from usebench.stats.table_rows import UNTRAINED, ResultIndex, RowKey, row_marks
from usebench.stats.table_specs import TABLES, TableSpec

NOT_IN_PAPER = " (not in the paper's table)"


@dataclass(frozen=True)
class SlotStatus:
    """One published row of a reproduced table: whether our table has it, and why not."""

    table: str  # report table name, e.g. "paper-table2"
    block: str  # the paper's block title
    label: str  # the paper's row label
    made: bool  # our row for this slot has a value in every column
    reason: str  # "" when made; else why (no results, missing columns, or why it can never be made here)
    never: bool  # can never be made here (USE-large, Sent2Vec, eBay-internal data)


def _row_configs(index: ResultIndex, key: RowKey) -> list[Mapping[str, Any]]:
    """The stage configs of the row's own method in every result of the row (a chain's other stages aside)."""
    out = []
    for results in index.rows.get(key, {}).values():
        for r in results:
            config = r.record.get("config") or {}
            stages = config.get("stages") if isinstance(config.get("stages"), list) else [config]
            own = [s for s in stages if isinstance(s, dict) and s.get("method") == key.method] or stages[-1:]
            out += [s.get("config") or {} for s in own if isinstance(s, dict)]
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool | str) \
            and not isinstance(b, bool | str):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def distinguishing_keys(slots: Sequence[RefEntry]) -> dict[int, dict[str, Any]]:
    """Per slot, the config values that set it apart from the table's other slots of the same method (the keys
    whose published values differ among them): what a row of ours must have to be that slot's."""
    out: dict[int, dict[str, Any]] = {}
    for i, slot in enumerate(slots):
        if not slot.match:
            continue
        same = [s for s in slots if s.match == slot.match]
        mine = (slot.settings or {}).get("config") or {}
        out[i] = {k: v for k, v in mine.items()
                  if any(not _same(((s.settings or {}).get("config") or {}).get(k), v) for s in same)}
    return out


# Keys that set a run's budget and how its checkpoint is picked (how long and how large it trains, on which dev data
# it is selected, its backbone): a CPU check (`--preset smoke`, `--max-steps`) shrinks them and its row is still the
# slot's kind of row, marked with its variant (whether the published number may stand beside it is the pairing's
# question). They tell slots apart only where the table's own rows differ in them (thesis Table 5.17: 1 vs 3 epochs).
BUDGET_KEYS = frozenset({"model", "epochs", "max_steps", "batch_size", "lr", "warmup_steps", "warmup_ratio",
                         "max_length", "eval_max_length", "max_chars", "amp", "drop_last", "dev_task", "dev_every",
                         "dev_metric", "dev_patience", "dev_corpus", "train_data", "log_every", "save_every"})


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def _resolve(method: str, preset: str, values: Mapping[str, Any]) -> dict[str, Any] | None:
    """A published row's config as the planner resolves it (its preset with the row's values), None when the
    method or preset is not ours or the values are not the method's keys."""
    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench.errors import BenchError
    from usebench.registry import METHODS
    from usebench.train.config import config_to_dict

    if method not in METHODS.names():
        return None
    try:
        cfg = METHODS.get(method).config(preset, dict(values))
    except (BenchError, TypeError, ValueError, KeyError):
        return None
    return {k: _plain(v) for k, v in config_to_dict(cfg).items()}


def _presets(settings: Mapping[str, Any] | None) -> list[str]:
    preset = (settings or {}).get("preset")
    return [preset] if isinstance(preset, str) else [str(p) for p in preset or ()]


@lru_cache(maxsize=None)
def _paper_rows(source: str) -> tuple[RefEntry, ...]:
    """Every published row of one paper (all its tables)."""
    data = load_reference()["tables"]
    return tuple(e for t, table in data.items() if table.get("source") == source for e in entries(t))


def _of_method(row: RefEntry, method: str) -> bool:
    """Whether a published row is a run of ``method``: its ``match`` says so, or (a row of a configuration search,
    e.g. the TSDAE paper's App. A and Table 4, which has no slot) every key it sets is a key of that method's config."""
    if row.match:
        return row.match.get("method") == method
    values = (row.settings or {}).get("config") or {}
    if (row.settings or {}).get("preset") or not values:
        return False
    from usebench.registry import METHODS

    return method in METHODS.names() and set(values) <= {f.name for f in fields(METHODS.get(method).Config)}


def slot_settings(slot: RefEntry) -> list[dict[str, Any]]:
    """What a row of ours must have to be the slot's, one alternative per preset the slot names: the slot's
    resolved config on every key in which another published row of the same method in the same paper differs from
    it (the keys that tell the paper's rows apart: PaSeR's ``signal``/``top_k``/``synonym_ratio``, DenoSent's loss
    weights and ``paraphrases``, TSDAE's noise, pooling, tying and ``from_scratch``), budget keys aside."""
    method = str((slot.match or {}).get("method") or "")
    source = load_reference()["tables"][slot.table_id].get("source", "")
    out = []
    for preset in _presets(slot.settings):
        mine = _resolve(method, preset, (slot.settings or {}).get("config") or {})
        if mine is None:
            continue
        keys: set[str] = set()
        for other in _paper_rows(source):
            if other is slot or not _of_method(other, method):
                continue
            values = (other.settings or {}).get("config") or {}
            for theirs in [_resolve(method, p, values) for p in _presets(other.settings) or [preset]]:
                keys |= {k for k, v in mine.items() if theirs is not None and k not in BUDGET_KEYS
                         and k not in NO_SCORE_KEYS and not _same(theirs.get(k), v)}
        out.append({k: mine[k] for k in sorted(keys)})
    return out


@lru_cache(maxsize=None)
def _settings_of(table_id: str, position: int) -> tuple[dict[str, Any], ...]:
    """:func:`slot_settings` of one published row, once per process (the published rows never change)."""
    return tuple(slot_settings(entries(table_id)[position]))


def backbone_fits(slot: RefEntry, key: RowKey, backbones: Sequence[Mapping[str, Any] | None]) -> bool:
    """Whether our row's backbone is the slot's, by content: each result's recorded fingerprint (config, weights,
    tokenizer: ``backbones``, one per result) against the published backbone's (``published_backbones.json``). A
    slot whose backbone has no fingerprint recorded here, or results that record none (an old store), are held to
    the backbone's name. BM25 and word-vector rows have no backbone."""
    from usebench.report.pairing import backbone_gaps, published_backbones

    model = str((slot.match or {}).get("model") or slot.model or "")
    if not model or key.method in ("bm25", "wordvec"):
        return True
    recorded = [b for b in backbones if b and b.get("config_sha256")]
    if recorded and (published_backbones().get(model) or {}).get("config_sha256"):
        return all(not backbone_gaps(b, model)[0] for b in recorded)
    return same_model(key.model, model)


def fits(slot: RefEntry, key: RowKey, wanted: Mapping[str, Any], configs: Sequence[Mapping[str, Any]],
         backbones: Sequence[Mapping[str, Any] | None] = (), settings: Sequence[Mapping[str, Any]] = ()) -> bool:
    """Whether our row is the slot's kind of row: its method, block, backbone by content (:func:`backbone_fits`;
    ``backbones``: each result's recorded fingerprint), pooling and kind of data, the values the table's rows of one
    method differ in (``wanted``), and every key that tells the paper's rows apart (``settings``, one alternative per
    preset: :func:`slot_settings`), read from each result's resolved config. A slot that names no block holds the
    unsupervised rows of a trained method (the STS tables list methods, not settings)."""
    if not slot.match or not matches(slot, key) or not backbone_fits(slot, key, backbones):
        return False  # MiniLM is no BERT-base row, untrained or trained from
    if key.limit:
        return False  # a --limit subsample's estimate is no published row's test set (listed below the skeleton)
    if "group" not in slot.match and key.method not in UNTRAINED and key.group != "unsupervised":
        return False
    if not _data_kind_fits((slot.settings or {}).get("train_data"), key):
        return False
    if wanted and not (configs and all(all(_same(c.get(k), v) for c in configs) for k, v in wanted.items())):
        return False
    recorded = [c for c in configs if c]  # a result that records no resolved config (an old store) is not read
    return not (settings and recorded) or any(all(all(_same(c.get(k), v) for c in recorded) for k, v in alt.items())
                                              for alt in settings)


def _data_kind_fits(train_data: Any, key: RowKey) -> bool:
    """The kind of training data the slot's row had: the evaluated task's own (``in-domain``: our row has no
    corpus of its own), or a corpus of its own (Table 11's TSDAE on Wikipedia sentences: a file, a named corpus, or
    the evaluated task's own sample; never another target task's sentences scored elsewhere). Which corpus exactly,
    and whether it is the published one, is the pairing's question (:mod:`usebench.report.pairing`), decided by
    content."""
    from usebench.data.nli_sentences import is_named_corpus

    if key.method in UNTRAINED or train_data in (None, "none"):
        return True
    if train_data == "in-domain":  # the task's whole release: a sample of it (--corpus-size, Fig. 3) is other data
        return not key.corpus and not key.corpus_size
    if isinstance(train_data, Mapping) and train_data.get("from_task"):  # a sample of the evaluated task's own
        return not key.corpus                                            # corpus (the thesis' Quora titles 100k)
    # a corpus of its own (a file or a named corpus), never a target task's own sentences scored elsewhere
    return key.corpus.startswith("file:") or is_named_corpus(key.corpus)


def slot_label(slot: RefEntry, key: RowKey) -> str:
    """The paper's label, with our marks where our row is not the published row's setting in plain sight."""
    label = slot.label
    if slot.model and key.model and not same_model(key.model, slot.model):
        label += f" · {key.model.rstrip('/').rsplit('/', 1)[-1]}"
    return label + row_marks(key)


CANNOT = "cannot be made here"  # the reason's head of a slot no run here can fill


def _why_not(slot: RefEntry, elsewhere: Sequence[str] = ()) -> tuple[str, bool]:
    """(reason, never) for an empty slot; ``elsewhere``: the backbones of our rows of the slot's kind on another
    backbone (listed below the skeleton)."""
    if not slot.match:
        note = (slot.settings or {}).get("note") or slot.note or "no counterpart in the suite"
        return f"{CANNOT}: {note}", True
    where = f" in the {slot.match['group']} setting" if "group" in slot.match else ""
    method = slot.match.get("method")
    verb = ":" if method in UNTRAINED else " on"
    others = (f" (ours{verb} {', '.join(elsewhere)}, below, not in the paper's table)") if elsewhere else ""
    if method in UNTRAINED and slot.model:  # "no results of base" read as if no untrained row existed at all
        return f"no results of {slot.model} ({method}){where} in this store{others}", False
    on = f" on {slot.model}" if slot.model and method not in ("bm25", "wordvec") else ""
    return f"no results of {method}{on}{where} in this store{others}", False


def _elsewhere(slot: RefEntry, rows: Sequence[Row], placed: set[int]) -> list[str]:
    """The backbones of our unplaced rows that are the slot's method and block but not its backbone."""
    if not slot.match:
        return []
    return sorted({_short_model(r.key.model) for n, r in enumerate(rows) if n not in placed and r.key is not None
                   and matches(slot, r.key) and not same_model(r.key.model, str(slot.model or ""))})


def _short_model(model: str) -> str:
    return model.rstrip("/").rsplit("/", 1)[-1]


def _own_block(row: Row, slots: Sequence[RefEntry]) -> str:
    """The block of a row that fits no slot: its own, marked as not the paper's; a row whose method and setting the
    paper has, on another backbone, says which (a reader must not take MiniLM's CT for BERT-base's)."""
    if row.key is None or row.key.method in UNTRAINED:  # an untrained row's label names its model already
        return row.block + NOT_IN_PAPER
    backbone = next((s.model for s in sorted(slots, key=lambda s: s.block != row.block) if s.match
                     and matches(s, row.key) and s.model and not same_model(row.key.model, s.model)), None)
    on = f" · on {_short_model(row.key.model)}, not {backbone}" if backbone else ""
    return row.block + on + NOT_IN_PAPER


def apply_skeleton(built: Built, spec: TableSpec, index: ResultIndex) -> Built:
    """``built`` laid out on the published table ``spec.skeleton``: every slot in the paper's order (our rows of
    it, or a "—" row saying why not), then our rows that fit no slot, in blocks marked as not in the paper."""
    if not spec.skeleton:
        return built
    slots = entries(spec.skeleton)
    wanted = distinguishing_keys(slots)
    settings = {i: _settings_of(spec.skeleton, i) for i, s in enumerate(slots) if s.match}
    configs = {r.key: _row_configs(index, r.key) for r in built.rows if r.key is not None}
    backbones = {r.key: [res.record["method"].get("backbone") for results in index.rows.get(r.key, {}).values()
                         for res in results] for r in built.rows if r.key is not None}
    placed: set[int] = set()
    rows: list[Row] = []
    missing_notes = []
    for i, slot in enumerate(slots):
        mine = [(n, r) for n, r in enumerate(built.rows) if n not in placed and r.key is not None
                and fits(slot, r.key, wanted.get(i, {}), configs[r.key], backbones[r.key], settings.get(i, ()))]
        for n, r in mine:
            placed.add(n)
            mark = f" · {r.not_release}" if r.not_release else ""  # data that is not the release says so
            rows.append(replace(r, label=slot_label(slot, r.key) + mark, block=slot.block, slot=i))
        if not mine:
            reason, _ = _why_not(slot, _elsewhere(slot, built.rows, placed))
            rows.append(Row(label=slot.label, block=slot.block, cells={c.id: Cell(None, n=0) for c in built.columns},
                            slot=i, note=reason))
            missing_notes.append(f"— {slot.block + ' / ' if slot.block else ''}{slot.label}: {reason}.")
    rows += [replace(r, block=_own_block(r, slots)) for n, r in enumerate(built.rows) if n not in placed]
    source = slots[0].source if slots else spec.skeleton
    notes = list(built.notes) + [f"Rows and blocks in the order of {source}; a row of ours carries the paper's "
                                 "label and our marks (backbone, corpus, variant) where it differs."]
    if missing_notes:
        notes.append(f"Rows of {source} not made here:")
        notes += missing_notes
    return replace(built, rows=tuple(rows), notes=tuple(notes))


def build_with_skeleton(spec: TableSpec, index: ResultIndex, split: str | None = None,
                        data_root: Path | None = None, **stats: Any) -> Built:
    """:func:`usebench.report.build.build_table`, laid out on the paper's table where the spec names one; ``stats``:
    build_table's ``cell_stats``, ``spread`` and ``intervals``."""
    return apply_skeleton(build_table(spec, index, split, data_root, **stats), spec, index)


def table_status(table: str, index: ResultIndex) -> list[SlotStatus]:
    """Slot by slot, whether report table ``table`` has the published table's row, and why not."""
    spec = TABLES.get(table)
    if not spec.skeleton:
        return []
    return slot_statuses(table, entries(spec.skeleton), build_with_skeleton(spec, index, intervals=False))


def slot_statuses(table: str, slots: list[RefEntry], built: Built) -> list[SlotStatus]:
    """Each published row ``slots[i]`` of ``built`` (its rows with ``slot == i``): made when a row of ours has a value
    in every column; else the columns it lacks, or the "—" row's reason. Also for the tables their own builders lay
    out (``reproduce_status.section_status``), whose rows of ours may carry no report key: a value says it is ours."""
    out = []
    for i, slot in enumerate(slots):
        rows = [r for r in built.rows if r.slot == i]
        ours = [r for r in rows if r.key is not None or not all(c.missing for c in r.cells.values())]
        if any(not any(c.missing for c in r.cells.values()) for r in ours):
            out.append(SlotStatus(table, slot.block, slot.label, True, "", False))
        elif ours:
            gaps = sorted({c.header if not c.group else f"{c.group} {c.header}" for r in ours for c in built.columns
                           if r.cells[c.id].missing})
            out.append(SlotStatus(table, slot.block, slot.label, False, "no results for " + ", ".join(gaps), False))
        else:
            note = next((r.note for r in rows if r.note), "")
            reason, never = (note, note.startswith(CANNOT)) if note else _why_not(slot)
            out.append(SlotStatus(table, slot.block, slot.label, False, reason, never))
    return out
