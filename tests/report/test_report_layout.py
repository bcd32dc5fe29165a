"""A report one can read (issue 56, item 6). At 1,400 px the HTML page put the Avg. column behind a horizontal scroll:
row labels such as ``TSDAE · trained on file:a.toks+b.toks · laptop`` and an ours-vs-paper table of three numbers
per column. Rows are named short (the corpus and variant as numbered notes), ours-vs-paper has the table's own
columns, the learning curves are one panel per row with both axes labelled, the strip plots name each row once, and
a 13-column LaTeX table has short labels. Checked in headless Chromium (each table's right edge inside the viewport,
no overlapping text) and on the figures themselves (no overlapping text)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.report.synthetic_results import add_result, add_useb, hand_store
from usebench.report.make import ReportOptions, build_sections, make_report
from usebench.store import iter_results

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
WIDTH = 1400
LAPTOP = ("tsdae", "mlm", "ct", "simcse", "bertflow", "consert", "denosent", "paser")


def laptop_like_store(root: Path) -> Path:
    """The hand store plus the CPU recipe's kind of rows: eight methods trained on two corpus files with the laptop
    variant (the labels the issue met), three seeds each, on all of Table 2's columns and STSb."""
    hand_store(root)
    for i, method in enumerate(LAPTOP):
        for seed in range(3):
            kw = {"train_corpus": "file:a.toks+b.toks", "method_extra": {"variant": "laptop"},
                  "setting": "unsupervised", "config": {"variant": "laptop", "corpus": "a+b"}}
            v = 0.5 + 0.01 * i + 0.003 * seed
            add_useb(root, method, seed, v, v / 4, (v + 0.1, v), (v, v + 0.01, v + 0.02, v + 0.03), **kw)
            add_result(root, method, seed, "stsb", {"spearman": v + 0.2}, **kw)
    return root


def _paired(sections):
    """Table 2's section with our laptop rows set beside the paper's rows of the same methods (as pairs would be):
    the widest ours-vs-paper table a report can hold, all 13 columns."""
    from dataclasses import replace

    from usebench.report.reference import Comparison, entries

    section = next(s for s in sections if s.built.name == "paper-table2")
    paper = {e.label: e for e in entries("tsdae-table2") if e.block.startswith("Unsupervised")}
    ours = [r for r in section.built.rows if r.key and r.key.corpus and r.label.split(" · ")[0].rstrip("¹") in paper]
    rows = tuple((r, paper[r.label.split(" · ")[0]]) for r in ours)
    comp = Comparison("paper-table2-vs-paper", section.built.title + ": ours vs paper", section.built.columns, rows,
                      1, ("Ours: mean over seeds.",), tuple("3 of 5 seeds" for _ in rows))
    assert len(rows) >= 5 and len(section.built.columns) == 11  # with Method and n: 13 columns
    return [replace(s, comparison=comp) if s is section else s for s in sections]


MEASURE = """<script>
window.addEventListener("load", () => {
  const width = document.documentElement.clientWidth;
  const tables = [...document.querySelectorAll("table")].map(t => {
    const box = t.getBoundingClientRect(), sec = t.closest("section");
    return {name: t.dataset.table || "", right: box.right, scroll: sec ? sec.scrollWidth - sec.clientWidth : 0};
  });
  const rects = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(), i = 0; n; n = walk.nextNode(), i++) {
    const el = n.parentElement;  // text a reader sees: not a closed <details>' content, not this script's output
    if (!n.textContent.trim() || el.closest("script,pre#measure") || !el.checkVisibility({visibilityProperty: true})
        || (el.closest("details:not([open])") && !el.closest("summary"))) continue;
    const range = document.createRange(); range.selectNodeContents(n);
    for (const r of range.getClientRects()) if (r.width > 0 && r.height > 0) rects.push([i, r.left, r.top, r.right, r.bottom, n.textContent.trim().slice(0, 40)]);
  }
  rects.sort((a, b) => a[2] - b[2]);
  const overlaps = [];
  for (let a = 0; a < rects.length; a++) for (let b = a + 1; b < rects.length && rects[b][2] < rects[a][4] - 1; b++) {
    const [i, l1, t1, r1, b1, s1] = rects[a], [j, l2, t2, r2, b2, s2] = rects[b];
    if (i !== j && Math.min(r1, r2) - Math.max(l1, l2) > 1 && Math.min(b1, b2) - Math.max(t1, t2) > 1) overlaps.push([s1, s2]);
  }
  const pre = document.createElement("pre"); pre.id = "measure";
  pre.textContent = JSON.stringify({width, tables, overlaps: overlaps.slice(0, 20), texts: rects.length});
  document.body.appendChild(pre);
});
</script>"""


