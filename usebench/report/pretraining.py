"""Pre-training with growing labeled sets (TSDAE paper Fig. 2, App. E) and the labeled-data break-even (Table 10).

Runs of ``bench run --labeled-sizes ...`` carry ``setting: pretraining`` and ``labeled_size`` in their config:
the task's supervised stage trained on a seeded subset of that size, after a pre-training method (``tsdae>
sbert-cosine``) or from the backbone (``sbert-cosine`` alone, the curve named "SBERT"). Scores are read on the
dev split where a task has one (TwitterPara: test), as the paper does.

Break-even (App. D): how many labeled pairs the supervised model from the backbone needs to match an
unsupervised method. The paper binary-searches the size, with a precision equal to the standard deviation of
the unsupervised score over its seeds. The report cannot train, so it runs that search over the sizes in the
store: a size whose mean is within the precision of the target is the answer; otherwise the two measured sizes
that bracket the target give the interval and the next size to run (their midpoint; beyond the measured range,
double or halve). Each new ``bench run --labeled-sizes N`` narrows it, as each step of the paper's search does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from usebench.report.plots import Plot, _figure, _write_csv
from usebench.stats.table_rows import DISPLAY, ResultIndex, RowKey
from usebench.stats.seeds import SeedStats
from usebench.stats.table_specs import COLUMNS

# Fig. 2 / Table 10 columns: each USEB task's main score (and STSb, when it is the target).
CURVE_COLUMNS = ("askubuntu", "cqadupstack", "twitterpara.avg", "scidocs.avg", "stsb")
PLAIN = "sbert"  # the row name of the supervised stage trained from the backbone (rows.row_method)


@dataclass(frozen=True)
class Point:
    """One curve point: a pre-training method at one labeled size, mean ± std over seeds (x100)."""

    column: str
    split: str
    method: str
    model: str
    size: int
    stats: SeedStats


def split_for(index: ResultIndex, keys: list[RowKey], task: str) -> str:
    """One split per column, the same for every curve in it: Fig. 2 reads the development sets; a task with no
    dev result (TwitterPara has no dev split) is read on test."""
    return "dev" if any(index.results(k, task, "dev") for k in keys) else "test"


def curve_points(index: ResultIndex) -> list[Point]:
    """Every (column, pre-training method, size) with at least one seed, on the column's split."""
    points = []
    keys = [k for k in index.rows if k.group == "pretraining" and k.labeled_size]
    for cid in CURVE_COLUMNS:
        col = COLUMNS[cid]
        split = split_for(index, keys, col.task or "")
        for key in keys:
            stats = index.held_cell(key, col, split).scaled(100.0)
            if stats.n:
                points.append(Point(cid, split, key.method, key.model, int(key.labeled_size), stats))
    return points


def splits_caption(points: list[Point]) -> str:
    """Which split each panel reads, e.g. "scored on dev (TwitterP. Avg.: test)"."""
    splits = {p.column: p.split for p in points}
    main = max(set(splits.values()), key=list(splits.values()).count)
    others = [f"{_header(c)}: {s}" for c, s in splits.items() if s != main]
    return f"scored on {main}" + (f" ({', '.join(others)})" if others else "")


def _name(method: str) -> str:
    return "SBERT (backbone)" if method == PLAIN else DISPLAY.get(method, method) + " + SBERT"


