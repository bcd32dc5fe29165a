"""TSDAE Table 4: TSDAE from other checkpoints, each USEB task's test score and final training loss."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from usebench.report.build import Built, Cell, Row
from usebench.report.pairing import PairingContext
from usebench.report.reference import RefEntry
from usebench.report.row_settings import same_model
from usebench.report.sections import Section
from usebench.report.skeleton import NOT_IN_PAPER
from usebench.stats.seeds import SeedStats, aggregate, per_seed_average
from usebench.stats.table_specs import COLUMNS, Column, TableSpec
from usebench.report.tsdae_analyses.common import (USEB, _comparison, _marked, _published, _row_settings,
                                                   _skeleton_notes, _slot_row)
from usebench.stats.intervals import Resampler
from usebench.stats.table_cells import interval_note, with_interval
from usebench.store import StoredResult, read_json_lines

def final_loss(result: StoredResult) -> float | None:
    """The last logged training loss of the run behind ``result`` (mean of its last ``log_every`` window)."""
    losses = [line["loss"] for line in read_json_lines(result.path.parent.parent / "log.jsonl") if "loss" in line]
    return float(losses[-1]) if losses else None


class Table4Key(NamedTuple):
    """What makes a Table 4 row: the checkpoint TSDAE starts from, whether from scratch, the budget and the
    decoder ("tied": TSDAE's own tied one, "own": BART's/T5's, else the separate decoder's name)."""

    model: str | None
    from_scratch: bool
    max_steps: int | None
    decoder: str


def _table4_key(record: Mapping[str, Any]) -> Table4Key | None:
    config = record.get("config") or {}
    cfg, corpus = config.get("config") or {}, config.get("corpus") or {}
    task = record["task"]["name"]
    if config.get("method") != "tsdae" or corpus.get("label") != task or record["task"]["split"] != "test":
        return None
    if config.get("corpus_size") is not None:  # a sample of the task's sentences (Fig. 3), not Table 4's whole corpus
        return None
    # the decoder is part of the row: a tied BERT decoder, BART/T5's own, or a separate one are other settings
    decoder = "tied" if cfg.get("tie_encoder_decoder", True) else (cfg.get("decoder_model") or "own")
    return Table4Key(cfg.get("model"), bool(cfg.get("from_scratch")), cfg.get("max_steps"), str(decoder))


TABLE4_STEPS = 100000  # App. B's budget (Table 2's BERT-base row; not restated for the other checkpoints)


def _table4_slot(key: Table4Key, slots: list[tuple[RefEntry, dict[str, Any]]]) -> int | None:
    """The published row our Table 4 row is (TSDAE in-domain): the checkpoint it starts from, by name, whether it is
    trained from scratch, and its decoder (BERT's rows TSDAE's tied one, BART's and T5's their own). A backbone that is none of the published checkpoints stands in for the table's
    backbone (BERT-base, Scratch) only with TSDAE's own tied decoder, marked with its name."""
    model, scratch, decoder = key.model, key.from_scratch, key.decoder
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
    by_key: dict[Table4Key, list[StoredResult]] = defaultdict(list)
    for r in results:
        key = _table4_key(r.record)
        if key is not None:
            by_key[key].append(r)
    columns = tuple(COLUMNS[c] for c in spec.columns)  # each score, then its training loss
    slots = _row_settings("tsdae-table4")
    made: dict[Table4Key, tuple[dict[str, Cell], str]] = {}
    resampler = Resampler()
    for key in sorted(by_key, key=lambda k: str(tuple(k))):  # the order the plain tuple keys had
        cells, losses, scores = {}, {}, {}
        for c in USEB:
            found = [r for r in by_key[key] if r.task == COLUMNS[c].task]
            scores[c] = aggregate(found, COLUMNS[c].metric).scaled(100.0) if found else SeedStats({})
            losses[c] = SeedStats({int(r.record["seed"]): v for r in found if (v := final_loss(r)) is not None})
            cells[c] = with_interval(Cell.from_stats(scores[c]), found, COLUMNS[c].metric or "", resampler)
            cells[f"{c}.loss"] = Cell.from_stats(losses[c])
        cells["useb.avg"] = Cell.from_stats(per_seed_average(list(scores.values())))
        cells["useb.loss"] = Cell.from_stats(per_seed_average(list(losses.values())))
        decoder = key.decoder
        shown = "" if decoder == "tied" else (" · its own decoder" if decoder == "own" else f" · decoder {decoder}")
        made[key] = (cells, shown)
    rows: list[Row] = []
    ours: dict[int, dict[str, Any]] = {}
    found_by_row: dict[int, list[StoredResult]] = {}
    missing = []

    def add(key: Table4Key, label: str, block: str, slot: int | None) -> None:
        found_by_row[len(rows)] = by_key[key]
        ours[len(rows)] = {"model": key.model, "from_scratch": key.from_scratch, "max_steps": key.max_steps,
                           "method": "tsdae", "corpus": "target", "tie_encoder_decoder": key.decoder == "tied"}
        rows.append(_marked(Row(label=label, block=block, cells=made[key][0], slot=slot), by_key[key], ctx))

    slot_of = {key: _table4_slot(key, slots) for key in made}
    for i, (entry, settings) in enumerate(slots):
        mine = [k for k in made if slot_of[k] == i]
        for key in mine:
            model, steps = key.model, key.max_steps
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
        add(key, f"{key.model}{' (from scratch)' if key.from_scratch else ''}{made[key][1]}",
            f"TSDAE · {key.max_steps} steps" + NOT_IN_PAPER, None)
    built = Built(name=spec.name, title=spec.title, caption=spec.caption, columns=columns, rows=tuple(rows),
                  decimals=spec.decimals, notes=(spec.caption, "Split: test.",
                                                 interval_note((c for m in made.values() for c in m[0].values()),
                                                               resampler),
                                                 *_skeleton_notes("TSDAE Table 4", missing)), split="test",
                  spread="ci")
    published = [_table4_published(columns)]
    return Section(built, _comparison(built, ours, ("tsdae-table4",), found_by_row, "test", ctx), published)


def _table4_published(columns: tuple[Column, ...]) -> Built:
    """Table 4 as printed ("score/loss" cells split into a score and a loss column)."""
    built = _published(("tsdae-table4",), columns, 1)[0]
    return replace(built, notes=built.notes + ("Loss columns: the printed training loss after the slash.",))
