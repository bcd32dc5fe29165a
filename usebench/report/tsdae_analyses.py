"""The TSDAE paper's analysis tables whose rows are configurations, not methods: the configuration search (App. A,
Tables 5-7 and the tying result) and TSDAE from other checkpoints with its training loss (Table 4).

Rows are grouped by the config values the paper varies (noise, ratio, pooling, tying; backbone, from scratch),
which the method-keyed tables of :mod:`usebench.report.build` do not separate. A published row is put beside
ours only when every value of its ``settings`` (paper_reference.json) equals our row's config value.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from usebench.report.build import Built, Cell, Row, release_mark
from usebench.report.pairing import PairingContext
from usebench.report.reference import Comparison, RefEntry, entries, load_reference
from usebench.report.row_settings import same_model
from usebench.report.sections import Section
from usebench.report.skeleton import NOT_IN_PAPER
from usebench.scores.stats import SeedStats, aggregate, per_seed_average
from usebench.scores.tables import COLUMNS, Column, TableSpec
from usebench.store import StoredResult
from usebench.report.app_a import SEARCHED, app_a_setting

USEB = ("askubuntu", "cqadupstack", "twitterpara.avg", "scidocs.avg")


def _marked(row: Row, found: list[StoredResult], ctx: PairingContext | None) -> Row:
    """``row`` marked (and never bold) when a result behind it was not scored on its task's release, as in every
    other table (:func:`usebench.report.build.release_mark`)."""
    mark = release_mark([r.record for r in found], ctx.data_root if ctx else None)
    return replace(row, label=f"{row.label} · {mark}", not_release=mark) if mark else row


def _setting_label(s: Mapping[str, Any]) -> str:
    return f"{s['noise']} {s['noise_ratio']} · {s['pooling']} · {'tied' if s['tie_encoder_decoder'] else 'untied'}"


# A published row's ``train_data`` (paper_reference.json's schema) as our rows' corpus label
_CORPUS = {"in-domain": "target", "allnli": "allnli"}


def flat_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A published row's settings as the flat config values our rows carry: its backbone, its training corpus and
    the config values its table varies (noise, ratio, pooling, tying; from scratch, budget)."""
    data = settings.get("train_data")
    return {"model": settings.get("model"), "corpus": _CORPUS.get(str(data), f"not reproducible: {data}"),
            **(settings.get("config") or {})}


def _matches(entry_settings: Mapping[str, Any], ours: Mapping[str, Any]) -> bool:
    """Every setting the published row records equals ours (a missing key of ours never matches; a model is
    the same when our local path ends in the published HF id)."""
    return all(k in ours and (same_model(str(ours[k]), v) if k == "model" else ours[k] == v)
               for k, v in flat_settings(entry_settings).items())


def _row_settings(table_id: str) -> list[tuple[RefEntry, dict[str, Any]]]:
    rows = load_reference()["tables"][table_id]["rows"]
    return list(zip(entries(table_id), (r.get("settings", {}) for r in rows)))


def _published(table_ids: tuple[str, ...], columns: tuple[Column, ...], decimals: int) -> list[Built]:
    """The published tables as built tables (values as printed)."""
    out = []
    for table_id in table_ids:
        data = load_reference()["tables"][table_id]
        es = entries(table_id)
        rows = tuple(Row(label=e.label, block=e.block, cells={c.id: Cell(e.values.get(c.id), e.std.get(c.id))
                                                               for c in columns}) for e in es)
        note = f"Published: {es[0].source} — {data['metric']}."
        out.append(Built(name=table_id, title=f"Published: {es[0].source}", caption=data["metric"], columns=columns,
                         rows=rows, decimals=decimals, notes=(note,), show_n=False))
    return out


