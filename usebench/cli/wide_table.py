"""A wide table of plain-text cells printed as rich prints it, in a fraction of the time.

`bench run --dry-run` and `bench reproduce --dry-run` print one row per unit: 1,895 rows for the TSDAE recipe. Rich
measures and renders every cell through its generic layout (wrapping, cropping, measuring each renderable again
per line), which took 3 of the 6 seconds of a planned `bench reproduce tsdae --dry-run`. These tables need little
of it: every cell is plain text, every column takes its widest line (a capped column folds its long cells, as rich
does), and the whole table fits the console. :func:`print_table` lays such a table out itself, with rich's box,
padding, title and wrapping, and hands rich one pre-laid text to print (styles kept on a terminal); anything else
(a table wider than the console, a control character rich would strip, a title rich would wrap or read as markup)
goes to rich's own ``Table``. ``tests/cli/test_wide_table.py`` holds the output equal to rich's, byte for byte.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rich._ratio import ratio_reduce
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

# what rich's Text strips or expands (control codes, tabs) and markup/emoji a str title would be read as
_RICH_REWRITES = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")
_MARKUP = re.compile(r"\[|:[^\s:]*:")  # a markup tag's bracket, an emoji code such as :smile:


@dataclass(frozen=True)
class Column:
    header: str
    max_width: int | None = None  # a capped column folds its longer cells, as rich's overflow="fold"


def print_table(console: Console, title: str, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
    """Print ``rows`` (one str per column, lines split by newlines) under ``columns`` as rich's ``Table(title=...)``
    with ``add_column(header, max_width=..., overflow="fold")`` and ``add_row(*map(Text, row))`` would."""
    laid = layout(console, title, columns, rows)
    if laid is None:
        console.print(rich_table(title, columns, rows))
        return
    lines, widths = laid
    text = Text(no_wrap=True, end="\n")
    text.append(lines[0], style="table.title")
    text.append("\n" + lines[1] + "\n┃")
    for column, width in zip(columns, widths):  # the headers bold, as rich's table.header
        text.append(" ")
        text.append(column.header, style="table.header")
        text.append(" " * (width - cell_len(column.header)) + " ┃")
    text.append("\n" + "\n".join(lines[3:]))
    console.print(text, soft_wrap=True, highlight=False, markup=False, emoji=False)


def rich_table(title: str, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> Table:
    """The same table as rich's own ``Table`` (the fallback, and the reference the tests compare with)."""
    table = Table(title=title)
    for column in columns:
        if column.max_width is None:
            table.add_column(column.header)
        else:
            table.add_column(column.header, max_width=column.max_width, overflow="fold")
    for row in rows:
        table.add_row(*map(Text, row))
    return table


def layout(console: Console, title: str, columns: Sequence[Column], rows: Sequence[Sequence[str]]
           ) -> tuple[list[str], list[int]] | None:
    """The table's lines as rich lays them out, and its columns' widths; None where rich's layout is not this
    simple one."""
    if _MARKUP.search(title) or _RICH_REWRITES.search(title) or any(
            _MARKUP.search(c.header) or _RICH_REWRITES.search(c.header) for c in columns):
        return None
    if any(len(row) != len(columns) for row in rows):
        return None
    if any(_RICH_REWRITES.search(cell) for row in rows for cell in row):
        return None
    widths = _column_widths(console, columns, rows)
    if widths is None:
        return None
    table_width = sum(w + 2 for w in widths) + len(widths) + 1
    if cell_len(title) > table_width or any(cell_len(c.header) > w for c, w in zip(columns, widths)):
        return None  # rich would wrap the title or a header
    excess = table_width - cell_len(title)
    out = [" " * (excess // 2) + title + " " * (excess - excess // 2),
           "┏" + "┳".join("━" * (w + 2) for w in widths) + "┓",
           "┃" + "┃".join(f" {_pad(c.header, w)} " for c, w in zip(columns, widths)) + "┃",
           "┡" + "╇".join("━" * (w + 2) for w in widths) + "┩"]
    for row in rows:
        cells = [_cell_lines(console, cell, w, c.max_width is not None) for cell, w, c in zip(row, widths, columns)]
        for k in range(max(len(cell) for cell in cells)):
            out.append("│" + "│".join(f" {_pad(cell[k] if k < len(cell) else '', w)} "
                                      for cell, w in zip(cells, widths)) + "│")
    out.append("└" + "┴".join("─" * (w + 2) for w in widths) + "┘")
    return out, widths


def _column_widths(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> list[int] | None:
    """Each column's content width as rich's ``Table._calculate_column_widths`` finds it: the widest line (capped at
    the column's ``max_width``); when the table is wider than the console, rich's own collapse of the widest
    columns, then its even reduction. None where rich would clamp a single cell to the console or a column would
    vanish."""
    if not columns:
        return None
    room = console.width - (len(columns) + 1)  # the console less the borders
    natural = []
    for i, column in enumerate(columns):
        widest = max([cell_len(column.header)] + [cell_len(line) for row in rows for line in row[i].split("\n")])
        natural.append(widest + 2 if column.max_width is None else min(widest, column.max_width) + 2)  # + padding
    if max(natural) > room:
        return None
    widths = natural
    if sum(widths) > room:  # rich wraps the widest columns (every column here may wrap)
        widths = Table._collapse_widths(widths, [True] * len(widths), room)
        if sum(widths) > room:
            widths = ratio_reduce(sum(widths) - room, [1] * len(widths), widths, widths)
        widths = [min(w, n) for w, n in zip(widths, natural)]  # rich measures each column again at its width
    if min(widths) < 3:
        return None
    return [w - 2 for w in widths]


def _cell_lines(console: Console, cell: str, width: int, capped: bool) -> list[str]:
    lines = cell.split("\n")
    if any(cell_len(line) > width for line in lines):  # rich's word wrap: a capped column folds a long word,
        overflow = "fold" if capped else "ellipsis"       # another cuts it with an ellipsis (rich's default)
        return [line.plain for line in Text(cell).wrap(console, width, justify="left", overflow=overflow)]
    return lines


def _pad(text: str, width: int) -> str:
    return text + " " * (width - cell_len(text))
