"""The dry run's wide table (`usebench/cli/wide_table.py`) is rich's table, byte for byte: on random tables with
multi-line cells, wide characters, long words, a capped (folding) column and consoles narrow enough that rich
collapses and wraps columns; and where its layout is not the simple one (markup in a title, a control character,
a column narrower than its header) it hands the table to rich."""
from __future__ import annotations

import io
import random

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from usebench.cli.wide_table import Column, layout, print_table, rich_table

WORDS = ["tsdae", "simcse", "nli-sts>tsdae", "twitterpara", "(test)", "s0", "batch_size=8", "日本語", "é", "x",
         "a-very-long-word-without-any-space-in-it-at-all", "", "max_steps=2", "reused from #3"]


def _printed(width: int, draw) -> str:
    out = io.StringIO()
    draw(Console(width=width, file=out))
    return out.getvalue()


def _random_table(rng: random.Random) -> tuple[str, list[Column], list[tuple]]:
    n = rng.randint(1, 8)
    columns = [Column(f"col{i}", max_width=rng.choice([None, None, 12, 36]),
                      justify=rng.choice(["left", "left", "right"])) for i in range(n)]

    def cell():
        text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6)))
                         for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.1:
            return Text(text, style=rng.choice(["green", "bold red"]))  # the padded lines in the style
        if rng.random() < 0.1:
            state = rng.choice(["done", "running", "failed", ""])  # the text alone in the style (bench status')
            return Text.from_markup(f"[cyan]{state}[/cyan]")
        return text

    rows = [tuple(cell() for _ in columns) for _ in range(rng.randint(0, 12))]
    return f"bench run --dry-run: {len(rows)} unit(s)", columns, rows


def test_random_tables_print_as_rich_prints_them():
    rng = random.Random(0)
    fast = 0
    for _ in range(400):
        title, columns, rows = _random_table(rng)
        width = rng.choice([320, 320, 160, 90, 60])
        ours = _printed(width, lambda c: print_table(c, title, columns, rows))
        theirs = _printed(width, lambda c: c.print(rich_table(title, columns, rows)))
        assert ours == theirs, (width, title, columns, rows)
        fast += layout(Console(width=width, file=io.StringIO()), title, columns, rows) is not None
    assert fast > 250  # most of them took the fast layout, collapsed ones included


def test_collapsed_columns_are_laid_out_here_not_by_rich():
    columns = [Column("#"), Column("chain"), Column("variant", max_width=36)]
    rows = [("1", "nli-sts>tsdae " * 6, "smoke + max_steps=2 batch_size=8 max_length=16 a-very-long-word-" * 3),
            ("2", "tsdae", "-")]  # 84 + 36 wide: over a console of 120 with the borders and padding
    console = Console(width=120, file=io.StringIO())
    laid = layout(console, "t", columns, rows)
    assert laid is not None and max(cell_len(line) for line in laid[0].split("\n")) <= 120
    assert _printed(120, lambda c: print_table(c, "t", columns, rows)) == \
        _printed(120, lambda c: c.print(rich_table("t", columns, rows)))


@pytest.mark.parametrize("title, cell, header", [
    ("plan [bold]x[/bold]", "a", "h"),       # markup rich would read in a str title
    ("plan :smile: x", "a", "h"),            # an emoji code
    ("plan", "a\tb", "h"),                   # a tab rich expands
    ("plan", "bell\x07", "h"),               # a control code rich strips
    ("plan", "a", "a-header-wider-than-a-console-of-twenty"),  # rich would wrap the header
])
def test_what_rich_would_rewrite_goes_to_rich(title, cell, header):
    columns = [Column(header), Column("b")]
    assert layout(Console(width=20, file=io.StringIO()), title, columns, [(cell, "x")]) is None
    assert _printed(20, lambda c: print_table(c, title, columns, [(cell, "x")])) == \
        _printed(20, lambda c: c.print(rich_table(title, columns, [(cell, "x")])))


def test_on_a_terminal_the_styles_are_rich_s():
    """With colours on, the same bytes as rich's as well: the title italic, the headers bold, a styled cell's
    padded lines in its style (a unit state's colour in `bench status`)."""
    def printed(width: int, draw) -> str:
        out = io.StringIO()
        draw(Console(width=width, file=out, force_terminal=True, color_system="standard"))
        return out.getvalue()

    rng = random.Random(1)
    for _ in range(200):
        title, columns, rows = _random_table(rng)
        width = rng.choice([320, 90])
        ours = printed(width, lambda c: print_table(c, title, columns, rows))
        assert ours == printed(width, lambda c: c.print(rich_table(title, columns, rows))), (title, columns, rows)
        assert "\x1b[3m" in ours  # the title italic (rich's table.title): colours were on


def test_a_cell_of_several_styles_goes_to_rich():
    part = Text("done ok")
    part.stylize("green", 0, 4)
    two = Text.from_markup("[green]done[/green] [red]ok[/red]")
    for cell in (part, two):
        assert layout(Console(width=80, file=io.StringIO()), "t", [Column("a")], [(cell,)]) is None