def _comparison(built: Built, ours: dict[int, dict[str, Any]], table_ids: tuple[str, ...],
                found: dict[int, list[StoredResult]], split: str, ctx: PairingContext | None) -> Comparison:
    """Pair each of our rows with every published row whose settings it meets: the config values the table varies,
    and by content every result's backbone (fingerprint), split and evaluation data (the release's identity)."""
    from usebench.report.pair_notes import main_first, unpaired_note
    from usebench.report.pairing import backbone_gaps
    from usebench.report.pairing_data import evaluation_gaps

    data_root = ctx.data_root if ctx else None
    pairs, unpaired = [], []
    published = [p for t in table_ids for p in _row_settings(t)]
    for i, row in enumerate(built.rows):
        if i not in ours:  # a published row with no run of ours ("—")
            continue
        # a row on the skeleton is compared with its own published row only (the slots follow ``table_ids``)
        for entry, settings in published if row.slot is None else published[row.slot:row.slot + 1]:
            if not _matches(settings, ours[i]):
                continue
            gaps = list(dict.fromkeys(g for r in found.get(i, []) for g in (
                evaluation_gaps(r.record, split, data_root)[0]
                + backbone_gaps(r.record["method"].get("backbone"), str(settings.get("model")))[0])))
            if gaps:
                unpaired.append(unpaired_note(row.label, [(entry, main_first(gaps))]))
            else:
                pairs.append((row, entry))
    notes = ["Ours: mean over seeds; paper: as printed; Δ = ours − paper (points). A published row is paired only "
             "with runs meeting every setting it records (noise, ratio, pooling, tying, backbone, budget, corpus), "
             "on the release's evaluation data and the published backbone (by content)."] + unpaired
    if not pairs:
        notes.append("None of these rows meets a published row's settings (see the published tables).")
    return Comparison(name=f"{built.name}-vs-paper", title=f"{built.title}: ours vs paper", columns=built.columns,
                      rows=tuple(pairs), decimals=built.decimals, notes=tuple(notes))


# --- the paper's skeleton for tables whose rows are configurations ----------------------------------------------

def _slot_row(slot: RefEntry, columns: tuple[Column, ...], reason: str, i: int) -> Row:
    """A published row with no run of ours: "—" in every cell, and why."""
    return Row(label=slot.label, block=slot.block, cells={c.id: Cell(None, n=0) for c in columns}, slot=i, note=reason)


def _skeleton_notes(source: str, missing: list[tuple[RefEntry, str]]) -> list[str]:
    notes = [f"Rows in the order of {source}, each with the paper's label and our marks (backbone, budget) where our "
             "run differs; a row holds only the runs of its own setting, our other rows follow as not in the "
             "paper's table."]
    if missing:
        notes.append(f"Rows of {source} not made here:")
        notes += [f"— {e.block + ' / ' if e.block else ''}{e.label}: {why}." for e, why in missing]
    return notes


# --- App. A: Tables 5-7 and tying ---------------------------------------------------------------------------

APP_A_TABLES = ("tsdae-table5", "tsdae-table6", "tsdae-table7", "tsdae-app-a-tying")
# The App. A protocol a run of the search keeps to (config_search: 30K steps, STSb dev every 1.5K, on NLI sentences)
APP_A_PROTOCOL = {"model": "bert-base-uncased", "max_steps": 30000, "dev_every": 1500}


def _app_a_slots() -> list[tuple[RefEntry, dict[str, Any]]]:
    return [p for t in APP_A_TABLES for p in _row_settings(t)]


def _app_a_fits(settings: Mapping[str, Any], ours: Mapping[str, Any]) -> bool:
    """Our App. A setting is the published row's kind: TSDAE on the NLI sentences (``train_data``) with the
    searched keys the row states (noise, ratio, pooling, tying). Backbone and budget are marked, not tested."""
    cfg = settings.get("config") or {}
    return ours.get("corpus") == _CORPUS.get(str(settings.get("train_data"))) and all(
        k in ours and ours[k] == cfg[k] for k in SEARCHED if k in cfg)


def _app_a_marks(s: Mapping[str, Any]) -> str:
    marks = []
    if not same_model(str(s.get("model") or ""), APP_A_PROTOCOL["model"]):
        marks.append(str(s.get("model") or "").rstrip("/").rsplit("/", 1)[-1])
    if s.get("max_steps") != APP_A_PROTOCOL["max_steps"] or s.get("dev_every") != APP_A_PROTOCOL["dev_every"]:
        marks.append(f"{s.get('max_steps')} steps, STSb dev every {s.get('dev_every')}")
    return "".join(f" · {m}" for m in marks)


