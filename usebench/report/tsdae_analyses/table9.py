"""TSDAE Table 9 (App. C): TSDAE, CT, SimCSE and BERT-flow from other checkpoints, on the paper's skeleton."""
from __future__ import annotations

from dataclasses import replace

from usebench.report.build import Row
from usebench.report.pairing import PairingContext
from usebench.report.reference import entries
from usebench.report.row_settings import same_model
from usebench.report.sections import Section
from usebench.report.skeleton import NOT_IN_PAPER
from usebench.stats.table_specs import TableSpec
from usebench.report.tsdae_analyses.common import _skeleton_notes, _slot_row
from usebench.store import StoredResult

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
    from usebench.stats.table_rows import index_results
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
