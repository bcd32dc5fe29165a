"""What the TSDAE analysis tables share: a published row's settings as our flat config values, the published
tables as built ones, the pairing of our rows with published rows by settings, and the skeleton's "—" rows.

Rows are grouped by the config values the paper varies (noise, ratio, pooling, tying; backbone, from scratch),
which the method-keyed tables of :mod:`usebench.report.build` do not separate. A published row is put beside
ours only when every value of its ``settings`` (paper_reference.json) equals our row's config value.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from usebench.report.build import Built, Cell, Row, release_mark
from usebench.report.pairing import PairingContext
from usebench.report.reference import Comparison, RefEntry, entries, load_reference
from usebench.report.row_settings import same_model
from usebench.stats.table_specs import Column
from usebench.store import StoredResult

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
