"""Learning curves: training loss, and the dev score where a run selected on one, against steps, per row (method and
setting) with the band of its seeds, one panel row per training corpus; read from each unit's ``log.jsonl`` (a chain
from its stages' homes, drawn one after the other). A unit whose loss went non-finite (a NaN in its log, or a unit
that failed with a diverged loss) or stayed flat (it moved by less than :data:`FLAT_REL` of its mean) is marked on the
plot and named in the caption.

Two entry points, both reading the store's files only:

- :func:`learning_curves` ``(run_dirs, png, title=None, labels=None) -> Path | None``: any set of run directories
  (``labels``: run dir -> (row label, corpus[, seed]), default from each unit's ``config.json``); writes ``png``
  and a CSV beside it with every point drawn; None when none of them has a log.
- :func:`table_curves` ``(built, index, out_dir) -> Plot | None``: the runs behind a built table's rows, written as
  ``<out_dir>/<table>-curves.png`` (`bench report` puts it beside the table on the HTML page).
"""
from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.report.build import Built
from usebench.report.plots import Plot, _write_csv
from usebench.stats.table_rows import ResultIndex
from usebench.store.files import read_json

FLAT_REL = 1e-3  # a loss whose range over the run is below this fraction of its mean did not move (lr 0, frozen)
FLAT_MIN_POINTS = 3


@dataclass
class UnitCurve:
    """One unit's points: loss and dev score by global step (a chain's stages one after the other)."""

    run_dir: Path
    label: str  # the row (method and setting)
    corpus: str  # what it trained on: one panel row per corpus
    seed: int
    loss: list[tuple[int, float]] = field(default_factory=list)
    dev: list[tuple[int, float]] = field(default_factory=list)
    stage_ends: list[int] = field(default_factory=list)  # global steps where a chain's next stage starts
    marks: list[str] = field(default_factory=list)  # "non-finite loss", "flat loss"


def stage_logs(run_dir: Path) -> list[Path]:
    """The unit's logs in stage order: its ``stages.json`` homes (relative to the results dir), else its own."""
    try:
        logs = [run_dir.parent / s["home"] / "log.jsonl" for s in read_json(run_dir / "stages.json")]
    except (KeyError, TypeError):  # no stages.json (a single method's unit), or not a list of homes
        logs = [run_dir / "log.jsonl"]
    return [p for p in logs if p.is_file()]


def read_points(log: Path) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """(loss, dev score) points of one log.jsonl; NaN/Infinity (as json writes them) are kept as such. A line that
    is no JSON is skipped (a unit killed mid-write)."""
    loss, dev = [], []
    for text in log.read_text(encoding="utf-8").splitlines():
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if not isinstance(line, dict) or "step" not in line:
            continue
        if line.get("loss") is not None:
            loss.append((int(line["step"]), float(line["loss"])))
        elif line.get("dev_score") is not None:
            dev.append((int(line["step"]), float(line["dev_score"])))
    return loss, dev


def marks(loss: list[tuple[int, float]], run_dir: Path) -> list[str]:
    """Why a unit's curve is suspect: a non-finite loss (logged, or the unit failed on one), or a flat loss."""
    out = []
    failed = run_dir / "failed.json"
    diverged = failed.is_file() and "TrainingDivergedError" in failed.read_text(encoding="utf-8", errors="replace")
    if diverged or any(not math.isfinite(v) for _, v in loss):
        out.append("non-finite loss")
    values = [v for _, v in loss if math.isfinite(v)]
    if len(values) >= FLAT_MIN_POINTS:
        mean = sum(values) / len(values)
        if max(values) - min(values) <= FLAT_REL * max(abs(mean), 1e-12):
            out.append("flat loss")
    return out


def unit_curve(run_dir: Path, label: str, corpus: str, seed: int) -> UnitCurve | None:
    """A unit's curve from its stage logs (None without any)."""
    logs = stage_logs(run_dir)
    if not logs:
        return None
    curve, offset = UnitCurve(run_dir, label, corpus, seed), 0
    for k, log in enumerate(logs):
        loss, dev = read_points(log)
        curve.loss += [(offset + s, v) for s, v in loss]
        curve.dev += [(offset + s, v) for s, v in dev]
        offset += max([s for s, _ in loss + dev], default=0)
        if k < len(logs) - 1:
            curve.stage_ends.append(offset)
    curve.marks = marks(curve.loss, run_dir)
    return curve