def _chromium(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", f"--window-size={WIDTH},1200",
                           "--virtual-time-budget=10000", *extra, page.as_uri()],
                          capture_output=True, text=True, timeout=180, check=False)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
def test_the_html_report_fits_1400_px_with_no_overlapping_text(tmp_path):
    from PIL import Image

    from usebench.report.page import render_page

    store = laptop_like_store(tmp_path / "results")
    rep = make_report(ReportOptions(results_dir=store, out=tmp_path / "out", formats=("html",),
                                    tables=("paper-table2", "sts-table", "specific-vs-sts")))
    html = render_page(_paired(rep.sections), rep.plots, rep.n_results, store)
    assert "TSDAE · trained on" not in html.split("<h2>Plots</h2>")[0].split("<p class=\"note\">")[0]
    page = tmp_path / "page.html"
    page.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = _chromium(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'<pre id="measure">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:]
    measured = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                          .replace("&gt;", ">"))
    assert measured["width"] == WIDTH and measured["texts"] > 500
    names = {t["name"] for t in measured["tables"]}
    assert {"paper-table2", "paper-table2-vs-paper", "sts-table"} <= names
    for t in measured["tables"]:  # every table whole in the viewport, none behind its section's scroll bar
        assert t["right"] <= WIDTH and t["scroll"] <= 0, t
    assert measured["overlaps"] == []
    # the screenshot: the header fill (#dbe7f3) ends where the widest table does, inside the viewport (its last
    # column drawn, not cut by the edge)
    shot = tmp_path / "shot.png"
    res = _chromium(page, tmp_path, f"--screenshot={shot}")
    assert res.returncode == 0 and shot.is_file()
    img = Image.open(shot).convert("RGB")
    header = [x for (x, y) in ((i % img.width, i // img.width) for i, px in enumerate(img.getdata())
                               if abs(px[0] - 0xDB) <= 2 and abs(px[1] - 0xE7) <= 2 and abs(px[2] - 0xF3) <= 2)]
    widest = max(t["right"] for t in measured["tables"])
    assert len(header) > 5000 and max(header) < WIDTH and abs(max(header) + 1 - widest) <= 2, (max(header), widest)


def drawn_texts(fig) -> list:
    """The texts a drawn figure shows: titles, axis labels, legends and the tick labels of the ticks inside each
    axis' view (matplotlib keeps Text objects for ticks it does not draw)."""
    from matplotlib.text import Text

    fig.canvas.draw()
    ticks, shown = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.update({id(tick.label1), id(tick.label2)})
                inside = lo - 1e-9 <= tick.get_loc() <= hi + 1e-9 if tick.get_loc() is not None else False
                shown += [t for t in (tick.label1, tick.label2) if inside and t.get_visible()]
    shown += [t for t in fig.findobj(Text) if id(t) not in ticks and t.get_visible()]
    return [t for t in shown if t.get_text().strip()]


def _overlapping_text(fig) -> list[tuple[str, str]]:
    """Pairs of texts a drawn matplotlib figure shows whose boxes overlap (a shared edge aside)."""
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in drawn_texts(fig)]
    return [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:]
            if min(ba.x1, bb.x1) - max(ba.x0, bb.x0) > 1 and min(ba.y1, bb.y1) - max(ba.y0, bb.y0) > 1]


def test_strip_plots_name_each_row_once_with_no_overlapping_text(tmp_path):
    from usebench.report.plots import seed_spread_figure

    store = laptop_like_store(tmp_path / "results")
    sections = build_sections(list(iter_results(store)), ReportOptions(results_dir=store, tables=("paper-table2",)))
    fig, data = seed_spread_figure(sections[0].built)
    assert _overlapping_text(fig) == []
    shown = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "TSDAE¹" in shown and "SimCSE¹" in shown and all(len(s) < 30 for s in shown)
    assert all(not ax.get_yticklabels() or not any(t.get_visible() and t.get_text() for t in ax.get_yticklabels())
               for ax in fig.axes[1:4])  # named once per row of panels
    assert any(r[1] == "TSDAE · trained on file:a.toks+b.toks · laptop" for r in data)  # the CSV keeps the whole label


