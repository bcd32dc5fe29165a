"""The laptop recipe's page (usebench/recipes/laptop.toml): its table, what adaptation did against the start model
(split into the pooling switch and the training, each with an interval: usebench/report/laptop_parts/effects.py), the
learning curves (loss, and TwitterPara's AP over steps: usebench/report/laptop_parts/curves.py), what each unit cost
against the prediction (usebench/report/laptop_parts/cost.py), and how the directions compare with the TSDAE paper's rows.

Everything here is read from the results store: the records, each unit's ``stages.json`` and ``usage.json``, its
stage's ``log.jsonl`` and ``checkpoint/method.json``, and the prediction `bench reproduce` stored. `bench report
--table laptop-adapt` writes ``laptop.md`` (and its plots); docs/papers/laptop.md holds the same text between its
generated-part markers (tests/report/test_laptop_page.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from usebench.report.build import build_table
from usebench.report.laptop_parts.cost import cost_section
from usebench.report.laptop_parts.curves import curve_section, heads_section, loss_figure
from usebench.report.laptop_parts.effects import best_pooling_sentence, effects_section, is_step0, label, start_rows
from usebench.report.laptop_parts.stats import effect
from usebench.report.laptop_parts.units import Unit, recipe_units
from usebench.report.render import grid_of, to_markdown
from usebench.stats.table_rows import ResultIndex, RowKey, index_results
from usebench.stats.table_specs import TABLES
from usebench.store import StoredResult

TABLE = "laptop-adapt"
PLOTS = ("laptop-loss.png", "laptop-twitterpara.png")
# TSDAE paper Table 2, TwitterP. Avg.: the block "Domain adaptation: NLI+STS -> target task" and its start model's row
PAPER_START = ("SBERT-base-nli-stsb-v2", 72.2)
PAPER_ADAPTED = {"tsdae": 71.0, "mlm": 69.0, "ct": 73.1, "simcse": 69.7, "bertflow": 72.0}


def write_laptop_page(results: Sequence[StoredResult], out: Path) -> list[Path]:
    """``laptop.md`` and its plots in ``out`` when the store holds the recipe's rows; nothing otherwise."""
    index = index_results(results)
    trained = trained_rows(index)
    if not trained:
        return []
    units = recipe_units(results)
    store = units[0].run_dir.parent if units else out
    plots = [out / "plots" / name for name in PLOTS]
    text = page_text(index, trained, units, store, plots)
    (out / "laptop.md").write_text(text, encoding="utf-8")
    return [out / "laptop.md", *plots]


def trained_rows(index: ResultIndex) -> list[RowKey]:
    """The recipe's trained rows (a second pooling of a training included; the step-0 rows are counterparts)."""
    return sorted((k for k in index.rows if k.group == "adapt-nli-first" and k.variant.startswith("laptop")
                   and not is_step0(k)), key=RowKey.sort_key)


def page_text(index: ResultIndex, trained: list[RowKey], units: list[Unit], store: Path, plots: list[Path]) -> str:
    """The generated part of the page (markdown)."""
    built = build_table(TABLES.get(TABLE), index)
    parts = ["## The table", "", to_markdown(grid_of(built)).replace("### ", "**", 1).replace("\n", "**\n", 1),
             "## What adaptation did", "", *effects_section(index, trained), "",
             *best_pooling_sentence(index, trained), "",
             "## Learning curves", "", f"![Training loss per row, seed band]({loss_figure(units, plots[0])})", "",
             "Training loss against step (the stage's log: every 10 steps; SimCSE every step, ConSERT, DenoSent and "
             "PaSeR every 5), the line the mean over seeds, the band their range.", "",
             *curve_section(index, units, plots[1]), "", "### New at step 0", "", *heads_section(units), "",
             "## What each unit cost", "", *cost_section(units, store), "",
             "## Against the paper's rows", "", *paper_section(index, trained)]
    return "\n".join(parts).rstrip() + "\n"


# --- the paper's directions -----------------------------------------------------------------------------------------

def paper_section(index: ResultIndex, trained: list[RowKey]) -> list[str]:
    """Our direction against the start model beside the paper's against its own (TSDAE Table 2, TwitterP. Avg.):
    ours with its interval, and a direction only where that interval excludes 0."""
    start = start_rows(index).get("mean")
    lines = [f"TwitterPara average AP, x100: the paper's rows against its start model {PAPER_START[0]} "
             f"({PAPER_START[1]}), ours against all-MiniLM-L6-v2 with its mean pooling (the total of the effects "
             "table, with its interval). Different backbones, corpora (the paper's USEB train file, 100K steps) and "
             "budgets: only the directions are compared, never the numbers, and ours only where its interval "
             "excludes 0.", "", "| Method | paper | paper Δ | ours Δ | same direction |", "|---|---:|---:|---:|---|"]
    for key in trained:
        if key.method not in PAPER_ADAPTED or start is None or "eval_pooling=" in key.variant:
            continue
        paper = PAPER_ADAPTED[key.method] - PAPER_START[1]
        ours = effect(index, key, start, "twitterpara.avg")
        if ours is None:
            continue
        same = ("yes" if (ours.delta > 0) == (paper > 0) else "no") if ours.excludes_zero else "not distinguishable"
        lines.append(f"| {label(key)} | {PAPER_ADAPTED[key.method]:.1f} | {paper:+.1f} | {ours.cell()} | {same} |")
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
