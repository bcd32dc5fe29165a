"""R. Wang 2022 (thesis): the tables measured on eBay's internal eProduct task, on the thesis' skeleton.

- ``thesis-studies``: Tables 5.11 (batch size), 5.12 and 5.13 (corpus size at 1 and 3 epochs) were measured on
  eProduct; our runs of the same studies on public data (Quora, STS-B) fill the row of their own setting, decided by
  the resolved SimCSE config (``batch_size``, ``epochs``) and the unit's corpus size, never by a label. A row of the
  thesis no run of the store has is a "—" row with the reason; our other rows follow, marked as not in the thesis.
- ``thesis-eproduct``: Tables 5.4, 5.5, 5.8, 5.14-5.16, every row a "—" row (eBay-internal data): no run of the
  store is collected into them.

The thesis prints its tables without block headers; where one report table holds several of its tables, a block is
one table, named by its number as the thesis' captions do (004_812ab4b1d0bc624d.txt lines 683, 700, 734, 805, 819,
838, 863, 886, 915).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from usebench.report.build import Built, Cell, Row, build_table
from usebench.report.pairing import PairingContext
from usebench.report.reference import Comparison, RefEntry, entries, load_reference, published
from usebench.stats.table_rows import ResultIndex, RowKey, index_results
from usebench.report.sections import Section
from usebench.report.skeleton import NOT_IN_PAPER, _row_configs
from usebench.stats.table_specs import TableSpec
from usebench.store import StoredResult

STUDY_TABLES = ("thesis-table5.11", "thesis-table5.12", "thesis-table5.13")
EPRODUCT_TABLES = ("thesis-table5.4", "thesis-table5.5", "thesis-table5.8", "thesis-table5.14", "thesis-table5.15",
                   "thesis-table5.16")
# Every study row shares the thesis' basic setup (Table 5.3): batch 64, 1 epoch, 100k titles, but for the field its
# table varies (Table 5.11's lines 805-811, 5.12's 819-821, 5.13's 838-840)
STUDY_DEFAULT = {"batch_size": 64, "epochs": 1.0, "corpus_size": 100_000,
                 # SimCSE's own loss, the checkpoint chosen by validation loss (line 793): not Table 5.9's NT-Xent/BCE
                 # runs, nor Table 5.17's selection on Quora dev
                 "loss": "infonce", "dev_metric": "loss"}
_SIZE = {"1M": 1_000_000, "100k": 100_000, "50k": 50_000, "20k": 20_000, "10k": 10_000}


def study_setting(table_id: str, label: str) -> dict[str, Any]:
    """What a row of ours must have to be this published study row: SimCSE's batch size, epochs and corpus size."""
    if table_id == "thesis-table5.11":
        return {**STUDY_DEFAULT, "batch_size": int(re.match(r"batch (\d+)", label).group(1))}  # type: ignore[union-attr]
    size = _SIZE[label.split(" ", 1)[0]]
    return {**STUDY_DEFAULT, "corpus_size": size, "epochs": 1.0 if table_id == "thesis-table5.12" else 3.0}


def _row_setting(index: ResultIndex, key: RowKey) -> dict[str, Any] | None:
    """The study fields of one row of ours (None when its results disagree in them or it is not SimCSE)."""
    if key.method != "simcse":
        return None
    configs = _row_configs(index, key)
    values = {(c.get("batch_size"), float(c.get("epochs") or 0), c.get("loss"), c.get("dev_metric")) for c in configs}
    if len(values) != 1:
        return None
    batch, epochs, loss, dev_metric = next(iter(values))
    sizes = {_corpus_size(r.record) for results in index.rows.get(key, {}).values() for r in results}
    return {"batch_size": batch, "epochs": epochs, "corpus_size": sizes.pop() if len(sizes) == 1 else None,
            "loss": loss, "dev_metric": dev_metric}


