"""The laptop recipe's page (usebench/recipes/laptop.toml): its table, what adaptation did against the start model
(split into what the pooling switch does and what the training does, with the direction in every seed), the
learning curves, what each unit cost, and how the directions compare with the TSDAE paper's rows.

Everything here is read from the results store: the records, each unit's ``stages.json`` and ``usage.json``, and its
stage's ``log.jsonl``. `bench report --table laptop-adapt` writes ``laptop.md`` (and ``plots/laptop-loss.png``);
docs/papers/laptop.md holds the same text between its generated-part markers (tests/report/test_laptop_page.py).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.report.build import build_table
from usebench.report.plots import read_log
from usebench.report.render import grid_of, to_markdown
from usebench.scores.rows import DISPLAY, ResultIndex, RowKey, index_results
from usebench.scores.stats import SeedStats
from usebench.scores.tables import COLUMNS, TABLES
from usebench.store import StoredResult

TABLE = "laptop-adapt"
SUMMARY = ("twitterpara.avg", "sts.avg")  # the two numbers the page's comparisons are about
# The start model's pooling that a method's own evaluation pooling is at step 0: the same pooling, or (SimCSE's MLP
# on CLS, new at step 0) the CLS it is put on; BERT-flow's flow sits on first_last_avg; DenoSent's [MASK] prompt has
# no untrained counterpart `bench eval` can score.
STEP0_POOLING = {"cls": "cls", "cls_mlp": "cls", "mean": "mean", "last2avg": "last2avg", "flow": "first_last_avg"}
# TSDAE paper Table 2, TwitterP. Avg.: the block "Domain adaptation: NLI+STS -> target task" and its start model's row
PAPER_START = ("SBERT-base-nli-stsb-v2", 72.2)
PAPER_ADAPTED = {"tsdae": 71.0, "mlm": 69.0, "ct": 73.1, "simcse": 69.7, "bertflow": 72.0}


@dataclass(frozen=True)
class Unit:
    """A trained unit of the recipe as the store holds it."""

    run_dir: Path
    method: str
    seed: int
    home: Path  # its (last) stage's home: log.jsonl


def write_laptop_page(results: Sequence[StoredResult], out: Path) -> list[Path]:
    """``laptop.md`` and its loss plot in ``out`` when the store holds the recipe's rows; nothing otherwise."""
    index = index_results(results)
    trained = sorted((k for k in index.rows if k.group == "adapt-nli-first" and k.variant.startswith("laptop")),
                     key=RowKey.sort_key)
    if not trained:
        return []
    units = recipe_units(results)
    plot = out / "plots" / "laptop-loss.png"
    text = page_text(index, trained, units, loss_figure(units, plot))
    (out / "laptop.md").write_text(text, encoding="utf-8")
    return [out / "laptop.md", plot]


def page_text(index: ResultIndex, trained: list[RowKey], units: list[Unit], plot: str) -> str:
    """The generated part of the page (markdown)."""
    built = build_table(TABLES.get(TABLE), index)
    parts = ["## The table", "", to_markdown(grid_of(built)).replace("### ", "**", 1).replace("\n", "**\n", 1),
             "## What adaptation did", "", *effects_section(index, trained), "",
             "## Learning curves", "", f"![Training loss per method, seed band]({plot})", "",
             "Training loss against step (log every 10 steps; SimCSE every step, ConSERT, DenoSent and PaSeR every "
             "5), the line the mean over seeds, the band their range.", "",
             "## What each unit cost", "", *usage_section(units), "",
             "## Against the paper's rows", "", *paper_section(index, trained)]
    return "\n".join(parts).rstrip() + "\n"


# --- the effects, against the start model --------------------------------------------------------------------------

def effects_section(index: ResultIndex, trained: list[RowKey]) -> list[str]:
    """Per method: trained minus the start model's own mean pooling, split into the pooling switch (the start model
    under the method's pooling) and the training (trained minus that), with the sign in each seed."""
    start = _start_rows(index)
    lines = ["Differences in points, TwitterPara average AP | STS average Spearman. *Total*: trained minus the start "
             "model with its own mean pooling; *pooling*: the start model under the method's evaluation pooling minus "
             "the same; *training*: trained minus the start model under the method's pooling (each seed's, the "
             "start model being one deterministic number). A sign in every seed is written `3/3 <0`.", "",
             "| Method | pooling | total | pooling | training |", "|---|---|---:|---:|---:|"]
    for key in trained:
        base = start.get("mean")
        step0 = start.get(STEP0_POOLING.get(key.pooling, ""))
        cells = [_delta_pair(index, key, base), _difference(index, step0, base),
                 _delta_pair(index, key, step0) if step0 else "n/a (no untrained counterpart)"]
        lines.append(f"| {DISPLAY.get(key.method, key.method)} | {key.pooling} | " + " | ".join(cells) + " |")
    return lines


