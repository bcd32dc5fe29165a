"""The pipeline as one picture: CLI -> run units -> plugins -> results store -> reports, written as a plain SVG
(no JavaScript, no web font), so it renders offline and in any viewer. The boxes name the folders they stand for;
``tests/test_docs.py`` checks that every folder named here exists."""
from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape

from docgen.common import Generated

PATH = "assets/pipeline.svg"
WIDTH, HEIGHT = 840, 600
LINE = 18  # px between text lines


@dataclass(frozen=True)
class Box:
    id: str
    x: int
    y: int
    w: int
    h: int
    title: str
    folder: str
    lines: tuple[str, ...]
    fill: str = "#e8eaf6"
    paths: tuple[str, ...] = ()  # the repository folders the box stands for


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    label: str
    vertical: bool = False  # bottom of src to top of dst (else right side to left side)


BOXES = (
    Box("cli", 60, 10, 740, 66, "CLI", "usebench/cli/",
        ("bench eval · bench run · bench report · bench check · bench status · bench data",), "#c5cae9",
        ("usebench/cli",)),
    Box("run", 60, 118, 740, 84, "Run units", "usebench/run/ + usebench/launch/",
        ("plan: presets + --set, chains, settings; every unit checked before anything trains",
         "stages reused, locks, resume; launcher: local | ray | slurm"), paths=("usebench/run", "usebench/launch")),
    Box("methods", 60, 246, 232, 120, "Trainer plugins", "usebench/methods/ on usebench/train/",
        ("tsdae, simcse, ct, mlm, consert,", "bertflow, denosent, paser, sbert-*", "one shared training loop"),
        "#e0f2f1", ("usebench/methods", "usebench/train")),
    Box("tasks", 342, 246, 230, 120, "Task adapters", "usebench/tasks/ on usebench/eval/",
        ("load, texts, score, metrics", "unique texts encoded once", "exact published protocols"),
        "#e0f2f1", ("usebench/tasks", "usebench/eval")),
    Box("data", 612, 266, 188, 80, "Data root", "usebench/data/", ("$BENCH_DATA: releases,", "checksums, counts"),
        "#fff8e1", ("usebench/data",)),
    Box("store", 60, 410, 740, 66, "Results store", "results/<run_id>/",
        ("config.json · log.jsonl · checkpoint/ · <task>/<split>.json  (atomic, one file each)",), "#fce4ec",
        ("usebench/store",)),
    Box("reports", 60, 518, 740, 66, "Reports", "usebench/report/",
        ("tables (md, tex, csv, html) · plots (PNG + CSV) · ours vs published · bench check",), "#ede7f6",
        ("usebench/report",)),
)
EDGES = (
    Edge("cli", "run", "eval, run", vertical=True),
    Edge("run", "methods", "train a stage", vertical=True),
    Edge("run", "tasks", "evaluate", vertical=True),
    Edge("methods", "tasks", "encoder"),
    Edge("data", "tasks", "files"),
    Edge("methods", "store", "checkpoint, log", vertical=True),
    Edge("tasks", "store", "one JSON per task and split", vertical=True),
    Edge("store", "reports", "read", vertical=True),
)


def _text(x: float, y: float, s: str, size: int = 12, weight: str = "normal", anchor: str = "middle",
          family: str = "sans-serif", fill: str = "#212121") -> str:
    return (f'<text x="{x:.0f}" y="{y:.0f}" font-size="{size}" font-weight="{weight}" text-anchor="{anchor}" '
            f'font-family="{family}" fill="{fill}">{escape(s)}</text>')


def _box(b: Box) -> list[str]:
    cx = b.x + b.w / 2
    out = [f'<rect x="{b.x}" y="{b.y}" width="{b.w}" height="{b.h}" rx="8" fill="{b.fill}" stroke="#3f51b5" '
           f'stroke-width="1.5"/>',
           _text(cx, b.y + 21, b.title, 15, "bold"),
           _text(cx, b.y + 38, b.folder, 12, family="monospace", fill="#3949ab")]
    out += [_text(cx, b.y + 58 + i * LINE, line, 13) for i, line in enumerate(b.lines)]
    return out


def _edge(e: Edge, boxes: dict[str, Box]) -> list[str]:
    s, d = boxes[e.src], boxes[e.dst]
    if e.vertical:
        x = max(s.x, d.x) + min(s.w, d.w) / 2
        (y1, y2) = (s.y + s.h, d.y) if s.y < d.y else (s.y, d.y + d.h)
        lx, ly, anchor = x + 6, (y1 + y2) / 2 + 4, "start"
        x1 = x2 = x
    else:  # a level line where the boxes overlap vertically, from the facing sides
        x1, x2 = (s.x + s.w, d.x) if s.x < d.x else (s.x, d.x + d.w)
        y1 = y2 = min(max(s.y + s.h / 2, d.y + 10, s.y + 10), d.y + d.h - 10, s.y + s.h - 10)
        lx, ly, anchor = (x1 + x2) / 2, y1 - 6, "middle"
    return [f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" stroke="#3f51b5" stroke-width="1.6" '
            f'marker-end="url(#arrow)"/>', _text(lx, ly, e.label, 11, anchor=anchor, fill="#37474f")]


def _read_path(boxes: dict[str, Box]) -> list[str]:
    """`bench report` / `check` / `status` go from the CLI straight to the store: nothing is re-run."""
    c, r = boxes["cli"], boxes["reports"]
    x, y1, y2 = 28, c.y + c.h / 2, r.y + r.h / 2
    d = f"M {c.x} {y1:.0f} L {x} {y1:.0f} L {x} {y2:.0f} L {r.x} {y2:.0f}"
    label = "bench report / check / status read the store only"
    return [f'<path d="{d}" fill="none" stroke="#7e57c2" stroke-width="1.4" stroke-dasharray="6 4" '
            f'marker-end="url(#arrow2)"/>',
            f'<g transform="translate({x - 8} {(y1 + y2) / 2:.0f}) rotate(-90)">'
            + _text(0, 0, label, 12, fill="#5e35b1") + "</g>"]


def svg() -> str:
    """The whole diagram."""
    boxes = {b.id: b for b in BOXES}
    marker = ('<marker id="{id}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
              'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="{fill}"/></marker>')
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
             f'height="{HEIGHT}" role="img" aria-label="usebench pipeline">',
             "<title>usebench: CLI, run units, plugins, results store, reports</title>",
             "<defs>" + marker.format(id="arrow", fill="#3f51b5") + marker.format(id="arrow2", fill="#7e57c2")
             + "</defs>", f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    for b in BOXES:
        parts += _box(b)
    for e in EDGES:
        parts += _edge(e, boxes)
    parts += _read_path(boxes)
    return "\n".join(parts + ["</svg>"]) + "\n"


def folders() -> list[str]:
    """Every repository folder the diagram names (for the test that they exist)."""
    return [f for b in BOXES for f in b.paths]


def generate() -> Generated:
    return Generated({PATH: svg()}, {"diagram boxes": len(BOXES)})
