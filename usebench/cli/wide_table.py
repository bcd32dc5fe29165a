"""A wide table of text cells printed as rich prints it, in a fraction of the time.

`bench run --dry-run` and `bench reproduce --dry-run` print one row per unit (1,895 rows for the TSDAE recipe), and
`bench status` one per unit of the store. Rich measures and renders every cell through its generic layout
(wrapping, cropping, measuring each renderable again per line): 3 of the 6 seconds of a planned `bench reproduce
tsdae --dry-run`, and 60% of a `bench status` of as many units. These tables need little of it: cells are text (one
style at most, such as a unit state's colour), a column takes its widest line or is capped (rich's overflow="fold"),
left or right justified. :func:`print_table` lays such a table out itself, as rich's ``Table`` does (its widths, its
collapse of the widest columns on a narrow console, its word wrap, box, padding and centred title), and hands rich
one pre-laid text with its styles to print. What rich would rewrite (markup or an emoji code in a title, a tab or
control character, a cell of several styles, a header wider than its column) goes to rich's own ``Table``.
``tests/cli/test_wide_table.py`` holds the text equal to rich's, byte for byte.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Union

from rich.cells import cell_len
from rich.console import Console
from rich.style import Style
from rich.table import Table
from rich.text import Span, Text

# A Text cell carries one style: as its base style (rich styles the cell's lines padded to the column), or as one
# span over all of its text, as markup such as "[green]done[/green]" gives (rich styles the text, not the padding).
Cell = Union[str, Text]

try:  # rich's own helpers for a table wider than the console (private: without them, such a table is rich's)
    from rich._ratio import ratio_reduce
    _collapse_widths = Table._collapse_widths
except (ImportError, AttributeError):  # pragma: no cover - another rich
    ratio_reduce = _collapse_widths = None

# what rich's Text strips or expands (control codes, tabs) and markup/emoji a str title would be read as
_RICH_REWRITES = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")
_MARKUP = re.compile(r"\[|:[^\s:]*:")  # a markup tag's bracket, an emoji code such as :smile:


@dataclass(frozen=True)
class Column:
    header: str
    max_width: int | None = None  # a capped column folds its longer cells, as rich's overflow="fold"
    justify: Literal["left", "right"] = "left"


def print_table(console: Console, title: str, columns: Sequence[Column], rows: Sequence[Sequence[Cell]]) -> None:
    """Print ``rows`` (a cell per column, lines split by newlines) under ``columns`` as rich's ``Table(title=...)``
    with ``add_column(header, justify=..., max_width=..., overflow="fold")`` and ``add_row`` of the cells as
    ``Text`` would (:func:`rich_table`)."""
    laid = layout(console, title, columns, rows)
    if laid is None:
        console.print(rich_table(title, columns, rows))
        return
    text, spans = laid
    console.print(Text(text, spans=spans, no_wrap=True, end="\n"), soft_wrap=True, highlight=False, markup=False,
                  emoji=False)


def rich_table(title: str, columns: Sequence[Column], rows: Sequence[Sequence[Cell]]) -> Table:
    """The same table as rich's own ``Table`` (the fallback, and the reference the tests compare with)."""
    table = Table(title=title)
    for column in columns:
        if column.max_width is None:
            table.add_column(column.header, justify=column.justify)
        else:
            table.add_column(column.header, justify=column.justify, max_width=column.max_width, overflow="fold")
    for row in rows:
        table.add_row(*(cell if isinstance(cell, Text) else Text(cell) for cell in row))
    return table