def _start_rows(index: ResultIndex) -> dict[str, RowKey]:
    """The start model's rows (untrained, out-of-the-box) by pooling."""
    return {k.pooling: k for k in index.rows if k.group == "out-of-the-box" and k.method == "base"}


def _delta_pair(index: ResultIndex, key: RowKey, base: RowKey | None) -> str:
    if base is None:
        return "n/a"
    return " \\| ".join(_seed_delta(index.held_cell(key, c, "test"), index.held_cell(base, c, "test"))
                        for c in SUMMARY)


def _seed_delta(ours: SeedStats, start: SeedStats) -> str:
    """Mean difference x100 over our seeds against the start model's one value, with the sign count."""
    if not ours.n or not start.n:
        return "—"
    ref = start.mean
    diffs = [100 * (v - ref) for v in ours.values.values()]
    mean = sum(diffs) / len(diffs)
    counts = {">0": sum(d > 0 for d in diffs), "<0": sum(d < 0 for d in diffs), "=0": sum(d == 0 for d in diffs)}
    signs = [f"{n}/{len(diffs)} {s}" if n == len(diffs) else f"{n} {s}" for s, n in counts.items() if n]
    return f"{mean:+.2f} ({', '.join(signs)})"


def _difference(index: ResultIndex, a: RowKey | None, b: RowKey | None) -> str:
    """Row ``a`` minus row ``b`` (one value each), x100, per summary column."""
    if a is None or b is None:
        return "n/a"
    out = []
    for column in SUMMARY:
        x, y = (index.held_cell(k, COLUMNS[column], "test") for k in (a, b))
        if not x.n or not y.n:
            return "—"
        out.append(f"{100 * (x.mean - y.mean):+.2f}")
    return " \\| ".join(out)


# --- the store's units: their cost and their curves -------------------------------------------------------------

def recipe_units(results: Sequence[StoredResult]) -> list[Unit]:
    """Every trained unit of the recipe in the store, with its last stage's home."""
    out: dict[Path, Unit] = {}
    for r in results:
        run_dir = r.path.parent.parent
        if run_dir in out or r.record["method"].get("setting") != "adapt-nli-first":
            continue
        stages = json.loads((run_dir / "stages.json").read_text(encoding="utf-8"))
        home = run_dir.parent / stages[-1]["home"]
        out[run_dir] = Unit(run_dir, str(stages[-1]["method"]), int(r.record["seed"]), home)
    return sorted(out.values(), key=lambda u: (_order(u.method), u.seed))


def _order(method: str) -> int:
    from usebench.scores.rows import METHOD_ORDER

    return METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER)


def usage_section(units: list[Unit]) -> list[str]:
    """Per method: steps, wall and CPU seconds per unit (mean over seeds), the unit's own peak memory, and totals."""
    lines = ["Per unit (mean over its seeds): optimizer steps, wall time and CPU time (all threads) of training and "
             "evaluating it, and the highest resident memory of its seeds' own runs, from each unit's `usage.json` "
             "(— where a unit's own peak was not recorded: the store's runs before it was).", "",
             "| Method | steps | wall s / unit | CPU s / unit | peak GiB | units |", "|---|---:|---:|---:|---:|---:|"]
    total_wall = total_cpu = peak = 0.0
    for method in dict.fromkeys(u.method for u in units):
        mine = [u for u in units if u.method == method]
        use = [_usage(u) for u in mine]
        walls, cpus = [x["wall_s"] for x in use if x], [x["cpu_s"] for x in use if x]
        own = [x["unit_peak"] for x in use if x and x["unit_peak"] is not None]
        total_wall, total_cpu = total_wall + sum(walls), total_cpu + sum(cpus)
        peak = max([peak, *(x["peak"] for x in use if x)])
        steps, own_peak = _steps(mine[0]), f"{max(own) / 1024:.2f}" if own else "—"
        lines.append(f"| {DISPLAY.get(method, method)} | {steps} | {_mean(walls)} | {_mean(cpus)} | {own_peak} | "
                     f"{len(mine)} |")
    lines += ["", f"All {len(units)} units: {total_wall / 3600:.2f} h wall, {total_cpu / 3600:.2f} h CPU; the highest "
              f"resident memory {peak / 1024:.2f} GiB."]
    return lines


