"""Render built tables as Markdown, LaTeX (booktabs), HTML fragments and tidy CSV.

Every text format goes through one :class:`Grid`, so Markdown, LaTeX and HTML show the same values, bold and
daggers; CSV holds the same numbers unrounded. A missing cell is rendered as missing (— or --), never as 0.
"""
from __future__ import annotations

import csv
import html
import io
import json
from dataclasses import dataclass

from usebench.report.build import Built, Cell
from usebench.report.reference import Comparison

MISSING = "—"


@dataclass(frozen=True)
class GCell:
    """A rendered cell: value text (None = missing), bold, dagger, and an aside such as ``n=3``."""

    value: str | None
    std: str | None = None
    bold: bool = False
    dagger: bool = False
    aside: str = ""


@dataclass(frozen=True)
class GRow:
    lead: tuple[str, ...]
    cells: tuple[GCell, ...]


@dataclass(frozen=True)
class Grid:
    """A table laid out for rendering: leading text columns, grouped headers, blocks of rows, notes."""

    name: str
    title: str
    lead: tuple[str, ...]
    groups: tuple[tuple[str, int], ...]  # (upper header, span) over the data columns
    headers: tuple[str, ...]
    blocks: tuple[tuple[str, tuple[GRow, ...]], ...]
    notes: tuple[str, ...]

    def flat_headers(self) -> list[str]:
        out, i = [], 0
        for label, span in self.groups:
            out += [f"{label} {h}".strip() for h in self.headers[i:i + span]]
            i += span
        return out


def _num(value: float | None, decimals: int, signed: bool = False) -> str | None:
    if value is None:
        return None
    return f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"


def _gcell(cell: Cell, decimals: int, row_n: int | None, spread: str = "std") -> GCell:
    """``spread`` "ci": ± the interval's half-width where the cell has one (else its std), as the notes say."""
    aside = f"n={cell.n}" if cell.n and row_n and cell.n != row_n else ""
    pm = (cell.ci[1] - cell.ci[0]) / 2 if spread == "ci" and cell.ci is not None else cell.std
    return GCell(_num(cell.mean, decimals), _num(pm, decimals), cell.bold, cell.dagger, aside)


def _groups(headers: list[tuple[str, str]]) -> tuple[tuple[str, int], ...]:
    groups: list[list] = []
    for group, _ in headers:
        if groups and groups[-1][0] == group and group:
            groups[-1][1] += 1
        else:
            groups.append([group, 1])
    return tuple((g, n) for g, n in groups)


def grid_of(built: Built) -> Grid:
    """Our table (or a published one) as a grid, each row by its short label (the long marks as numbered notes:
    usebench/report/labels.py)."""
    from usebench.report.labels import short_labels

    lead = ("Method", "n") if built.show_n else ("Method",)
    labels, label_notes = short_labels(built.rows)
    label_of = dict(zip(map(id, built.rows), labels))
    blocks = []
    for title, rows in built.blocks():
        grows = []
        for r in rows:
            head = (label_of[id(r)], str(r.n) if r.n else MISSING) if built.show_n else (label_of[id(r)],)
            grows.append(GRow(head, tuple(_gcell(r.cells[c.id], built.decimals, r.n, built.spread)
                                          for c in built.columns)))
        blocks.append((title, tuple(grows)))
    return Grid(name=built.name, title=built.title, lead=lead,
                groups=_groups([(c.group, c.header) for c in built.columns]),
                headers=tuple(c.header for c in built.columns), blocks=tuple(blocks),
                notes=tuple(built.notes) + label_notes)


def grid_of_comparison(comp: Comparison) -> Grid:
    """Ours vs paper, the table's own columns: per compared row three lines, ours, the paper's and Δ (a set of three
    columns per column made a 13-column table 39 numbers wide)."""
    from usebench.report.labels import short_labels

    d = comp.decimals
    labels, label_notes = short_labels([row for row, _ in comp.rows])
    rows = []
    for i, (row, entry) in enumerate(comp.rows):
        lead = (labels[i], f"{entry.label} ({entry.source})", comp.seeds_of(i))
        rows += [GRow((*lead, "ours"), tuple(GCell(_num(row.cells[c.id].mean, d)) for c in comp.columns)),
                 GRow(("", "", "", "paper"), tuple(GCell(_num(entry.values.get(c.id), d)) for c in comp.columns)),
                 GRow(("", "", "", "Δ"), tuple(GCell(_num(comp.delta(row, entry, c.id), d, signed=True))
                                               for c in comp.columns))]
    return Grid(name=comp.name, title=comp.title, lead=("Method", "Paper row", "Seeds", ""),
                groups=_groups([(c.group, c.header) for c in comp.columns]),
                headers=tuple(c.header for c in comp.columns), blocks=(("", tuple(rows)),) if rows else (),
                notes=tuple(comp.notes) + label_notes)


