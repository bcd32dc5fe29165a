"""TSDAE App. A: the configuration search's Tables 5-7 and the tying result, on the paper's skeleton."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from usebench.report.build import Built, Cell, Row
from usebench.report.pairing import PairingContext
from usebench.report.reference import RefEntry
from usebench.report.row_settings import same_model
from usebench.report.sections import Section
from usebench.report.skeleton import NOT_IN_PAPER
from usebench.stats.seeds import aggregate
from usebench.stats.table_specs import COLUMNS, TableSpec
from usebench.report.tsdae_analyses.common import (_CORPUS, _comparison, _marked, _published, _row_settings,
                                                   _setting_label, _skeleton_notes, _slot_row)
from usebench.report.search_runs import SEARCHED, app_a_setting
from usebench.stats.intervals import Resampler
from usebench.stats.table_cells import interval_note, with_interval
from usebench.store import StoredResult

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
    resampler = Resampler()
    cells = {key: with_interval(Cell.from_stats(aggregate(groups[key], "spearman").scaled(100.0)), groups[key],
                                "spearman", resampler) for key in groups}
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
                                                 interval_note(cells.values(), resampler),
                                                 *_skeleton_notes("TSDAE App. A (Tables 5, 6, 7 and the tying "
                                                                  "result)", missing)), split="dev", spread="ci")
    return Section(built, _comparison(built, ours, APP_A_TABLES, found, "dev", ctx),
                   _published(APP_A_TABLES, (col,), 2))
