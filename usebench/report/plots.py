"""Plots for reports (matplotlib, Agg), each written as a PNG plus the CSV of the numbers drawn:
per-seed spread per method and column, training-loss curves from ``<run>/log.jsonl``, and the corpus-size
curve (TSDAE paper Fig. 3: score vs number of unlabeled training sentences) when such runs exist."""
from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from usebench.errors import DataFormatError
from usebench.report.build import Built
from usebench.stats.table_rows import ResultIndex, RowKey, row_label
from usebench.stats.table_specs import COLUMNS
from usebench.store import StoredResult

# Fig. 3 plots the main score of each USEB task (and we add STSb when present).
CORPUS_COLUMNS = ("askubuntu", "cqadupstack", "twitterpara.avg", "scidocs.avg", "stsb")


@dataclass(frozen=True)
class Plot:
    """A written plot: its PNG, the CSV behind it, and a caption."""

    name: str
    png: Path
    data: Path
    caption: str


def _figure(n_panels: int, width: float = 3.6, height: float = 3.0, sharey: bool = False):
    """A figure of ``n_panels`` panels, four a row, each ``width`` x ``height`` inches; ``sharey``: every panel on
    the first one's vertical axis (its tick labels shown on the first panel of each row only)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = min(n_panels, 4)
    rows = math.ceil(n_panels / cols)
    fig = Figure(figsize=(width * cols, height * rows), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(rows, cols, 1)]
    for i in range(1, n_panels):
        axes.append(fig.add_subplot(rows, cols, i + 1, sharey=axes[0] if sharey else None))
        if sharey and i % cols:
            axes[-1].tick_params(axis="y", labelleft=False)
    return fig, axes


def _write_csv(path: Path, header: Iterable[str], rows: Iterable[Iterable]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def seed_spread(built: Built, out_dir: Path) -> Plot | None:
    """One panel per column: every seed's value per row (dots) and the mean (bar); see :func:`seed_spread_figure`."""
    made = seed_spread_figure(built)
    if made is None:
        return None
    fig, data = made
    png, csv_path = out_dir / f"{built.name}-seeds.png", out_dir / f"{built.name}-seeds.csv"
    fig.savefig(png)
    _write_csv(csv_path, ("table", "row", "column", "seed", "value"), data)
    return Plot(f"{built.name}-seeds", png, csv_path, f"{built.title}: spread over seeds")


# Inches per row of a strip plot: its label's line (8 pt) with room to spare, however many rows a table has.
STRIP_ROW_IN = 0.24


def seed_spread_figure(built: Built) -> tuple[Any, list[tuple]] | None:
    """The strip plots of ``built`` (None when no cell holds a value) and the CSV rows drawn: one panel per column
    with a value, four a row; the table's rows on the shared vertical axis, each named once on the left by its short
    label (the long marks as the figure's notes, as in the tables), every seed a dot and the mean a bar. Rows lie one
    under the other, so labels never overlap whatever their number or length (rotated labels under the panels
    ran into each other)."""
    from usebench.report.labels import short_labels

    cols = [c for c in built.columns if any(not r.cells[c.id].missing for r in built.rows)]
    if not cols:
        return None
    rows = [r for r in built.rows if any(not r.cells[c.id].missing for c in cols)]
    labels, notes = short_labels(rows)
    fig, axes = _figure(len(cols), width=2.6, height=STRIP_ROW_IN * len(rows) + 1.0, sharey=True)
    data = []
    for ax, col in zip(axes, cols):
        for y, r in enumerate(rows):
            cell = r.cells[col.id]
            if cell.missing:
                continue
            seeds = sorted(cell.per_seed.items())
            ax.scatter([v for _, v in seeds], [y] * len(seeds), s=12, alpha=0.7, color=f"C{y % 10}")
            ax.vlines(cell.mean, y - 0.3, y + 0.3, colors="black", linewidth=1.5)
            data += [(built.name, r.label, col.id, s, v) for s, v in seeds]
        ax.set_title(f"{col.group} {col.header}".strip(), fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
        ax.tick_params(axis="y", labelsize=8)
        ax.xaxis.set_major_locator(_ticks())
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(rows)), labels)
    axes[0].set_ylim(len(rows) - 0.5, -0.5)  # the table's order, top to bottom
    fig.suptitle(f"{built.name}: per-seed values (x100), bar = mean", fontsize=10)
    fig.supxlabel("score x100" + "".join(f"\n{n}" for n in notes), fontsize=7)
    return fig, data


def _ticks():
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(nbins=4)  # a narrow panel's tick labels never touch


def read_log(path: Path) -> list[tuple[int, float]]:
    """(step, loss) pairs from a ``log.jsonl``; lines without a loss (e.g. evaluations) are not losses."""
    points = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            raise DataFormatError(path, lineno, "one JSON object per line", line) from None
        if isinstance(entry, dict) and "loss" in entry and "step" in entry and entry["loss"] is not None:
            points.append((int(entry["step"]), float(entry["loss"])))
    return points