# --- Markdown -------------------------------------------------------------------------------------------------

def _md_cell(c: GCell) -> str:
    if c.value is None:
        return MISSING
    text = c.value + (f" ± {c.std}" if c.std is not None else "")
    text = f"**{text}**" if c.bold else text
    return text + ("†" if c.dagger else "") + (f" ({c.aside})" if c.aside else "")


def to_markdown(grid: Grid) -> str:
    """A GitHub-flavoured Markdown table with its title and notes."""
    heads = list(grid.lead) + grid.flat_headers()
    lines = [f"### {grid.title}", "", "| " + " | ".join(heads) + " |",
             "|" + "|".join(["---"] * len(grid.lead) + ["---:"] * len(grid.headers)) + "|"]
    for title, rows in grid.blocks:
        if title:
            lines.append("| " + " | ".join([f"*{title}*"] + [""] * (len(heads) - 1)) + " |")
        for r in rows:
            lines.append("| " + " | ".join(list(r.lead) + [_md_cell(c) for c in r.cells]) + " |")
    lines.append("")
    lines += [f"{n}  " for n in grid.notes]
    return "\n".join(lines).rstrip() + "\n"


# --- LaTeX ----------------------------------------------------------------------------------------------------

_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "±": r"$\pm$", "†": r"$^\dagger$",
        "→": r"$\rightarrow$", "−": "-", "Δ": r"$\Delta$", "·": r"$\cdot$", "ρ": r"$\rho$", "—": "--",
        **{sup: rf"$^{{{digit}}}$" for digit, sup in zip("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")}}


def tex_escape(text: str) -> str:
    """Escape LaTeX specials (and map the few non-ASCII symbols we print)."""
    return "".join(_TEX.get(ch, ch) for ch in text)


def _tex_cell(c: GCell) -> str:
    if c.value is None:
        return "--"
    text = c.value + (rf" {{\scriptsize $\pm$ {c.std}}}" if c.std is not None else "")
    text = rf"\textbf{{{text}}}" if c.bold else text
    return text + (r"$^\dagger$" if c.dagger else "") + (rf" {{\tiny ({c.aside})}}" if c.aside else "")


def to_latex(grid: Grid) -> str:
    """A booktabs ``table`` with grouped headers (\\cmidrule), block rows, caption and notes."""
    n_lead, n = len(grid.lead), len(grid.lead) + len(grid.headers)
    out = [r"\begin{table}[t]", r"\centering", r"\small", r"\begin{tabular}{" + "l" * n_lead + "r" * len(grid.headers)
           + "}", r"\toprule"]
    if any(label for label, span in grid.groups if span > 1):
        cells, rules, col = [""] * n_lead, [], n_lead + 1
        for label, span in grid.groups:
            cells.append(rf"\multicolumn{{{span}}}{{c}}{{{tex_escape(label)}}}" if span > 1 else tex_escape(label))
            if span > 1:
                rules.append(rf"\cmidrule(lr){{{col}-{col + span - 1}}}")
            col += span
        out += [" & ".join(cells) + r" \\", " ".join(rules)]
        heads = [tex_escape(h) for h in grid.lead] + [tex_escape(h) for h in grid.headers]
    else:
        heads = [tex_escape(h) for h in grid.lead] + [tex_escape(h) for h in grid.flat_headers()]
    out += [" & ".join(heads) + r" \\", r"\midrule"]
    for i, (title, rows) in enumerate(grid.blocks):
        if title:
            out += ([r"\midrule"] if i else []) + [rf"\multicolumn{{{n}}}{{l}}{{\textit{{{tex_escape(title)}}}}} \\"]
        for r in rows:
            out.append(" & ".join([tex_escape(x) for x in r.lead] + [_tex_cell(c) for c in r.cells]) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}",
            rf"\caption{{{tex_escape(grid.title)}. {' '.join(tex_escape(x) for x in grid.notes)}}}",
            rf"\label{{tab:{grid.name}}}", r"\end{table}"]
    return "\n".join(out) + "\n"


# --- HTML -----------------------------------------------------------------------------------------------------

def _html_cell(c: GCell) -> str:
    if c.value is None:
        return f'<td class="missing">{MISSING}</td>'
    text = html.escape(c.value) + (f' <span class="std">± {html.escape(c.std)}</span>' if c.std is not None else "")
    text = f"<b>{text}</b>" if c.bold else text
    text += "<sup>†</sup>" if c.dagger else ""
    text += f' <span class="aside">({html.escape(c.aside)})</span>' if c.aside else ""
    return f'<td class="num{" best" if c.bold else ""}">{text}</td>'