def config_labels(run_dir: Path) -> tuple[str, str, int]:
    """(row label, corpus, seed) of a unit from its ``config.json``: its method or chain and setting, the corpus it
    trained on (a chain: its first stage on a corpus), its seed."""
    config = read_json(run_dir / "config.json", {})
    label = str(config.get("method") or run_dir.name.split("__")[0])
    if config.get("setting"):
        label += f" · {config['setting']}"
    datas = [config.get("corpus")] + [s.get("data") for s in config.get("stages", []) if isinstance(s, dict)]
    corpora = [d.get("label") for d in datas if isinstance(d, dict) and d.get("kind", "corpus") == "corpus"]
    return label, str(next((c for c in corpora if c), "")), int(config.get("seed", 0) or 0)


def unit_curves(run_dirs: Sequence[Path], labels: dict[Path, tuple] | None = None) -> list[UnitCurve]:
    """The curves of the units among ``run_dirs`` that have a log (each directory once); ``labels``: run dir ->
    (row label, corpus) or (row label, corpus, seed), replacing what its config.json says."""
    curves = []
    for run_dir in dict.fromkeys(Path(p) for p in run_dirs):
        label, corpus, seed = (*labels[run_dir], *config_labels(run_dir)[len(labels[run_dir]):]) \
            if labels and run_dir in labels else config_labels(run_dir)
        curve = unit_curve(run_dir, label, corpus, seed)
        if curve is not None and (curve.loss or curve.dev):
            curves.append(curve)
    return curves


def learning_curves(run_dirs: Sequence[Path], png: Path, title: str | None = None,
                    labels: dict[Path, tuple] | None = None) -> Path | None:
    """Draw the learning curves of ``run_dirs`` into ``png`` (and ``png`` with ``.csv``: every point drawn, with its
    unit and marks); returns ``png``, or None when none of the units has a log."""
    curves = unit_curves(run_dirs, labels)
    if not curves:
        return None
    write_curves(curves, Path(png), title or "Learning curves")
    return Path(png)


def table_runs(built: Built, index: ResultIndex) -> dict[Path, tuple[str, str, int]]:
    """The run directory of every result behind ``built``'s rows, with its row's short label (as the rendered table
    shows it: usebench/report/labels.py), training corpus and seed."""
    from usebench.report.labels import short_labels

    out: dict[Path, tuple[str, str, int]] = {}
    for row, label in zip(built.rows, short_labels(built.rows)[0]):
        for results in index.rows.get(row.key, {}).values() if row.key else ():
            for r in results:
                corpus = str(r.record.get("method", {}).get("train_corpus") or "")  # "" when not recorded
                out.setdefault(r.path.parent.parent, (label, corpus, int(r.record.get("seed", 0))))
    return out


def table_curves(built: Built, index: ResultIndex, out_dir: Path) -> Plot | None:
    """``<table>-curves.png``: the learning curves of the runs behind the table's rows (None when none trained)."""
    runs = table_runs(built, index)
    curves = unit_curves(list(runs), runs)
    if not curves:
        return None
    from usebench.report.labels import short_labels

    png = Path(out_dir) / f"{built.name}-curves.png"
    write_curves(curves, png, f"{built.title}: learning curves", short_labels(built.rows)[1])  # the table's notes
    caption = f"{built.title}: training loss and dev score against steps (line: mean over seeds, band: min to max)"
    marked = [f"{c.run_dir.name} ({', '.join(c.marks)})" for c in curves if c.marks]
    if marked:
        caption += "; marked: " + "; ".join(marked)
    return Plot(f"{built.name}-curves", png, png.with_suffix(".csv"), caption)


def write_curves(curves: list[UnitCurve], png: Path, title: str, notes: Sequence[str] = ()) -> None:
    """The figure and its CSV (every point drawn, with its unit and marks)."""
    png.parent.mkdir(parents=True, exist_ok=True)
    draw(curves, png, title, notes)
    rows = []
    for c in curves:
        flag = "; ".join(c.marks)
        rows += [(c.label, c.corpus, c.seed, c.run_dir.name, "loss", s, v, flag) for s, v in c.loss]
        rows += [(c.label, c.corpus, c.seed, c.run_dir.name, "dev", s, v, flag) for s, v in c.dev]
    _write_csv(png.with_suffix(".csv"), ("row", "corpus", "seed", "run", "kind", "step", "value", "marks"), rows)


