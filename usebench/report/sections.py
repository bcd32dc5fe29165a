"""One report section (a table, its comparison with the paper, the published tables and paired comparisons)
rendered as Markdown, LaTeX or HTML; `bench report`'s files and its single page are both made of these."""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from usebench.report.build import Built
from usebench.report.reference import Comparison
from usebench.report.render import grid_of, grid_of_comparison, to_html, to_latex, to_markdown


@dataclass
class Section:
    """One table with its comparison to the paper, the published tables and paired comparisons."""

    built: Built
    comparison: Comparison
    published: list[Built]
    paired: list[str] = field(default_factory=list)


def unpaired_notes(s: Section) -> list[str]:
    """Why no row of ours stands beside a published number (the keys that differ, ours against the paper's): the
    comparison's notes when it paired nothing, which would otherwise be shown nowhere."""
    if s.comparison.rows or not s.published:
        return []
    return [n for n in s.comparison.notes if n.startswith("No published neighbour")]


def unpaired_detail_html(s: Section) -> list[str]:
    """Every key that keeps each row from a published number, one collapsible list per row (the notes name the main
    ones)."""
    out = []
    for label, missed in s.comparison.unpaired:
        items = "".join(f"<li>{html.escape(p)}<ul>" + "".join(f"<li>{html.escape(g)}</li>" for g in gaps) + "</ul></li>"
                        for p, gaps in missed)
        out.append(f'<details class="unpaired"><summary>Why {html.escape(label)} has no published neighbour '
                   f"(every difference)</summary><ul>{items}</ul></details>")
    return out


def section_markdown(s: Section) -> str:
    """A table, ours vs paper, paired comparisons and the published tables, as Markdown."""
    parts = [to_markdown(grid_of(s.built))]
    if s.comparison.rows:
        parts.append(to_markdown(grid_of_comparison(s.comparison)))
    if unpaired_notes(s):
        parts.append("Not beside the published numbers (a published number stands beside ours only where the "
                     "settings are equal):\n\n" + "\n".join(f"- {x}" for x in unpaired_notes(s)) + "\n")
    if s.paired:
        parts.append("Paired comparison (over items and seeds where per-item outcomes are stored, else over seeds):"
                     "\n\n" + "\n".join(f"- {x}" for x in s.paired) + "\n")
    parts += [to_markdown(grid_of(p)) for p in s.published]
    return "\n".join(parts)


def section_latex(s: Section) -> str:
    parts = [to_latex(grid_of(s.built))]
    if s.comparison.rows:
        parts.append(to_latex(grid_of_comparison(s.comparison)))
    return "\n".join(parts)


def section_html(s: Section, beside: str = "") -> str:
    """The section as HTML; ``beside``: what follows the table itself (its learning curves), before the rest."""
    parts = [to_html(grid_of(s.built)), beside] if beside else [to_html(grid_of(s.built))]
    if s.comparison.rows:
        parts.append(to_html(grid_of_comparison(s.comparison)))
    if unpaired_notes(s):
        parts.append("<h4>Not beside the published numbers</h4><ul class=\"unpaired\">"
                     + "".join(f"<li>{html.escape(x)}</li>" for x in unpaired_notes(s)) + "</ul>")
    parts += unpaired_detail_html(s)
    if s.paired:
        parts.append("<h4>Paired comparison</h4><ul class=\"paired\">"
                     + "".join(f"<li>{html.escape(x)}</li>" for x in s.paired) + "</ul>")
    parts += [to_html(grid_of(p)) for p in s.published]
    return "\n".join(parts)
