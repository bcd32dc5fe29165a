"""The laptop page's curves: the training loss, and TwitterPara's test AP over steps (the curve points each stage
scored while training, ``curve_task``; step 0 from the row's counterpart; the last step from the unit's own
result), each with its seeds' band; and the heads that start new, with their loss at the last step."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from usebench.report.laptop_parts.effects import counterpart, label
from usebench.report.laptop_parts.units import Unit, by_row
from usebench.stats.table_rows import ResultIndex, RowKey

CURVE_COLUMN = "twitterpara.avg"
# What starts new at step 0 in each method, the log key of its loss, and that loss for uniform logits (METHODS.md
# §9: a vocabulary of 30,522 tokens; SimCSE's InfoNCE over a batch of 512)
NEW_HEADS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "tsdae": (("loss", "the decoder's cross-attention (its other weights tied to the encoder)", "ln 30522 = 10.33"),),
    "mlm": (("loss", "the MLM head (MiniLM ships none)", "ln 30522 = 10.33"),),
    "simcse": (("loss", "the MLP on [CLS]", "ln 512 = 6.24"),),
    "bertflow": (("loss", "the flow (Glow; the encoder is frozen)", "—"),),
    "denosent": (("generative", "the 16-layer decoder", "ln 30522 = 10.33"),),
    "paser": (("generative", "the 6-layer decoder", "ln 30522 = 10.33"),
              ("mlm", "the MLM head (MiniLM ships none)", "ln 30522 = 10.33")),
}


def trained_rows(units: list[Unit]) -> dict[RowKey, list[Unit]]:
    """The rows whose units trained their own stage (not a step-0 unit, not a second pooling of a training)."""
    from usebench.report.laptop_parts.effects import EVAL_POOLING, is_step0

    return {k: us for k, us in by_row(units).items() if not is_step0(k) and EVAL_POOLING not in k.variant}


def loss_figure(units: list[Unit], png: Path) -> str:
    """One panel per trained row: the mean loss over seeds at each logged step in the band of their range; the
    path written, relative to the page."""
    png.parent.mkdir(parents=True, exist_ok=True)
    rows = trained_rows(units)
    fig, axes = _figure(len(rows), width=2.6, height=2.2)  # per panel, four a row
    for ax, (key, mine) in zip(axes, rows.items()):
        curves = [{ln["step"]: ln["loss"] for ln in u.log() if "loss" in ln} for u in mine]
        curves = [c for c in curves if c]
        _band(ax, curves)
        ax.set_title(f"{label(key)} ({len(curves)} seeds)", fontsize=8)
        ax.set_ylabel("training loss", fontsize=7)
    fig.savefig(png)
    return f"{png.parent.name}/{png.name}"


def _figure(n_panels: int, width: float, height: float) -> tuple[Any, list[Any]]:
    """A figure of ``n_panels`` panels, four a row (the report's plots' layout; this room draws its own)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = max(1, min(n_panels, 4))
    rows = max(1, math.ceil(n_panels / cols))
    fig = Figure(figsize=(width * cols, height * rows), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(rows, cols, i + 1) for i in range(n_panels)]


def _band(ax: Any, curves: list[dict[int, float]], marker: str | None = None) -> None:
    steps = sorted(set.intersection(*(set(c) for c in curves))) if curves else []
    if steps:
        lo = [min(c[s] for c in curves) for s in steps]
        hi = [max(c[s] for c in curves) for s in steps]
        ax.fill_between(steps, lo, hi, alpha=0.3)
        ax.plot(steps, [sum(c[s] for c in curves) / len(curves) for s in steps], linewidth=1, marker=marker,
                markersize=3)
    ax.set_xlabel("step", fontsize=7)
    ax.tick_params(labelsize=6)