def layout(console: Console, title: str, columns: Sequence[Column], rows: Sequence[Sequence[Cell]]
           ) -> tuple[str, list[Span]] | None:
    """The table as rich lays it out (its text, and the spans of its styles: the title's, the headers', each styled
    cell's); None where rich's layout is not this simple one."""
    if _MARKUP.search(title) or _RICH_REWRITES.search(title) or any(
            _MARKUP.search(c.header) or _RICH_REWRITES.search(c.header) for c in columns):
        return None
    if any(len(row) != len(columns) for row in rows):
        return None
    plain = [[cell if isinstance(cell, str) else cell.plain for cell in row] for row in rows]
    styles = [[_style_of(cell) for cell in row] for row in rows]
    if any(style is _MIXED for row in styles for style in row):
        return None
    if any(_RICH_REWRITES.search(cell) for row in plain for cell in row):
        return None
    split = [[cell.split("\n") for cell in row] for row in plain]  # each cell's lines, once
    widths = _column_widths(columns, split, console.width)
    if widths is None:
        return None
    if any(style is not None and not style[1] and any(cell_len(line) > w for line in lines)
           for row, cells in zip(styles, split) for style, lines, w in zip(row, cells, widths)):
        return None  # a text-styled cell rich would wrap
    table_width = sum(w + 2 for w in widths) + len(widths) + 1
    if cell_len(title) > table_width or any(cell_len(c.header) > w for c, w in zip(columns, widths)):
        return None  # rich would wrap the title or a header

    out = _Builder()
    excess = table_width - cell_len(title)
    out.add(" " * (excess // 2) + title + " " * (excess - excess // 2), "table.title")  # centred, all italic
    out.add("\n┏" + "┳".join("━" * (w + 2) for w in widths) + "┓\n┃")
    for column, width in zip(columns, widths):
        left, right = _padding(column.header, width, column.justify)
        # bold, as rich's table.header: the padding, the justified header and the padding, three segments as rich's
        out.add(" ", "table.header")
        out.add(left + column.header + right, "table.header")
        out.add(" ", "table.header")
        out.add("┃")
    out.add("\n┡" + "╇".join("━" * (w + 2) for w in widths) + "┩\n")
    for row_styles, texts, row_lines in zip(styles, plain, split):
        cells = [_cell_lines(console, text, lines, w, c) for text, lines, w, c in zip(texts, row_lines, widths, columns)]
        for k in range(max(len(lines) for lines in cells)):
            out.add("│")
            for lines, width, column, style in zip(cells, widths, columns, row_styles):
                line = lines[k] if k < len(lines) else ""
                left, right = _padding(line, width, column.justify)
                if style is None or k >= len(lines):  # the blank lines below a short cell are unstyled (rich's)
                    out.add(f" {left}{line}{right} │")
                elif style[1]:  # a base style: rich pads the cell's lines under it (Text.truncate(pad=True))
                    out.add(" ")
                    out.add(f"{left}{line}{right}", style[0])
                    out.add(" │")
                else:  # a span over the text: the text alone
                    out.add(" " + left)
                    out.add(line, style[0])
                    out.add(right + " │")
            out.add("\n")
    out.add("└" + "┴".join("─" * (w + 2) for w in widths) + "┘")
    return "".join(out.parts), out.spans


_MIXED = ("mixed", False)  # a cell of several styles: rich's to lay out


def _style_of(cell: Cell) -> tuple[str | Style, bool] | None:
    """(style, whether it covers the padding) of a cell; None for plain text."""
    if isinstance(cell, str):
        return None
    if not cell.spans:
        return (cell.style, True) if cell.style else None
    if cell.style or len(cell.spans) > 1 or cell.spans[0].start != 0 or cell.spans[0].end < len(cell.plain):
        return _MIXED
    return cell.spans[0].style, False


class _Builder:
    """The table's text in pieces, and the spans of the styled ones at their offsets."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.spans: list[Span] = []
        self.offset = 0

    def add(self, piece: str, style: str | Style | None = None) -> None:
        if style is not None and piece:
            self.spans.append(Span(self.offset, self.offset + len(piece), style))
        self.parts.append(piece)
        self.offset += len(piece)


def _column_widths(columns: Sequence[Column], rows: Sequence[Sequence[list[str]]], console_width: int
                   ) -> list[int] | None:
    """Each column's content width as rich's ``Table._calculate_column_widths`` finds it: the widest line (capped at
    the column's ``max_width``); when the table is wider than the console, rich's own collapse of the widest
    columns, then its even reduction. None where rich would clamp a single cell to the console or a column would
    vanish."""
    if not columns:
        return None
    room = console_width - (len(columns) + 1)  # the console less the borders
    natural = []
    for i, column in enumerate(columns):
        widest = max([cell_len(column.header)] + [cell_len(line) for row in rows for line in row[i]])
        natural.append(widest + 2 if column.max_width is None else min(widest, column.max_width) + 2)  # + padding
    if max(natural) > room:
        return None
    widths = natural
    if sum(widths) > room:  # rich wraps the widest columns (every column here may wrap)
        if _collapse_widths is None or ratio_reduce is None:
            return None
        widths = _collapse_widths(widths, [True] * len(widths), room)
        if sum(widths) > room:
            widths = ratio_reduce(sum(widths) - room, [1] * len(widths), widths, widths)
        widths = [min(w, n) for w, n in zip(widths, natural)]  # rich measures each column again at its width
    if min(widths) < 3:
        return None
    return [w - 2 for w in widths]


def _cell_lines(console: Console, cell: str, lines: list[str], width: int, column: Column) -> list[str]:
    if any(cell_len(line) > width for line in lines):  # rich's word wrap: a capped column folds a long word,
        overflow = "fold" if column.max_width is not None else "ellipsis"  # another cuts it with an ellipsis
        return [line.plain for line in Text(cell).wrap(console, width, justify=column.justify, overflow=overflow)]
    if column.justify == "right":  # rich right-justifies a line without its trailing whitespace
        return [line.rstrip() for line in lines]
    return lines


def _padding(text: str, width: int, justify: str) -> tuple[str, str]:
    """The spaces left and right of ``text`` in a column of ``width``."""
    gap = " " * (width - cell_len(text))
    return (gap, "") if justify == "right" else ("", gap)