def loss_curves(results: list[StoredResult], out_dir: Path) -> Plot | None:
    """Training loss against step for every run directory with a ``log.jsonl``: one panel per method (its own loss
    scale: CT's, SimCSE's and ConSERT's losses lay flat on 0 on one axis with TSDAE's 5-20), one line per run."""
    made = loss_figure(results)
    if made is None:
        return None
    fig, data = made
    png, csv_path = out_dir / "loss-curves.png", out_dir / "loss-curves.csv"
    fig.savefig(png)
    _write_csv(csv_path, ("run", "method", "seed", "step", "loss"), data)
    return Plot("loss-curves", png, csv_path, "Training loss per run (from log.jsonl), one panel per method")


def loss_figure(results: list[StoredResult]) -> tuple[Any, list[tuple]] | None:
    """The loss curves' figure and the CSV rows drawn (None when no run logged a loss)."""
    from usebench.stats.table_rows import DISPLAY

    runs: dict[Path, dict] = {}
    for r in results:
        log = r.path.parent.parent / "log.jsonl"
        if log.is_file():
            runs.setdefault(log, r.record)
    curves = [(log, rec, read_log(log)) for log, rec in sorted(runs.items())]
    curves = [c for c in curves if c[2]]
    if not curves:
        return None
    methods = list(dict.fromkeys(rec["method"]["name"] for _, rec, _ in curves))
    fig, axes = _figure(len(methods), width=3.2, height=2.6)
    data = []
    for ax, method in zip(axes, methods):
        mine = [c for c in curves if c[1]["method"]["name"] == method]
        data += draw_loss_curves(ax, mine, legend=len(mine) <= LEGEND_MAX)
        ax.set_title(f"{DISPLAY.get(method, method)} ({len(mine)} run{'s' if len(mine) > 1 else ''})", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.xaxis.set_major_locator(_ticks())
    fig.suptitle("Training loss per run (log.jsonl: the mean over each log window)", fontsize=10)
    return fig, data


LEGEND_MAX = 6  # a panel of more runs has no legend (its title counts them; the CSV names each)


# A run logged at fewer points than this is drawn with markers: a line through one point is invisible, and a
# sparse log (short smoke runs, large log_every) should show where its values actually are.
MARKER_BELOW = 30


def draw_loss_curves(ax, curves: list[tuple[Path, dict, list[tuple[int, float]]]], legend: bool = True) -> list[tuple]:
    """One line per run on ``ax`` (markers where a run has few points), both axes labelled; returns the CSV rows
    drawn."""
    data = []
    for log, rec, points in curves:
        label = f"{rec['method']['name']} s{rec['seed']}"
        style = {"marker": "o", "markersize": 4} if len(points) < MARKER_BELOW else {}
        ax.plot([p[0] for p in points], [p[1] for p in points], linewidth=1, label=label, **style)
        data += [(log.parent.name, rec["method"]["name"], rec["seed"], s, v) for s, v in points]
    ax.set_xlabel("step", fontsize=8)
    ax.set_ylabel("training loss", fontsize=8)
    if legend:
        ax.legend(fontsize=6)
    return data


def _corpus_split(index: ResultIndex, key: RowKey, task: str) -> str:
    # Fig. 3 uses the development sets (TwitterPara has none, so its test set).
    return "dev" if index.results(key, task, "dev") else "test"


def corpus_size_curve(index: ResultIndex, out_dir: Path) -> Plot | None:
    """Score (mean ± std over seeds) against training-corpus size, one panel per task, one line per method."""
    keys = [k for k in index.rows if k.corpus_size]
    cols = [COLUMNS[c] for c in CORPUS_COLUMNS]
    data = []
    for k in keys:
        for col in cols:
            split = _corpus_split(index, k, col.task or "")
            stats = index.held_cell(k, col, split).scaled(100.0)
            if stats.n:
                std = stats.std
                data.append((col.id, split, k.method, row_label(replace(k, corpus_size=None), False),
                             k.corpus_size, stats.mean, "" if math.isnan(std) else std, stats.n))
    if not data:
        return None
    shown = [c for c in cols if any(d[0] == c.id for d in data)]
    fig, axes = _figure(len(shown))
    for ax, col in zip(axes, shown):
        for label in sorted({d[3] for d in data if d[0] == col.id}):
            pts = sorted((d[4], d[5], d[6] or 0.0) for d in data if d[0] == col.id and d[3] == label)
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], marker="o", ms=3,
                        capsize=2, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("training sentences", fontsize=8)
        ax.set_title(f"{col.group} {col.header}".strip(), fontsize=9)
        ax.legend(fontsize=6)
    fig.suptitle("Score (x100) vs unlabeled corpus size (TSDAE paper Fig. 3)", fontsize=10)
    png, csv_path = out_dir / "corpus-size.png", out_dir / "corpus-size.csv"
    fig.savefig(png)
    _write_csv(csv_path, ("column", "split", "method", "row", "corpus_size", "mean", "std", "n"), data)
    return Plot("corpus-size", png, csv_path, "Influence of corpus size (mean ± std over seeds)")