def metric_points(index: ResultIndex, key: RowKey, units: list[Unit]) -> dict[int, dict[int, float]]:
    """step -> {seed: TwitterPara AP x100}: the counterpart at step 0 (its seeds', or its one value for every
    seed), the curve points scored while training, and each unit's own result at its last step."""
    points: dict[int, dict[int, float]] = {}
    other, _ = counterpart(index, key)
    if other is not None:
        start = index.held_cell(other, CURVE_COLUMN, "test").values
        for u in units:
            value = start.get(u.seed, next(iter(start.values())) if len(start) == 1 else None)
            if value is not None:
                points.setdefault(0, {})[u.seed] = 100 * value
    final = index.held_cell(key, CURVE_COLUMN, "test").values
    for u in units:
        for line in u.log():
            if "curve_score" in line:
                points.setdefault(int(line["step"]), {})[u.seed] = 100 * float(line["curve_score"])
        steps = u.checkpoint_meta().get("steps")
        if u.seed in final and steps is not None:
            points.setdefault(int(steps), {})[u.seed] = 100 * final[u.seed]
    return dict(sorted(points.items()))


def curve_section(index: ResultIndex, units: list[Unit], png: Path) -> list[str]:
    """The TwitterPara curve's plot and table: per trained row, each point's mean over seeds and their range."""
    rows = {k: metric_points(index, k, us) for k, us in trained_rows(units).items()}
    picture = _metric_figure(rows, png)
    lines = [f"![TwitterPara AP over steps, seed band]({picture})", "",
             "TwitterPara average AP x100 over training steps, the line the mean over seeds, the band their range: step "
             "0 is the row's counterpart (below), the last step the unit's own result, the points between scored on "
             "the test set while it trained (a curve to read, never a checkpoint selection). The batch-8 methods are "
             "scored at 100 and 250 steps (and 500 where they run 1,000); the methods whose papers train few large "
             "steps at 20% and 50% of their budget, the fractions 100 and 250 are of 500.", "",
             "| Row | points: step = mean [min, max] over seeds |", "|---|---|"]
    for key, points in rows.items():
        cells = [f"{s} = {_mean(v):.2f} [{min(v.values()):.2f}, {max(v.values()):.2f}]"
                 if len(set(v.values())) > 1 else f"{s} = {_mean(v):.2f}" for s, v in points.items()]
        lines.append(f"| {label(key)} | " + " · ".join(cells) + " |")
    if not any("curve_score" in line for us in trained_rows(units).values() for u in us for line in u.log()):
        lines += ["", "This store has no curve points between step 0 and the last step (its units were trained "
                  "before the stages scored a curve)."]
    return lines


def _mean(values: dict[int, float]) -> float:
    return sum(values.values()) / len(values)


def _metric_figure(rows: dict[RowKey, dict[int, dict[int, float]]], png: Path) -> str:
    png.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = _figure(len(rows), width=2.6, height=2.2)
    for ax, (key, points) in zip(axes, rows.items()):
        seeds = sorted({s for v in points.values() for s in v})
        curves = [{step: v[s] for step, v in points.items() if s in v} for s in seeds]
        _band(ax, [c for c in curves if c], marker="o")
        ax.set_title(f"{label(key)} ({len(seeds)} seeds)", fontsize=8)
        ax.set_ylabel("TwitterP. AP", fontsize=7)
    fig.savefig(png)
    return f"{png.parent.name}/{png.name}"


def heads_section(units: list[Unit]) -> list[str]:
    """Which methods start with a part that is new at step 0, and that part's loss at the first and the last
    logged step (mean over seeds), beside the loss of uniform logits."""
    lines = ["What is new at step 0 and trains from scratch, with its loss at the first and the last logged step "
             "(mean over seeds; the stage's `log.jsonl`). CT, ConSERT and the start model's poolings have no new part.",
             "", "| Row | new at step 0 | loss | first logged | last logged | uniform logits |",
             "|---|---|---|---:|---:|---:|"]
    for key, mine in trained_rows(units).items():
        for log_key, what, uniform in NEW_HEADS.get(key.method, ()):
            first, last = _ends(mine, log_key)
            lines.append(f"| {label(key)} | {what} | {log_key} | {_fmt(first)} | {_fmt(last)} | {uniform} |")
    return lines


def _ends(units: list[Unit], log_key: str) -> tuple[float | None, float | None]:
    firsts, lasts = [], []
    for u in units:
        values = [(ln["step"], ln[log_key]) for ln in u.log() if log_key in ln and "curve_score" not in ln]
        if values:
            firsts.append(values[0][1])
            lasts.append(values[-1][1])
    mean = (lambda xs: sum(xs) / len(xs) if xs else None)
    return mean(firsts), mean(lasts)


def _fmt(value: float | None) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:.3f}"