def _corpus_size(record: Mapping[str, Any]) -> int | None:
    """The number of training sentences of a unit: ``--corpus-size`` when given, else the whole corpus it read."""
    config = record.get("config") or {}
    return config.get("corpus_size") or (config.get("corpus") or {}).get("sentences")


def _empty(columns, slot: RefEntry, block: str, reason: str, i: int) -> Row:
    return Row(label=slot.label, block=block, cells={c.id: Cell(None, n=0) for c in columns}, slot=i, note=reason)


def _no_comparison(built: Built, why: str) -> Comparison:
    return Comparison(name=f"{built.name}-vs-paper", title=f"{built.title}: ours vs paper", columns=built.columns,
                      rows=(), decimals=built.decimals, notes=(why,))


def _source(table_id: str) -> str:
    return str(load_reference()["tables"][table_id]["table"])  # "Table 5.11"


EPRODUCT_WHY = ("eProduct, eBert and the eBay titles are eBay-internal: no run here can meet this row's setting, and "
                "no public score is the thesis' eProduct number")


def studies_section(results: list[StoredResult], spec: TableSpec, ctx: PairingContext | None = None) -> Section:
    """Tables 5.11-5.13's rows in the thesis' order, each holding our public-data run of its setting or "—"."""
    index = index_results(results)
    built = build_table(spec, index, None, ctx.data_root if ctx else None)
    settings = {r.key: _row_setting(index, r.key) for r in built.rows if r.key is not None}
    rows: list[Row] = []
    placed: set[int] = set()
    missing = []
    i = 0
    for table_id in STUDY_TABLES:
        block = _source(table_id)
        for slot in entries(table_id):
            wanted = study_setting(table_id, slot.label)
            # one run can be the row of two tables (5.11's batch 64 is 5.12's 100k: the same setting)
            mine = [(n, r) for n, r in enumerate(built.rows) if r.key is not None
                    and settings.get(r.key) is not None
                    and all(settings[r.key].get(k) == v for k, v in wanted.items())]
            for n, r in mine:
                placed.add(n)
                rows.append(replace(r, label=f"{slot.label} · {r.label}", block=block, slot=i))
            if not mine:
                why = (f"no SimCSE run with batch size {wanted['batch_size']}, {wanted['epochs']:g} epoch(s) on "
                       f"{wanted['corpus_size']:,} sentences (InfoNCE, selected on validation loss) in this store")
                rows.append(_empty(built.columns, slot, block, why, i))
                missing.append(f"— {block} / {slot.label}: {why}.")
            i += 1
    rows += [replace(r, block=r.block + NOT_IN_PAPER) for n, r in enumerate(built.rows) if n not in placed]
    notes = list(built.notes) + ["Rows in the order of the thesis' Tables 5.11-5.13 (measured on eProduct); a row "
                                 "of ours is the study row of its batch size, epochs and corpus size, scored on the "
                                 "public tasks of the columns, never beside the eProduct numbers."]
    if missing:
        notes += ["Rows of Tables 5.11-5.13 not made here:", *missing]
    built = replace(built, rows=tuple(rows), notes=tuple(notes))
    return Section(built, _no_comparison(built, EPRODUCT_WHY + "."), published(spec))


def eproduct_section(results: list[StoredResult], spec: TableSpec, ctx: PairingContext | None = None) -> Section:
    """The thesis' eProduct tables: every published row, "—" with the reason (no run of the store is theirs)."""
    built = build_table(spec, index_results([]), None, None)
    rows = []
    i = 0
    for table_id in EPRODUCT_TABLES:
        for slot in entries(table_id):
            rows.append(_empty(built.columns, slot, _source(table_id), f"cannot be made here: {EPRODUCT_WHY}", i))
            i += 1
    built = replace(built, rows=tuple(rows), notes=(spec.caption, f"Every row: cannot be made here: {EPRODUCT_WHY}."))
    return Section(built, _no_comparison(built, EPRODUCT_WHY + "."), published(spec))


__all__ = ["EPRODUCT_TABLES", "STUDY_TABLES", "eproduct_section", "studies_section", "study_setting"]
