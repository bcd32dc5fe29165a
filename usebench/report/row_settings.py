"""Which results a row of ours holds, and what it misses of a published row's setting, by content.

A published number may stand beside ours only when every result of the row is the published row's setting
(DESIGN.md, "Names are promises"): :mod:`usebench.report.pairing` compares each stored record (every stage's
resolved config, the backbone's fingerprint, the training data's sha256) with the setting derived from the
published row (its method's or chain's resolved preset, the published backbone's fingerprint, the release's
checksum). :func:`run_settings` collects each row's records; :func:`unmet` lists the exact keys that differ,
"key: ours X, paper Y" (empty: the two may be compared).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from usebench.report.pairing import PairingContext, Verdict, compare_record
from usebench.stats.table_rows import UNTRAINED, ResultIndex, RowKey


@dataclass(frozen=True)
class RunSettings:
    """One row of ours: its model name (for display only) and every stored record of it."""

    model: str
    trained: bool
    records: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)


def run_settings(index: ResultIndex) -> dict[RowKey, RunSettings]:
    """Every row's records, read from its results."""
    out = {}
    for key, cells in index.rows.items():
        records = tuple(r.record for results in cells.values() for r in results)
        out[key] = RunSettings(key.model, key.method not in UNTRAINED, records)
    return out


def same_model(ours: str, ref: str | None) -> bool:
    """Our model *name* is the reference's (an HF id, or a local path ending in it). A name only: it chooses which
    published rows are candidates for display and for the App. A tables, never whether a number is paired."""
    if not ref or not ours:
        return False
    ours = ours.rstrip("/")
    return ours == ref or ours.endswith("/" + ref) or ours.rsplit("/", 1)[-1] == ref.rsplit("/", 1)[-1]


def verdict(settings: Mapping[str, Any] | None, run: RunSettings, row_method: str,
            ctx: PairingContext | None = None) -> Verdict:
    """Every record of ``run`` against a published row's ``settings``: the union of their gaps (with how many
    results show each) and of their notes."""
    if not settings:
        return Verdict(("the published row records no settings",))
    if not run.records:
        return Verdict(("ours: no results",))
    ctx = ctx or PairingContext()
    gaps: dict[str, int] = {}
    notes: dict[str, None] = {}
    for record in run.records:
        v = compare_record(record, settings, row_method, ctx)
        for g in v.gaps:
            gaps[g] = gaps.get(g, 0) + 1
        notes.update(dict.fromkeys(v.notes))
    n = len(run.records)
    shown = tuple(g if c == n else f"{g} ({c} of {n} results)" for g, c in gaps.items())
    return Verdict(shown, tuple(notes))


def unmet(settings: Mapping[str, Any] | None, run: RunSettings, row_method: str = "",
          ctx: PairingContext | None = None) -> list[str]:
    """What ``run`` misses of a published row's ``settings``, one "key: ours X, paper Y" each (empty: none)."""
    return list(verdict(settings, run, row_method, ctx).gaps)