def test_learning_curves_are_one_panel_per_row_with_labelled_axes(tmp_path):
    from usebench.report import curves

    store = laptop_like_store(tmp_path / "results")
    for run in store.glob("*__s*"):  # each run's log: TSDAE's loss near 10, CT's near 0.05 (one axis flattened CT)
        scale = 10.0 if run.name.startswith("tsdae") else 0.05
        (run / "log.jsonl").write_text("".join(json.dumps({"step": s, "loss": scale / s}) + "\n" for s in range(1, 21)))
    sections = build_sections(list(iter_results(store)), ReportOptions(results_dir=store, tables=("paper-table2",)))
    drawn = {}
    real_draw = curves.draw
    curves.draw = lambda c, png, title, notes=(): drawn.update(curves=c, notes=notes) or real_draw(c, png, title, notes)
    try:
        from usebench.stats.table_rows import index_results

        plot = curves.table_curves(sections[0].built, index_results(list(iter_results(store))), tmp_path)
    finally:
        curves.draw = real_draw
    assert plot is not None and plot.png.stat().st_size > 1000
    labels = {c.label for c in drawn["curves"]}
    assert "TSDAE¹" in labels and "CT¹" in labels and drawn["notes"][0].startswith("¹ trained on file:a.toks+b.toks")
    fig, axes = curves._grid(len({(c.label, c.corpus) for c in drawn["curves"]}))
    assert len(axes) == len({(c.label, c.corpus) for c in drawn["curves"]})  # one panel per row (and corpus)


def test_each_loss_panel_is_one_method_with_both_axes_labelled(tmp_path):
    from usebench.report.plots import loss_figure

    store = laptop_like_store(tmp_path / "results")
    results = list(iter_results(store))
    for run in {r.path.parent.parent for r in results if r.record["method"]["name"] in ("tsdae", "ct", "simcse")}:
        scale = 20.0 if run.name.startswith("tsdae") else 0.1
        (run / "log.jsonl").write_text("".join(json.dumps({"step": s, "loss": scale / s}) + "\n" for s in range(1, 21)))
    fig, data = loss_figure(results)
    titles = [ax.get_title() for ax in fig.axes]
    assert sorted(t.split(" (")[0] for t in titles) == ["CT", "SimCSE", "TSDAE"]
    for ax in fig.axes:
        assert ax.get_xlabel() == "step" and ax.get_ylabel() == "training loss"
        low, high = ax.get_ylim()
        assert high < 25 and (high - low) < (25 if ax.get_title().startswith("TSDAE") else 1)  # its own scale
    assert _overlapping_text(fig) == []


def test_the_laptop_loss_figure_labels_its_y_axis():
    import inspect

    from usebench.report import laptop

    assert 'set_ylabel("training loss"' in inspect.getsource(laptop.loss_figure)


def test_latex_and_markdown_labels_are_short_with_their_notes(tmp_path):
    store = laptop_like_store(tmp_path / "results")
    make_report(ReportOptions(results_dir=store, out=tmp_path / "out", formats=("md", "tex", "csv"), plots=False,
                              tables=("paper-table2",)))
    tex = (tmp_path / "out" / "paper-table2.tex").read_text()
    rows = [ln for ln in tex.splitlines() if ln.endswith(r"\\") and "&" in ln and "TSDAE" in ln]
    assert rows and all(len(ln.split("&")[0].strip()) <= 20 for ln in rows), rows  # "TSDAE$^{1}$"
    assert r"$^{1}$ trained on file:a.toks+b.toks; variant laptop." in tex
    md = (tmp_path / "out" / "paper-table2.md").read_text()
    assert "| TSDAE¹ | 3 |" in md and "¹ trained on file:a.toks+b.toks; variant laptop." in md
    csv_text = (tmp_path / "out" / "paper-table2.csv").read_text()
    assert "TSDAE · trained on file:a.toks+b.toks · laptop" in csv_text  # the data keep the whole label


def test_no_vs_paper_file_holds_only_its_header(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "paper-table2-vs-paper.csv").write_text("stale\n")  # from an earlier report in this folder
    store = hand_store(tmp_path / "results")
    rep = make_report(ReportOptions(results_dir=store, out=out, formats=("csv",), plots=False,
                                    tables=("paper-table2",)))
    assert rep.sections[0].comparison.rows == ()  # nothing of the hand store pairs with a published row
    assert not (out / "paper-table2-vs-paper.csv").exists() and (out / "paper-table2.csv").is_file()
    assert all(len(p.read_text().splitlines()) > 1 for p in out.glob("*.csv"))
