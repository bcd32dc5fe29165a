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
from usebench.report.reference import Comparison, RefEntry, entries, load_reference, same_model
from usebench.report.sections import Section
from usebench.report.stats import SeedStats, aggregate, per_seed_average
from usebench.report.tables import COLUMNS, Column, TableSpec
from usebench.store import StoredResult
from usebench.run.config_search import SEARCHED, app_a_setting

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
    for i, row in enumerate(built.rows):
        for entry, settings in (p for t in table_ids for p in _row_settings(t)):
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


# --- App. A: Tables 5-7 and tying ---------------------------------------------------------------------------

APP_A_TABLES = ("tsdae-table5", "tsdae-table6", "tsdae-table7", "tsdae-app-a-tying")


def app_a_section(results: list[StoredResult], spec: TableSpec, ctx: PairingContext | None = None) -> Section:
    """One row per App. A setting (noise, ratio, pooling, tying) and block per (backbone, budget, corpus)."""
    groups: dict[tuple, list[StoredResult]] = defaultdict(list)
    for r in results:
        s = app_a_setting(r.record)
        if s is not None:
            groups[tuple(sorted(s.items()))].append(r)
    col = COLUMNS["stsb"]
    made = []
    for key, found in groups.items():
        s = {**dict(key), "method": "tsdae"}
        block = f"{s['model']} · {s['max_steps']} steps, STSb dev every {s['dev_every']} · corpus {s['corpus']}"
        cell = Cell.from_stats(aggregate(found, "spearman").scaled(100.0))
        made.append((block, tuple(str(s[k]) for k in SEARCHED), s, Row(label=_setting_label(s), block=block,
                                                                        cells={col.id: cell})))
    made.sort(key=lambda m: (m[0], m[1]))
    ours = {i: m[2] for i, m in enumerate(made)}
    found = {i: groups[tuple(sorted((k, v) for k, v in m[2].items() if k != "method"))] for i, m in enumerate(made)}
    built = Built(name=spec.name, title=spec.title, caption=spec.caption, columns=(col,),
                  rows=tuple(_marked(m[3], found[i], ctx) for i, m in enumerate(made)), decimals=spec.decimals,
                  notes=(spec.caption, "Split: dev (the best of the dev evaluations)."), split="dev")
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
    # the decoder is part of the row: a tied BERT decoder, BART/T5's own, or a separate one are other settings
    decoder = "tied" if cfg.get("tie_encoder_decoder", True) else (cfg.get("decoder_model") or "own")
    return (cfg.get("model"), bool(cfg.get("from_scratch")), cfg.get("max_steps"), str(decoder))


def table4_section(results: list[StoredResult], spec: TableSpec, ctx: PairingContext | None = None) -> Section:
    """TSDAE per (backbone, from scratch, budget): each USEB task's test score and final training loss."""
    by_key: dict[tuple, list[StoredResult]] = defaultdict(list)
    for r in results:
        key = _table4_key(r.record)
        if key is not None:
            by_key[key].append(r)
    columns = tuple(COLUMNS[c] for c in spec.columns)  # each score, then its training loss
    rows, ours, found_by_row = [], {}, {}
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
        found_by_row[len(rows)] = by_key[key]
        ours[len(rows)] = {"model": model, "from_scratch": scratch, "max_steps": steps, "method": "tsdae",
                           "corpus": "target", "tie_encoder_decoder": decoder == "tied"}
        shown = "" if decoder == "tied" else (" · its own decoder" if decoder == "own" else f" · decoder {decoder}")
        rows.append(_marked(Row(label=f"{model}{' (from scratch)' if scratch else ''}{shown}",
                                block=f"TSDAE · {steps} steps", cells=cells), by_key[key], ctx))
    built = Built(name=spec.name, title=spec.title, caption=spec.caption, columns=columns, rows=tuple(rows),
                  decimals=spec.decimals, notes=(spec.caption, "Split: test."), split="test")
    published = [_table4_published(columns)]
    return Section(built, _comparison(built, ours, ("tsdae-table4",), found_by_row, "test", ctx), published)


def _table4_published(columns: tuple[Column, ...]) -> Built:
    """Table 4 as printed ("score/loss" cells split into a score and a loss column)."""
    built = _published(("tsdae-table4",), columns, 1)[0]
    return replace(built, notes=built.notes + ("Loss columns: the printed training loss after the slash.",))


SECTION_BUILDERS: dict[str, Callable[[list[StoredResult], TableSpec, PairingContext | None], Section]] = {
    "tsdae-app-a": app_a_section,
    "tsdae-table4": table4_section,
}
__all__ = ["SECTION_BUILDERS", "SEARCHED", "app_a_section", "table4_section", "final_loss"]
