"""What the comparison with the paper says about each row, short: the seeds beside a Δ, and for a row without a
published neighbour the main differences first (every difference is kept in the comparison's ``unpaired`` detail:
the table's JSON and the HTML page's collapsible list), so a note is a line a reader reads, not 1,500 characters."""
from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from usebench.stats.table_specs import Column, column_tasks

if TYPE_CHECKING:
    from usebench.report.row_settings import RunSettings


class PublishedRow(Protocol):
    """What a note names of a published row (``reference.RefEntry`` has it; typed here so that the builder and
    the reference table, which both write notes, are not imported by them)."""
    source: str
    label: str

SHOWN_GAPS = 2  # differences named in a note, of the published row nearest ours (fewest differences)
SHOWN_ROWS = 1  # published rows named per note; the others are counted
GAP_CHARS = 200  # a difference longer than this is cut in a note (never in the detail)
# The differences a reader needs first: what was evaluated, on what model, trained on what; then the config keys.
_ORDER = ("split:", "evaluation data:", "backbone", "tokenizer:", "stages:", "training data:", "checkpoint selection:")


def seeds_text(ours: int | None, paper: int | None) -> str:
    """"1 of 5 seeds" (ours of the paper's), or "3 seeds (paper: not stated)"."""
    n = ours or 0
    if paper:
        return f"{n} of {paper} seeds"
    return f"{n} seed{'s' if n != 1 else ''} (paper: not stated)"


def _rank(gap: str) -> int:
    bare = re.sub(r"^stage \d+ \([^)]*\) ", "", gap)  # a chain's stage prefix does not change what the gap is
    return next((i for i, head in enumerate(_ORDER) if bare.startswith(head)), len(_ORDER))


def main_first(gaps: list[str]) -> list[str]:
    """The differences in the order a reader needs them (stable within each kind)."""
    return sorted(gaps, key=_rank)


def _cut(text: str) -> str:
    return text if len(text) <= GAP_CHARS else text[:GAP_CHARS - 1].rstrip() + "…"


def unpaired_note(label: str, missed: list[tuple[PublishedRow, list[str]]]) -> str:
    """``label`` has no published neighbour: the nearest rows it would fit, each with its main differences."""
    shown = []
    missed = sorted(missed, key=lambda m: len(m[1]))  # the nearest first (stable: the table's order otherwise)
    for e, gaps in missed[:SHOWN_ROWS]:
        ordered = main_first(gaps)
        more = f"; and {len(ordered) - SHOWN_GAPS} more" if len(ordered) > SHOWN_GAPS else ""
        shown.append(f"{e.source} {e.label} differs in {'; '.join(_cut(g) for g in ordered[:SHOWN_GAPS])}{more}")
    rows = f" (and {len(missed) - SHOWN_ROWS} more published rows)" if len(missed) > SHOWN_ROWS else ""
    return f"No published neighbour for {label}: " + " | ".join(shown) + rows + "."


def shown_records(run: RunSettings | None, columns: tuple[Column, ...], split: str | None) -> RunSettings | None:
    """``run`` with only the results behind a table's cells (its columns' tasks, its ``split``): a row's results on
    another split or task are no part of what is put beside the paper's numbers."""
    if run is None:
        return None
    tasks = column_tasks(columns)
    kept = tuple(r for r in run.records if r["task"]["name"] in tasks
                 and (split is None or r["task"].get("split", "test") == split))
    return replace(run, records=kept)