def app_a_section(results: list[StoredResult], spec: TableSpec, ctx: PairingContext | None = None) -> Section:
    """App. A on the paper's skeleton: Tables 5, 6, 7 and the tying result in the paper's order, each published
    row holding our runs of its setting (noise, ratio, pooling, tying; TSDAE on the NLI sentences), or "—" with the
    reason; our other settings follow, one row per setting and block per (backbone, budget, corpus)."""
    groups: dict[tuple, list[StoredResult]] = defaultdict(list)
    for r in results:
        s = app_a_setting(r.record)
        if s is not None:
            groups[tuple(sorted(s.items()))].append(r)
    col = COLUMNS["stsb"]
    settings_of = {key: {**dict(key), "method": "tsdae"} for key in groups}
    ordered = sorted(groups, key=lambda k: (_app_a_marks(settings_of[k]) != "", str(settings_of[k]["model"]),
                                            str(settings_of[k]["max_steps"]).zfill(12), str(settings_of[k]["corpus"]),
                                            tuple(str(settings_of[k][x]) for x in SEARCHED)))
    cells = {key: Cell.from_stats(aggregate(groups[key], "spearman").scaled(100.0)) for key in groups}
    rows: list[Row] = []
    ours: dict[int, dict[str, Any]] = {}
    found: dict[int, list[StoredResult]] = {}
    placed: set[tuple] = set()
    missing = []
    for i, (slot, settings) in enumerate(_app_a_slots()):
        mine = [k for k in ordered if _app_a_fits(settings, settings_of[k])]
        for key in mine:
            placed.add(key)
            ours[len(rows)], found[len(rows)] = settings_of[key], groups[key]
            row = Row(label=slot.label + _app_a_marks(settings_of[key]), block=slot.block, cells={col.id: cells[key]},
                      slot=i)
            rows.append(_marked(row, groups[key], ctx))
        if not mine:
            cfg = (settings.get("config") or {})
            why = (f"no App. A run of TSDAE with {_setting_label(cfg)} on the NLI sentences in this store "
                   "(bench config-search)")
            rows.append(_slot_row(slot, (col,), why, i))
            missing.append((slot, why))
    for key in (k for k in ordered if k not in placed):
        s = settings_of[key]
        block = f"{s['model']} · {s['max_steps']} steps, STSb dev every {s['dev_every']} · corpus {s['corpus']}"
        ours[len(rows)], found[len(rows)] = s, groups[key]
        rows.append(_marked(Row(label=_setting_label(s), block=block + NOT_IN_PAPER, cells={col.id: cells[key]}),
                            groups[key], ctx))
    built = Built(name=spec.name, title=spec.title, caption=spec.caption, columns=(col,), rows=tuple(rows),
                  decimals=spec.decimals, notes=(spec.caption, "Split: dev (the best of the dev evaluations).",
                                                 *_skeleton_notes("TSDAE App. A (Tables 5, 6, 7 and the tying "
                                                                  "result)", missing)), split="dev")
    return Section(built, _comparison(built, ours, APP_A_TABLES, found, "dev", ctx),
                   _published(APP_A_TABLES, (col,), 2))


# --- Table 4: TSDAE from other checkpoints, test score and final training loss --------------------------------

def final_loss(result: StoredResult) -> float | None:
    """The last logged training loss of the run behind ``result`` (mean of its last ``log_every`` window)."""
    log = result.path.parent.parent / "log.jsonl"
    if not log.is_file():
        return None
    losses = [json.loads(ln)["loss"] for ln in log.read_text(encoding="utf-8").splitlines()
              if ln.strip() and "loss" in json.loads(ln)]
    return float(losses[-1]) if losses else None


def _table4_key(record: Mapping[str, Any]) -> tuple | None:
    config = record.get("config") or {}
    cfg, corpus = config.get("config") or {}, config.get("corpus") or {}
    task = record["task"]["name"]
    if config.get("method") != "tsdae" or corpus.get("label") != task or record["task"]["split"] != "test":
        return None
    if config.get("corpus_size") is not None:  # a sample of the task's sentences (Fig. 3), not Table 4's whole corpus
        return None
    # the decoder is part of the row: a tied BERT decoder, BART/T5's own, or a separate one are other settings
    decoder = "tied" if cfg.get("tie_encoder_decoder", True) else (cfg.get("decoder_model") or "own")
    return (cfg.get("model"), bool(cfg.get("from_scratch")), cfg.get("max_steps"), str(decoder))


TABLE4_STEPS = 100000  # App. B's budget (Table 2's BERT-base row; not restated for the other checkpoints)


def _table4_slot(key: tuple, slots: list[tuple[RefEntry, dict[str, Any]]]) -> int | None:
    """The published row our Table 4 row is (TSDAE in-domain): the checkpoint it starts from, by name, whether it is
    trained from scratch, and its decoder (BERT's rows TSDAE's tied one, BART's and T5's their own). A backbone that is none of the published checkpoints stands in for the table's
    backbone (BERT-base, Scratch) only with TSDAE's own tied decoder, marked with its name."""
    model, scratch, _, decoder = key
    for i, (entry, settings) in enumerate(slots):
        own_decoder = settings.get("model") != "bert-base-uncased"  # BART and T5 decode with their own decoders
        if same_model(str(model), str(settings.get("model"))) and (decoder != "tied") == own_decoder and \
                bool((settings.get("config") or {}).get("from_scratch")) == scratch:
            return i
    known = {str(s.get("model")) for _, s in slots}
    if decoder == "tied" and not any(same_model(str(model), m) for m in known):
        return next((i for i, (e, s) in enumerate(slots) if s.get("model") == "bert-base-uncased"
                     and bool((s.get("config") or {}).get("from_scratch")) == scratch), None)
    return None