# --- drawing --------------------------------------------------------------------------------------------------

def seed_band(curves: list[UnitCurve], kind: str) -> tuple[list[int], list[float], list[float], list[float]]:
    """(steps, mean, min, max) over the seeds' finite values at each step that any seed logged."""
    by_step: dict[int, list[float]] = {}
    for c in curves:
        for s, v in getattr(c, kind):
            if math.isfinite(v):
                by_step.setdefault(s, []).append(v)
    steps = sorted(by_step)
    return (steps, [sum(by_step[s]) / len(by_step[s]) for s in steps], [min(by_step[s]) for s in steps],
            [max(by_step[s]) for s in steps])


def draw(curves: list[UnitCurve], png: Path, title: str, notes: Sequence[str] = ()) -> None:
    """One panel per row (method and setting) and training corpus, four a row, each on its own scale (8 methods on
    one axis from -0.5 to 21 laid CT's, SimCSE's and ConSERT's losses flat on 0): the training loss (left axis) and
    the dev score (right axis, where a unit has one), the seeds' mean line and min-max band, a marked unit's last
    point as a red cross; both axes labelled. ``notes``: what the rows' short labels' numbers stand for."""
    panels = list(dict.fromkeys((c.label, c.corpus) for c in curves))
    several = len({corpus for _, corpus in panels}) > 1
    fig, axes = _grid(len(panels))
    for n, (ax, (label, corpus)) in enumerate(zip(axes, panels)):
        group = [c for c in curves if c.label == label and c.corpus == corpus]
        seeds = len({c.seed for c in group})
        _draw_group(ax, group, "loss", label, f"C{n % 10}")
        ax.set_ylabel("training loss", fontsize=8)
        if any(c.dev for c in group):
            right = ax.twinx()
            _draw_group(right, group, "dev", f"{label} dev", "black")
            right.set_ylabel("dev score", fontsize=8)
            right.tick_params(labelsize=7)
        where = f" · {corpus or 'own corpus'}" if several else ""
        ax.set_title(textwrap.fill(f"{label}{where} ({seeds} seed{'s' * (seeds > 1)})", 44), fontsize=8)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
        marked = [h for h, t in zip(*ax.get_legend_handles_labels()) if "seed" in t and ":" in t]
        if marked:
            ax.legend(fontsize=6)
    fig.suptitle(textwrap.fill(title, 110), fontsize=10)
    if notes:
        fig.supxlabel("\n".join(textwrap.fill(n, 140) for n in notes), fontsize=7)
    fig.savefig(png)


PANELS_PER_ROW = 4


def _grid(n_panels: int):
    """One panel per row of the table, :data:`PANELS_PER_ROW` a row (Agg, no pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = min(n_panels, PANELS_PER_ROW)
    rows = math.ceil(n_panels / cols)
    fig = Figure(figsize=(3.4 * cols, 2.8 * rows + 0.8), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(rows, cols, k + 1) for k in range(n_panels)]


def _draw_group(ax: Any, group: list[UnitCurve], kind: str, label: str, color: str) -> None:
    """The seeds of one row on one panel: mean line, min-max band, marks, and where a chain's stages change."""
    steps, mean, low, high = seed_band(group, kind)
    if not steps:
        return
    style = {"marker": "o", "markersize": 3} if len(steps) < 30 else {}
    ax.plot(steps, mean, color=color, linewidth=1.2, label=label, **style)
    if len(group) > 1:
        ax.fill_between(steps, low, high, color=color, alpha=0.2, linewidth=0)
    for c in group:
        points = [(s, v) for s, v in getattr(c, kind) if math.isfinite(v)]
        if c.marks and points:
            ax.plot([points[-1][0]], [points[-1][1]], "x", color="red", markersize=8, mew=2,
                    label=f"{label.rsplit(' (', 1)[0]} seed {c.seed}: {', '.join(c.marks)}")
    for end in sorted({e for c in group for e in c.stage_ends}):
        ax.axvline(end, color=color, linestyle=":", linewidth=0.8)
