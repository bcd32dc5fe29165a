"""Which tables a store fills: `bench report`'s default writes and prints those (fully or partly filled), and names
the others in one line with the reason (``--table all`` writes every table, as before).

A table is filled when one of its rows has a value of ours in one of its cells: the published rows a skeleton lays
out ("—" rows with their reasons) and the published tables beside it do not count, since they hold nothing of the
store's."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from usebench.report.build import Built
from usebench.stats.table_specs import TABLES, column_tasks
from usebench.store import StoredResult


def filled(built: Built) -> bool:
    """Whether one of ``built``'s rows holds a value (ours: a published row is never one of a table's rows)."""
    return any(not cell.missing for row in built.rows for cell in row.cells.values())


def why_empty(built: Built, results: Sequence[StoredResult], split: str | None) -> str:
    """Why the store fills nothing of ``built``: no result on its tasks and split, or results there but in none of
    its rows' settings (another block, method or corpus than its rows take)."""
    spec = TABLES.get(built.name)
    wanted = split or built.split or spec.split
    tasks = column_tasks(built.columns) or column_tasks(tuple(spec.column(c) for c in spec.columns))
    have = {r.record["task"]["name"] for r in results if r.record["task"].get("split") == wanted}
    if not tasks & have:
        return f"no {wanted} results on their tasks"
    return f"{wanted} results on their tasks, but in none of their rows' settings"


def left_out_line(left_out: Iterable[tuple[str, str]]) -> str:
    """One line naming the tables left out, grouped by reason: ``not written: 24 tables this store fills nothing of
    (no test results on their tasks: a, b; ...); --table all writes them``; "" when none was left out."""
    by_reason: dict[str, list[str]] = {}
    for name, reason in left_out:
        by_reason.setdefault(reason, []).append(name)
    if not by_reason:
        return ""
    n = sum(len(v) for v in by_reason.values())
    parts = "; ".join(f"{reason}: {', '.join(names)}" for reason, names in by_reason.items())
    return f"not written: {n} table(s) this store fills nothing of ({parts}); --table all writes them"


def terminal_notes(built: Built) -> Built:
    """``built`` as `bench report` prints it: the list of the paper's rows not made here (a line each, with its
    reason: ~25 lines under a table the store fills one row of) folded into one line naming the file that lists
    them; the files keep the list."""
    from dataclasses import replace

    notes, out, folded = list(built.notes), [], 0
    for note in notes:
        if note.startswith("— ") and out and out[-1].startswith("Rows of ") and "not made here" in out[-1]:
            folded += 1
            continue
        if folded:
            out[-1] = _folded(out[-1], folded, built.name)
            folded = 0
        out.append(note)
    if folded:
        out[-1] = _folded(out[-1], folded, built.name)
    return replace(built, notes=tuple(out))


def _folded(head: str, n: int, name: str) -> str:
    """"Rows of X not made here:" -> "N rows of X not made here (each with its reason: NAME.md)"."""
    return f"{n} r{head[1:].rstrip(':')} (each with its reason: {name}.md)"