def to_html(grid: Grid) -> str:
    """An HTML ``<table>`` fragment (styles live in the page) with title and notes."""
    n = len(grid.lead) + len(grid.headers)
    two = any(label for label, span in grid.groups if span > 1)
    out = [f'<section class="table" id="{html.escape(grid.name)}">', f"<h3>{html.escape(grid.title)}</h3>",
           '<table data-table="' + html.escape(grid.name) + '">', "<thead>"]
    if two:
        cells = [f'<th rowspan="2">{html.escape(h)}</th>' for h in grid.lead]
        i = 0
        for label, span in grid.groups:
            if span > 1:
                cells.append(f'<th colspan="{span}" class="group">{html.escape(label)}</th>')
            else:
                cells.append(f'<th rowspan="2">{html.escape(grid.headers[i])}</th>')
            i += span
        sub, i = [], 0
        for label, span in grid.groups:
            if span > 1:
                sub += [f"<th>{html.escape(h)}</th>" for h in grid.headers[i:i + span]]
            i += span
        out += ["<tr>" + "".join(cells) + "</tr>", "<tr>" + "".join(sub) + "</tr>"]
    else:
        out.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in list(grid.lead) + grid.flat_headers())
                   + "</tr>")
    out += ["</thead>", "<tbody>"]
    for title, rows in grid.blocks:
        if title:
            out.append(f'<tr class="block"><td colspan="{n}">{html.escape(title)}</td></tr>')
        for r in rows:
            out.append("<tr>" + "".join(f'<td class="lead">{html.escape(x)}</td>' for x in r.lead)
                       + "".join(_html_cell(c) for c in r.cells) + "</tr>")
    out += ["</tbody>", "</table>"] + [f'<p class="note">{html.escape(x)}</p>' for x in grid.notes] + ["</section>"]
    return "\n".join(out) + "\n"


# --- CSV / JSON -----------------------------------------------------------------------------------------------

CSV_FIELDS = ("table", "block", "row", "method", "model", "pooling", "group", "corpus_size", "column", "header",
              "mean", "std", "n", "bold", "dagger", "per_seed", "ci_low", "ci_high")


def _csv_num(v: float | None) -> str:
    return "" if v is None else repr(float(v))


def to_csv(built: Built) -> str:
    """Tidy CSV: one line per (row, column), unrounded x100 values; a missing cell has empty mean/std/n."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in built.rows:
        k = r.key
        for c in built.columns:
            cell = r.cells[c.id]
            w.writerow([built.name, r.block, r.label, k.method if k else "", k.model if k else "",
                        k.pooling if k else "", k.group if k else "", (k.corpus_size or "") if k else "", c.id,
                        f"{c.group} {c.header}".strip(), _csv_num(cell.mean), _csv_num(cell.std),
                        "" if cell.missing or cell.n is None else cell.n, int(cell.bold), int(cell.dagger),
                        json.dumps({str(s): v for s, v in sorted(cell.per_seed.items())}),
                        _csv_num(cell.ci and cell.ci[0]), _csv_num(cell.ci and cell.ci[1])])
    return buf.getvalue()


def comparison_csv(comp: Comparison) -> str:
    """Tidy CSV of ours vs paper: one line per (row, column)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("table", "row", "model", "paper_row", "paper_model", "paper_source", "column", "ours", "ours_std",
                "n", "paper_seeds", "paper", "delta"))
    for row, e in comp.rows:
        for c in comp.columns:
            cell = row.cells[c.id]
            w.writerow([comp.name, row.label, row.key.model if row.key else "", e.label, e.model or "", e.source,
                        c.id, _csv_num(cell.mean), _csv_num(cell.std), "" if cell.missing else cell.n,
                        e.seeds or "", _csv_num(e.values.get(c.id)), _csv_num(comp.delta(row, e, c.id))])
    return buf.getvalue()


def to_json(built: Built, comp: Comparison | None) -> dict:
    """Everything behind a table (per-seed values included), JSON-able."""
    rows = [{"label": r.label, "block": r.block, "key": vars(r.key) if r.key else None, "slot": r.slot,
             **({"not_made": r.note} if r.note else {}),
             "cells": {cid: {"mean": c.mean, "std": c.std, "n": c.n, "bold": c.bold, "dagger": c.dagger,
                             "per_seed": {str(s): v for s, v in sorted(c.per_seed.items())},
                             "ci": None if c.ci is None else list(c.ci)}
                       for cid, c in r.cells.items()}} for r in built.rows]
    out = {"table": built.name, "title": built.title, "columns": [c.id for c in built.columns], "rows": rows,
           "notes": list(built.notes)}
    if comp is not None:
        out["paper"] = [{"row": r.label, "paper_row": e.label, "source": e.source, "values": e.values,
                         "seeds": comp.seeds_of(i)} for i, (r, e) in enumerate(comp.rows)]
        out["paper_notes"] = list(comp.notes)  # the short notes, main differences first
        # why rows are not beside a published number: every key that differs, per published row they would fit
        out["unpaired"] = [{"row": label, "published": [{"paper_row": p, "differs": list(g)} for p, g in missed]}
                           for label, missed in comp.unpaired]
    return out