def table4_section(results: list[StoredResult], spec: TableSpec, ctx: PairingContext | None = None) -> Section:
    """TSDAE per (backbone, from scratch, budget, decoder) on Table 4's skeleton (BERT-base, Scratch, BART-base,
    T5-base): each USEB task's test score and final training loss; a "—" row for each checkpoint not run."""
    by_key: dict[tuple, list[StoredResult]] = defaultdict(list)
    for r in results:
        key = _table4_key(r.record)
        if key is not None:
            by_key[key].append(r)
    columns = tuple(COLUMNS[c] for c in spec.columns)  # each score, then its training loss
    slots = _row_settings("tsdae-table4")
    made: dict[tuple, tuple[dict[str, Cell], str]] = {}
    for key in sorted(by_key, key=str):
        model, scratch, steps, decoder = key
        cells, losses, scores = {}, {}, {}
        for c in USEB:
            found = [r for r in by_key[key] if r.task == COLUMNS[c].task]
            scores[c] = aggregate(found, COLUMNS[c].metric).scaled(100.0) if found else SeedStats({})
            losses[c] = SeedStats({int(r.record["seed"]): v for r in found if (v := final_loss(r)) is not None})
            cells[c], cells[f"{c}.loss"] = Cell.from_stats(scores[c]), Cell.from_stats(losses[c])
        cells["useb.avg"] = Cell.from_stats(per_seed_average(list(scores.values())))
        cells["useb.loss"] = Cell.from_stats(per_seed_average(list(losses.values())))
        shown = "" if decoder == "tied" else (" · its own decoder" if decoder == "own" else f" · decoder {decoder}")
        made[key] = (cells, shown)
    rows: list[Row] = []
    ours: dict[int, dict[str, Any]] = {}
    found_by_row: dict[int, list[StoredResult]] = {}
    missing = []

    def add(key: tuple, label: str, block: str, slot: int | None) -> None:
        model, scratch, steps, decoder = key
        found_by_row[len(rows)] = by_key[key]
        ours[len(rows)] = {"model": model, "from_scratch": scratch, "max_steps": steps, "method": "tsdae",
                           "corpus": "target", "tie_encoder_decoder": decoder == "tied"}
        rows.append(_marked(Row(label=label, block=block, cells=made[key][0], slot=slot), by_key[key], ctx))

    slot_of = {key: _table4_slot(key, slots) for key in made}
    for i, (entry, settings) in enumerate(slots):
        mine = [k for k in made if slot_of[k] == i]
        for key in mine:
            model, _, steps = key[:3]
            marks = "" if same_model(str(model), str(settings.get("model"))) else \
                f" · {str(model).rstrip('/').rsplit('/', 1)[-1]}"
            marks += "" if steps == TABLE4_STEPS else f" · {steps} steps"
            add(key, entry.label + marks + made[key][1], entry.block, i)
        if not mine:
            what = "from scratch (from_scratch=true)" if (settings.get("config") or {}).get("from_scratch") else \
                f"from {settings.get('model')}"
            why = f"no results of TSDAE {what} on the four tasks' own sentences in this store"
            rows.append(_slot_row(entry, columns, why, i))
            missing.append((entry, why))
    for key in (k for k in made if slot_of[k] is None):
        model, scratch, steps, _ = key
        add(key, f"{model}{' (from scratch)' if scratch else ''}{made[key][1]}", f"TSDAE · {steps} steps" + NOT_IN_PAPER,
            None)
    built = Built(name=spec.name, title=spec.title, caption=spec.caption, columns=columns, rows=tuple(rows),
                  decimals=spec.decimals, notes=(spec.caption, "Split: test.",
                                                 *_skeleton_notes("TSDAE Table 4", missing)), split="test")
    published = [_table4_published(columns)]
    return Section(built, _comparison(built, ours, ("tsdae-table4",), found_by_row, "test", ctx), published)