def _usage(unit: Unit) -> dict[str, Any] | None:
    """The unit's attempts summed (a resumed unit's time is all of its attempts'); its own peak where every attempt
    recorded one."""
    path = unit.run_dir / "usage.json"
    if not path.is_file():
        return None
    attempts = json.loads(path.read_text(encoding="utf-8"))["attempts"]
    own = [a.get("unit_peak_rss_mb") for a in attempts]
    return {"wall_s": sum(a["wall_s"] for a in attempts), "cpu_s": sum(a["cpu_s"] for a in attempts),
            "peak": max(a.get("unit_peak_rss_mb") or a.get("process_peak_rss_mb") or 0.0 for a in attempts),
            "unit_peak": None if None in own else max(own)}


def _steps(unit: Unit) -> str:
    meta = json.loads((unit.home / "checkpoint" / "method.json").read_text(encoding="utf-8")) \
        if (unit.home / "checkpoint" / "method.json").is_file() else {}
    return str(meta.get("steps_trained", meta.get("steps", "?")))


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):,.0f}" if values else "—"


def loss_figure(units: list[Unit], png: Path) -> str:
    """One line per method (the mean over seeds at each logged step) in a band (their range); the path written,
    relative to the page."""
    from usebench.report.plots import _figure

    png.parent.mkdir(parents=True, exist_ok=True)
    methods = list(dict.fromkeys(u.method for u in units))
    fig, axes = _figure(len(methods), width=2.6, height=2.2)  # per panel, four a row
    for ax, method in zip(axes, methods):
        curves = [dict(read_log(u.home / "log.jsonl")) for u in units if u.method == method
                  and (u.home / "log.jsonl").is_file()]
        steps = sorted(set.intersection(*(set(c) for c in curves))) if curves else []
        if steps:
            lo = [min(c[s] for c in curves) for s in steps]
            hi = [max(c[s] for c in curves) for s in steps]
            ax.fill_between(steps, lo, hi, alpha=0.3)
            ax.plot(steps, [sum(c[s] for c in curves) / len(curves) for s in steps], linewidth=1)
        ax.set_title(f"{DISPLAY.get(method, method)} ({len(curves)} seeds)", fontsize=8)
        ax.set_xlabel("step", fontsize=7)
        ax.set_ylabel("training loss", fontsize=7)
        ax.tick_params(labelsize=6)
    fig.savefig(png)
    return f"{png.parent.name}/{png.name}"


# --- the paper's directions -----------------------------------------------------------------------------------------

def paper_section(index: ResultIndex, trained: list[RowKey]) -> list[str]:
    """Our direction against the start model beside the paper's against its own (TSDAE Table 2, TwitterP. Avg.)."""
    start = _start_rows(index).get("mean")
    lines = [f"TwitterPara average AP, x100: the paper's rows against its start model {PAPER_START[0]} "
             f"({PAPER_START[1]}), ours against all-MiniLM-L6-v2 with its mean pooling. Different backbones, corpora "
             "(the paper's USEB train file, 100K steps) and budgets: only the directions are compared, never the "
             "numbers.", "", "| Method | paper | paper Δ | ours Δ | same direction |", "|---|---:|---:|---:|---|"]
    for key in trained:
        if key.method not in PAPER_ADAPTED or start is None:
            continue
        paper = PAPER_ADAPTED[key.method] - PAPER_START[1]
        ours = index.held_cell(key, COLUMNS["twitterpara.avg"], "test")
        base = index.held_cell(start, COLUMNS["twitterpara.avg"], "test")
        if not ours.n or not base.n:
            continue
        delta = 100 * (ours.mean - base.mean)
        same = "yes" if (delta > 0) == (paper > 0) else "no"
        lines.append(f"| {DISPLAY.get(key.method, key.method)} | {PAPER_ADAPTED[key.method]:.1f} | {paper:+.1f} | "
                     f"{delta:+.2f} | {same} |")
    return lines



# --- the docs page -------------------------------------------------------------------------------------------------

BEGIN = "<!-- generated: bench report --results-dir results/laptop --table laptop-adapt (usebench/report/laptop.py) -->"
END = "<!-- end of the generated part -->"


def splice(doc: str, generated: str) -> str:
    """``doc`` (docs/papers/laptop.md) with the text between its markers replaced by ``generated``."""
    if doc.count(BEGIN) != 1 or doc.count(END) != 1:
        raise ValueError(f"the page must hold the markers {BEGIN!r} and {END!r} once each")
    head, rest = doc.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{generated.rstrip()}\n{END}{tail}"
