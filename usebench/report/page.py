"""The single self-contained HTML page: every table with its learning curves beside it, the published numbers, and
the plots embedded as base64 PNG (no external file, no script, so it opens anywhere and offline)."""
from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path

from usebench._version import __version__
from usebench.report.plots import Plot
from usebench.report.sections import Section, section_html
from usebench.store import now_iso

# A table fits the page's width: its cells keep their one line while the table fits, and where it would not, a
# cell breaks between its value and its "± std" (each kept whole) and a row label at a space, instead of pushing the
# last columns behind a horizontal scroll (a long label or a 13-column table with its asides, at 1,400 px).
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 0.3em; font-size: 13px; }
th, td { padding: 3px 8px; border-bottom: 1px solid #ddd; }
thead th { background: #dbe7f3; border-bottom: 2px solid #5b7fa6; }
th.group { border-bottom: 1px solid #5b7fa6; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.missing { text-align: center; color: #999; }
.std, .aside { white-space: nowrap; }

tr.block td { background: #f3f3f3; font-style: italic; }
.std, .aside { color: #666; font-size: 11px; }
p.note { margin: 0.1em 0; font-size: 12px; color: #444; }
section.table { margin-bottom: 1.5em; overflow-x: auto; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figure.curves figcaption { font-size: 12px; color: #444; }
"""


def _img(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _figure(plot: Plot, css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    return (f'<figure{cls} id="{html.escape(plot.name)}"><img src="{_img(plot.png)}" alt="{html.escape(plot.caption)}">'
            f"<figcaption>{html.escape(plot.caption)} (data: {html.escape(plot.data.name)})</figcaption></figure>")


def render_page(sections: Sequence[Section], plots: Sequence[Plot], n_results: int, results_dir: Path) -> str:
    """The page as one HTML string."""
    nav = " · ".join(f'<a href="#{html.escape(s.built.name)}">{html.escape(s.built.name)}</a>'
                     for s in sections)
    body = ["<h1>usebench report</h1>",
            (f'<p class="note">{n_results} result files from {html.escape(str(results_dir))}; '
             f"usebench {__version__}; generated {now_iso()}. Values x100; mean over seeds, ± as each table's notes say.</p>"),
            f"<nav>{nav}</nav>"]
    beside = {f"{s.built.name}-curves" for s in sections}  # a table's learning curves follow the table
    for s in sections:
        curves = "".join(_figure(p, "curves") for p in plots if p.name == f"{s.built.name}-curves")
        body += [f'<h2 id="{html.escape(s.built.name)}-section">Table {html.escape(s.built.name)}</h2>',
                 section_html(s, beside=curves)]
    rest = [p for p in plots if p.name not in beside]
    if rest:
        body.append("<h2>Plots</h2>")
        body += [_figure(p) for p in rest]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<link rel=\"icon\" href=\"data:,\">\n<title>usebench report</title>\n"
            f"<style>{STYLE}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n")


def write_page(path: Path, sections: Sequence[Section], plots: Sequence[Plot], n_results: int,
               results_dir: Path) -> Path:
    path.write_text(render_page(sections, plots, n_results, results_dir), encoding="utf-8")
    return path