def _table4_published(columns: tuple[Column, ...]) -> Built:
    """Table 4 as printed ("score/loss" cells split into a score and a loss column)."""
    built = _published(("tsdae-table4",), columns, 1)[0]
    return replace(built, notes=built.notes + ("Loss columns: the printed training loss after the slash.",))


# --- Table 9 (App. C): TSDAE, CT, SimCSE and BERT-flow from other checkpoints -------------------------------------

TABLE9_BACKBONE = "bert-base-uncased"  # the paper's main backbone: a run's own --model stands in for it, marked


def table9_section(results: list[StoredResult], spec: TableSpec, ctx: PairingContext | None = None) -> Section:
    """Table 9 on the paper's skeleton: per checkpoint block (ELECTRA-base ... BERT-base) the four methods, each slot
    holding our unsupervised in-domain run of that method from that checkpoint (the backbone by name: the blocks
    differ in nothing else; whether the published number may stand beside it is the pairing's question, by
    fingerprint), or "—" with the reason. A backbone that is none of the paper's checkpoints stands in for BERT-base,
    marked with its name; our other rows follow, marked as not in the paper's table."""
    from usebench.report.build import build_table
    from usebench.report.reference import compare, our_settings, published
    from usebench.report.row_settings import run_settings
    from usebench.scores.rows import index_results
    from usebench.report.skeleton import _row_configs, fits, slot_label

    index = index_results(results)
    built = build_table(spec, index, None, ctx.data_root if ctx else None)
    slots = entries("tsdae-table9")
    checkpoints = {str(e.model) for e in slots}
    configs = {r.key: _row_configs(index, r.key) for r in built.rows if r.key is not None}

    def backbone(key) -> str:
        known = [m for m in checkpoints if same_model(key.model, m)]
        return known[0] if known else TABLE9_BACKBONE

    placed: set[int] = set()
    rows: list[Row] = []
    missing = []
    for i, slot in enumerate(slots):
        mine = [(n, r) for n, r in enumerate(built.rows) if n not in placed and r.key is not None
                and backbone(r.key) == slot.model and fits(slot, r.key, {}, configs[r.key])]
        for n, r in mine:
            placed.add(n)
            mark = f" · {r.not_release}" if r.not_release else ""
            rows.append(replace(r, label=slot_label(slot, r.key) + mark, block=slot.block, slot=i))
        if not mine:
            method = (slot.match or {}).get("method")
            why = f"no results of {method} from {slot.model} in the unsupervised setting in this store"
            rows.append(_slot_row(slot, built.columns, why, i))
            missing.append((slot, why))
    rows += [replace(r, block=r.block + NOT_IN_PAPER) for n, r in enumerate(built.rows) if n not in placed]
    built = replace(built, rows=tuple(rows), notes=built.notes + tuple(_skeleton_notes("TSDAE Table 9", missing)))
    context = ctx or PairingContext(None, {})
    comparison = compare(built, spec, None, our_settings(index), run_settings(index), context)
    return Section(built, comparison, published(spec))


def _thesis_builders() -> dict[str, Callable[[list[StoredResult], TableSpec, PairingContext | None], Section]]:
    from usebench.report.thesis_tables import eproduct_section, studies_section

    return {"thesis-studies": studies_section, "thesis-eproduct": eproduct_section}


# Report tables built by their own section builder (rows that are configurations, or tables of several published
# tables on their papers' skeletons), not by usebench.report.skeleton's method-keyed layout
SECTION_BUILDERS: dict[str, Callable[[list[StoredResult], TableSpec, PairingContext | None], Section]] = {
    "tsdae-app-a": app_a_section,
    "tsdae-table4": table4_section,
    "tsdae-table9": table9_section,
    **_thesis_builders(),
}
# The published tables whose rows are each section's slots, in order (Row.slot indexes their concatenation): what
# a slot-by-slot status (`bench reproduce`) reads for these tables
SECTION_SLOTS: dict[str, tuple[str, ...]] = {
    "tsdae-app-a": APP_A_TABLES, "tsdae-table4": ("tsdae-table4",), "tsdae-table9": ("tsdae-table9",),
    "thesis-studies": ("thesis-table5.11", "thesis-table5.12", "thesis-table5.13"),
    "thesis-eproduct": ("thesis-table5.4", "thesis-table5.5", "thesis-table5.8", "thesis-table5.14",
                        "thesis-table5.15", "thesis-table5.16"),
}
__all__ = ["SECTION_BUILDERS", "SECTION_SLOTS", "app_a_section", "table4_section", "final_loss"]