def pretraining_figure(index: ResultIndex, out_dir: Path) -> Plot | None:
    """Score vs labeled-set size per task, one line per pre-training method with a ±1 std band over seeds."""
    points = curve_points(index)
    if not points:
        return None
    cols = [c for c in CURVE_COLUMNS if any(p.column == c for p in points)]
    fig, axes = _figure(len(cols))
    for ax, cid in zip(axes, cols):
        for method in sorted({p.method for p in points if p.column == cid}, key=lambda m: (m != PLAIN, m)):
            pts = sorted((p for p in points if p.column == cid and p.method == method), key=lambda p: p.size)
            xs, means = [p.size for p in pts], [p.stats.mean for p in pts]
            stds = [0.0 if math.isnan(p.stats.std) else p.stats.std for p in pts]
            line = ax.plot(xs, means, marker="o", ms=3, label=_name(method))[0]
            ax.fill_between(xs, [m - s for m, s in zip(means, stds)], [m + s for m, s in zip(means, stds)],
                            color=line.get_color(), alpha=0.2, linewidth=0)
        _unsupervised_lines(ax, index, cid, points)
        ax.set_xscale("log")
        ax.set_xlabel("labeled training pairs", fontsize=8)
        split = next(p.split for p in points if p.column == cid)
        ax.set_title(f"{_header(cid)} ({split})", fontsize=9)
        ax.legend(fontsize=6)
    fig.suptitle("Pre-training + in-domain supervised vs labeled-set size, mean ± std over seeds, "
                 f"{splits_caption(points)} (TSDAE paper Fig. 2: dev sets, TwitterPara test)", fontsize=10)
    png, csv_path = out_dir / "pretraining.png", out_dir / "pretraining.csv"
    fig.savefig(png)
    rows = [(p.column, p.split, p.method, p.model, p.size, p.stats.mean,
             "" if math.isnan(p.stats.std) else p.stats.std, p.stats.n) for p in points]
    for cid in cols:  # the unsupervised levels drawn as dashed lines: labeled_size 0 (no labels)
        first = next(p for p in points if p.column == cid)
        rows += [(cid, first.split, f"{key.method} (unsupervised)", key.model, 0, st.mean,
                  "" if math.isnan(st.std) else st.std, st.n)
                 for key, st in unsupervised_levels(index, cid, first.split, first.model)]
    _write_csv(csv_path, ("column", "split", "pretraining", "model", "labeled_size", "mean", "std", "n"), sorted(rows))
    return Plot("pretraining", png, csv_path, "Pre-training with growing labeled sets (mean ± std over seeds, "
                f"{splits_caption(points)})")


def unsupervised_levels(index: ResultIndex, cid: str, split: str, model: str) -> list[tuple[RowKey, SeedStats]]:
    """The unsupervised rows of one backbone scored on the curve's split (``--labeled-sizes`` trains each method
    alone as well): Fig. 2's "TSDAE: unsupervised" line and Table 10's targets."""
    out = []
    for key in sorted((k for k in index.rows if k.group == "unsupervised" and k.model == model
                       and not k.corpus_size and not k.corpus), key=RowKey.sort_key):
        stats = index.held_cell(key, COLUMNS[cid], split).scaled(100.0)
        if stats.n:
            out.append((key, stats))
    return out


def _unsupervised_lines(ax, index: ResultIndex, cid: str, points: list[Point]) -> None:
    """A dashed level per unsupervised method on the panel's split, as the paper draws TSDAE's."""
    pts = [p for p in points if p.column == cid]
    for key, stats in unsupervised_levels(index, cid, pts[0].split, pts[0].model):
        ax.axhline(stats.mean, linestyle="--", linewidth=1, label=f"{DISPLAY.get(key.method, key.method)}: unsupervised")


@dataclass(frozen=True)
class BreakEven:
    """Where the supervised curve meets an unsupervised score (sizes in labeled pairs)."""

    column: str
    target_method: str
    target: float  # mean x100
    precision: float  # std of the target over its seeds (0 when it has one seed)
    found: int | None = None  # the smallest measured size within the precision
    low: int | None = None  # the largest measured size below the target (None: none measured)
    high: int | None = None  # the smallest measured size above it
    next_size: int | None = None  # the next size the binary search would run (None: none left to run)
    # The supervised curve's training data when it is not the task's own labeled set (e.g. "twitter-url", the
    # stand-in for TwitterPara): the paper's Table 10 number is then no neighbour of this column's result.
    other_data: str | None = None

    def text(self) -> str:
        if self.found is not None:
            return f"≈{self.found:,}"
        nxt = f" (next: {self.next_size:,})" if self.next_size else " (no size left to run)"
        if self.low is not None and self.high is not None:
            return f"{self.low:,}–{self.high:,}{nxt}"
        if self.low is not None:
            return f"> {self.low:,}{nxt}"
        return f"< {self.high:,}{nxt}"


def search(curve: list[tuple[int, float]], target: float, precision: float,
           max_size: int | None = None) -> tuple[int | None, int | None, int | None, int | None]:
    """(found, low, high, next) for a supervised curve of (size, mean) against ``target`` ± ``precision``.
    ``next`` is a size `bench run --labeled-sizes` accepts and has not measured: between 1 and ``max_size``
    (the labeled set's size), or None when no such size is left."""
    curve = sorted(curve)
    within = [n for n, m in curve if abs(m - target) <= precision]
    if within:
        return within[0], None, None, None
    below = [n for n, m in curve if m < target]
    above = [n for n, m in curve if m > target]
    # The bracket: the largest size still below the target that is smaller than the first size above it.
    high = above[0] if above else None
    lows = [n for n in below if high is None or n < high]
    low = lows[-1] if lows else None
    if low is not None and high is not None:
        nxt = (low + high) // 2
        return None, low, high, nxt if nxt > low else None
    if low is not None:
        nxt = 2 * low if max_size is None else min(2 * low, max_size)
        return None, low, None, nxt if nxt > low else None
    return None, None, high, high // 2 if high and high // 2 >= 1 else None  # type: ignore[operator]


