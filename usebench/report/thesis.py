"""R. Wang 2022 (thesis) figures: Recall@k and Precision@k against k (Figs. 5.3 / 5.4) and the BM25-rescoring
alpha sweep (Fig. 5.2's curve, eq. 5.1), each a PNG plus the CSV of the numbers drawn, from the results store.

- ``thesis-fig5.3`` / ``thesis-fig5.4``: per row of the ``thesis-fig5.3`` / ``thesis-fig5.4`` tables (Quora, BEIR
  CQADupStack), the seed means of R@k and P@k for k = 1, 3, 5, 10, 100, 1000 on a log-k axis.
- ``thesis-alpha``: per ``bm25*+<task>`` result, the seed means of its subsets ``none/alpha=<a>`` (raw scores, as
  eq. 5.1) for Recall@10 and P@10 where the task reports them (else its main metric) against alpha.
"""
from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from usebench.report.build import Built
from usebench.report.plots import Plot, _figure, _write_csv
from usebench.stats.table_rows import ResultIndex, row_key, row_label
from usebench.store import StoredResult

K_VALUES = (1, 3, 5, 10, 100, 1000)
ALPHA_KEY = re.compile(r"^none/alpha=([0-9.eE+-]+)$")
SWEEP_METRICS = ("recall@10", "p@10")


# Figures 5.3 and 5.4 plot one setting: "SimCSE_NT-Xent ... averaged over 3 random seeds" (their captions)
FIGURE_SETTING = {"method": "simcse", "loss": "nt_xent"}


def figure_rows(built: Built, index: ResultIndex) -> list:
    """The rows of ``built`` in the figures' setting: SimCSE trained with the NT-Xent loss (other rows stay in the
    table, not in the figure)."""
    from usebench.report.skeleton import _row_configs

    out = []
    for row in built.rows:
        if row.key is None or row.key.method != FIGURE_SETTING["method"]:
            continue
        configs = _row_configs(index, row.key)
        if configs and all(c.get("loss", FIGURE_SETTING["loss"]) == FIGURE_SETTING["loss"] for c in configs):
            out.append(row)
    return out


def recall_precision_curves(built: Built, out_dir: Path, name: str, index: ResultIndex | None = None) -> Plot | None:
    """Two panels (R@k, P@k) with one line per row of ``built`` in the figure's setting (a table of
    ``<task>.recall@k`` / ``p@k``; every row when no ``index`` is given)."""
    rows = figure_rows(built, index) if index is not None else list(built.rows)
    rows = [r for r in rows if any(not c.missing for c in r.cells.values())]
    if not rows:
        return None
    fig, (ax_r, ax_p) = _figure(2, width=4.2)
    data = []
    for row in rows:
        for ax, metric in ((ax_r, "recall"), (ax_p, "p")):
            points = [(k, row.cells[c.id].mean) for k in K_VALUES for c in built.columns
                      if c.metric == f"{metric}@{k}" and not row.cells[c.id].missing]
            if points:
                ax.plot([k for k, _ in points], [v for _, v in points], marker="o", label=row.label)
                data += [(row.label, metric, k, v) for k, v in points]
    for ax, title in ((ax_r, "Recall@k"), (ax_p, "Precision@k")):
        ax.set_xscale("log")
        ax.set_xlabel("k")
        ax.set_title(f"{title} x100")
    ax_r.legend(fontsize="x-small")
    png, csv = out_dir / f"{name}.png", out_dir / f"{name}.csv"
    fig.savefig(png)
    _write_csv(csv, ("row", "metric", "k", "mean_x100"), data)
    return Plot(name, png, csv, f"{built.title}: mean over seeds, log k axis")


LEGEND_CHARS = 70  # a longer label is cut in the legend; the CSV beside the plot keeps it whole


def _legend_label(text: str) -> str:
    return text if len(text) <= LEGEND_CHARS else text[:LEGEND_CHARS - 1].rstrip() + "…"


def alpha_sweep(results: list[StoredResult], out_dir: Path, split: str = "test") -> Plot | None:
    """Metric vs alpha for every BM25-rescoring result (``bm25*+<task>``), one line per (run row, task)."""
    series: dict[tuple[str, str, str], dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        if "+" not in r.task or not r.task.startswith("bm25") or r.split != split:
            continue
        label = row_label(row_key(r.record), show_model=True)  # the row's whole setting: loss=bce is its own line
        for key, values in (r.record.get("subsets") or {}).items():
            m = ALPHA_KEY.match(key)
            if not m:
                continue
            for metric in [x for x in SWEEP_METRICS if x in values] or [r.record["main_metric"]]:
                series[(label, r.task, metric)][float(m.group(1))].append(float(values[metric]))
    if not series:
        return None
    metrics = sorted({metric for _, _, metric in series})
    fig, axes = _figure(len(metrics), width=4.2)
    data = []
    for ax, metric in zip(axes, metrics):
        for (label, task, m), points in sorted(series.items()):
            if m != metric:
                continue
            alphas = sorted(points)
            means = [100 * float(np.mean(points[a])) for a in alphas]
            ax.plot(alphas, means, marker=".", label=_legend_label(f"{task} ({label})"))
            data += [(task, label, metric, a, v, len(points[a])) for a, v in zip(alphas, means)]
        ax.axvline(20.0, color="grey", linewidth=0.8, linestyle="--")  # the thesis' alpha (Table 5.8)
        ax.set_xlabel("alpha (score = bm25 + alpha * cos)")
        ax.set_title(f"{metric} x100")
    # below the axes, not over them: a row's label (model path and settings) is wider than a panel
    axes[0].legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(0.0, -0.18))
    png, csv = out_dir / "thesis-alpha.png", out_dir / "thesis-alpha.csv"
    fig.savefig(png, bbox_inches="tight")
    _write_csv(csv, ("task", "row", "metric", "alpha", "mean_x100", "n_seeds"), data)
    return Plot("thesis-alpha", png, csv, "BM25 top-1000 rescored with bm25 + alpha * cos (eq. 5.1): metric vs alpha")