def break_even(index: ResultIndex) -> list[BreakEven]:
    """Per column and unsupervised method (same base model, same split as the curve): the break-even."""
    curve = [p for p in curve_points(index) if p.method == PLAIN]
    out = []
    for cid in CURVE_COLUMNS:
        pts = [p for p in curve if p.column == cid]
        if not pts:
            continue
        split, model = pts[0].split, pts[0].model
        for key, stats in unsupervised_levels(index, cid, split, model):
            precision = 0.0 if math.isnan(stats.std) else stats.std
            found, low, high, nxt = search([(p.size, p.stats.mean) for p in pts], stats.mean, precision,
                                           _labeled_set_size(index, cid, split))
            out.append(BreakEven(cid, key.method, stats.mean, precision, found, low, high, nxt,
                                 _other_data(index, cid, split)))
    return out


def _other_data(index: ResultIndex, cid: str, split: str) -> str | None:
    """The supervised curve's labeled data when it is not the task's own (the recorded label of its last stage
    does not start with the task's name), else None."""
    task = COLUMNS[cid].task or ""
    labels = {str((r.record.get("config", {}).get("stages") or [{}])[-1].get("data", {}).get("label", ""))
              for key in index.rows if key.group == "pretraining" and key.method == PLAIN
              for r in index.results(key, task, split)}
    other = sorted(lab for lab in labels if lab and not lab.startswith(task))
    return ", ".join(other) or None


def _labeled_set_size(index: ResultIndex, cid: str, split: str) -> int | None:
    """The full labeled set of the supervised curve (its stage's ``examples``), the largest size a run accepts."""
    for key in (k for k in index.rows if k.group == "pretraining" and k.method == PLAIN):
        for r in index.results(key, COLUMNS[cid].task or "", split):
            stages = r.record.get("config", {}).get("stages") or [{}]
            size = stages[-1].get("data", {}).get("examples")
            if isinstance(size, int):
                return size
    return None


def break_even_markdown(rows: list[BreakEven], paper: dict[str, float] | None = None) -> str:
    """The break-even table (methods x columns), with the paper's Table 10 row for TSDAE beside it."""
    cols = [c for c in CURVE_COLUMNS if any(r.column == c for r in rows)]
    head = "| unsupervised method | " + " | ".join(_header(c) for c in cols) + " |"
    lines = ["### Labeled pairs the supervised model (from the backbone) needs to match an unsupervised method "
             "(TSDAE paper Table 10)", "", head, "|" + "---|" * (len(cols) + 1)]
    for method in dict.fromkeys(r.target_method for r in rows):
        cells = {r.column: r for r in rows if r.target_method == method}
        lines.append(f"| {DISPLAY.get(method, method)} | "
                     + " | ".join(cells[c].text() if c in cells else "—" for c in cols) + " |")
    other = {r.column: r.other_data for r in rows if r.other_data}
    if paper:  # the paper's number only beside a curve trained on the task's own labeled data
        lines.append("| paper: TSDAE (Table 10) | " + " | ".join(
            f"— (ours trained on {other[c]})" if c in other else f"{paper[c]:,.0f}" if paper.get(c) is not None
            else "—" for c in cols) + " |")
    lines += ["", "A size within the target's seed std (the paper's search precision) is the answer (≈N); "
              "otherwise the measured sizes that bracket the target and the next size of the binary search "
              "(`bench run --labeled-sizes N`). Target: the unsupervised method's mean on the same split."]
    return "\n".join(lines) + "\n"


def _header(cid: str) -> str:
    col = COLUMNS[cid]
    return f"{col.group} {col.header}".strip() if col.group else col.header


def break_even_csv(rows: list[BreakEven]) -> list[tuple]:
    """Tidy rows for the CSV (one line per column and method)."""
    return [(r.column, r.target_method, r.target, r.precision, r.found or "", r.low or "", r.high or "",
             r.next_size or "") for r in rows]

