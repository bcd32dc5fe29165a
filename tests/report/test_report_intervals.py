"""Every report table carries the item statistics (issue 54): a cell's ± is its bootstrap interval's half-width, the
best cell of a column is bold with every row not significantly worse, the notes name the interval, the test and
the level, and a store without per-item outcomes says so and keeps the seed statistics."""
from __future__ import annotations

import csv
import io

import pytest

from tests.stats.store_fakes import save
from usebench.store.mteb_results import all_results
from usebench.report.build import build_table
from usebench.report.make import ReportOptions, build_sections, paired_lines
from usebench.report.render import grid_of, to_csv, to_json, to_markdown
from usebench.stats.table_rows import index_results
from usebench.stats.table_specs import TABLES
from usebench.stats.intervals import Resampler
from usebench.stats.loading import measurement_of
from usebench.stats.table_cells import TableStats

TABLE = TABLES.get("laptop-adapt")  # TwitterPara's three columns and the STS columns; base rows are baselines


@pytest.fixture()
def store(tmp_path):
    results = tmp_path / "results"
    for task in ("twitterpara", "stsb"):
        save(results, "base__minilm__aaaa1111__s0", "base", "mean", 0, 0.8, task=task)
        save(results, "base__minilm__bbbb2222__s0", "base", "cls", 0, 2.5, task=task)  # clearly worse
        save(results, "base__minilm__cccc3333__s0", "base", "last2avg", 0, 0.81, task=task)  # a tie with mean
        for seed in (0, 1, 2):
            save(results, f"tsdae__minilm__dddd4444__s{seed}", "tsdae", "cls", seed, 1.2, task=task,
                 setting="adapt-nli-first")
            save(results, f"simcse__minilm__eeee5555__s{seed}", "simcse", "cls", seed, 1.0, task=task,
                 setting="adapt-nli-first")
    return results


def _rows(built):
    return {r.label: r for r in built.rows}


def test_cells_show_their_interval_and_the_notes_name_it(store):
    index = index_results(all_results(store))
    built = build_table(TABLE, index)
    mean = _rows(built)["minilm (mean)"].cells["twitterpara.avg"]
    low, high = mean.ci
    assert low < mean.mean < high and mean.std is None  # one seed: no std, an interval all the same
    results = index.results(next(k for k in index.rows if k.pooling == "mean"), "twitterpara", "test")
    iv = Resampler().interval(measurement_of(results), "ap_avg")  # the same resamples (seeded by the test set)
    assert (low, high) == pytest.approx((iv.low * 100, iv.high * 100))
    text = to_markdown(grid_of(built))
    assert f"{mean.mean:.2f} ± {(high - low) / 2:.2f}" in text
    assert "± is the half-width of the 95% percentile bootstrap interval over the test items (1,000 resamples" in text
    tsdae = _rows(built)["TSDAE"].cells["twitterpara.avg"]
    assert tsdae.n == 3 and tsdae.ci[0] < tsdae.mean < tsdae.ci[1]  # seeds and items: the two-level bootstrap
    assert "Bold: the best mean of each column and every row not significantly worse than it at alpha = 0.05 " \
           "(paired bootstrap test (two-level) of the two rows on the same item resamples, Holm's correction" in text


def test_the_best_and_every_row_not_significantly_worse_are_bold(store):
    rows = _rows(build_table(TABLE, index_results(all_results(store))))
    for column in ("twitterpara.avg", "stsb"):
        assert rows["minilm (mean)"].cells[column].bold and rows["minilm (last2avg)"].cells[column].bold  # tied
        assert not rows["minilm (cls)"].cells[column].bold  # significantly worse
    stats = TableStats(index_results(all_results(store)))
    keys = {k.pooling: k for k in stats.index.rows if k.method == "base"}
    assert stats.p_worse(keys["mean"], keys["cls"], "stsb", "test") < 0.01
    assert stats.p_worse(keys["mean"], keys["last2avg"], "stsb", "test") > 0.05


def test_csv_and_json_hold_the_interval_and_std_spread_shows_the_std(store):
    built = build_table(TABLE, index_results(all_results(store)), spread="std")
    line = next(r for r in csv.DictReader(io.StringIO(to_csv(built))) if r["row"] == "TSDAE"
                and r["column"] == "stsb")
    assert float(line["ci_low"]) < float(line["mean"]) < float(line["ci_high"])
    cell = next(r for r in to_json(built, None)["rows"] if r["label"] == "TSDAE")["cells"]["stsb"]
    assert cell["ci"] == [float(line["ci_low"]), float(line["ci_high"])]
    tsdae = _rows(built)["TSDAE"].cells["stsb"]
    assert f"{tsdae.mean:.2f} ± {tsdae.std:.2f}" in to_markdown(grid_of(built))
    assert any(n.startswith("± is the sample std over seeds (the 95% percentile bootstrap interval") for n in built.notes)


def test_a_row_without_items_leaves_its_column_bold_by_value_and_says_why(store):
    save(store, "base__minilm__ffff6666__s0", "base", "first_last_avg", 0, 0.9, task="stsb", items=False)
    built = build_table(TABLE, index_results(all_results(store)))
    assert _rows(built)["minilm (first_last_avg)"].cells["stsb"].ci is None
    notes = " ".join(built.notes)
    assert "± is the sample std over seeds for 1 row(s) (minilm (first_last_avg)) without an interval: stored " \
           "without per-item outcomes" in notes
    assert "Bold by the displayed value alone (the best, ties all bold) in STSb: stored without per-item" in notes
    assert _rows(built)["minilm (mean)"].cells["twitterpara.avg"].bold  # the other columns are still tested
    stsb = {label: row.cells["stsb"] for label, row in _rows(built).items() if not row.cells["stsb"].missing}
    best = max(round(c.mean, built.decimals) for c in stsb.values())
    assert {k for k, c in stsb.items() if c.bold} == {k for k, c in stsb.items() if round(c.mean, 2) == best}


def test_report_compare_pairs_over_items_and_seeds(store, tmp_path):
    built = build_table(TABLE, index_results(all_results(store)))
    lines = paired_lines(built, "tsdae", "simcse", TableStats(index_results(all_results(store))))
    line = next(x for x in lines if "TwitterP. Avg." in x)
    assert line.startswith("TSDAE (A) vs SimCSE (B), TwitterP. Avg.: B − A +")
    assert "paired bootstrap test (two-level) over items and seeds" in line and "Holm over 4 column(s)" in line


def test_a_delta_to_a_published_number_says_it_has_no_interval(store, tmp_path):
    (section,) = build_sections(all_results(store), ReportOptions(results_dir=store, tables=("sts-table",)))
    assert "A Δ has no interval: the paper's side has no per-item outcomes" in section.comparison.notes[0]


def test_tables_of_configurations_give_their_score_cells_an_interval(store):
    """TSDAE App. A and Table 4 build their own rows (one per configuration): their score cells get the interval
    where the results store items (usebench.stats.table_cells.with_interval), and their notes say which."""
    from usebench.report.build import Cell
    from usebench.stats.seeds import aggregate
    from usebench.stats.table_cells import interval_note, with_interval

    found = [r for r in all_results(store) if r.task == "stsb" and r.record["run_id"].startswith("tsdae")]
    cell = with_interval(Cell.from_stats(aggregate(found, "spearman").scaled(100.0)), found, "spearman", Resampler())
    assert cell.ci[0] < cell.mean < cell.ci[1] and cell.n == 3
    assert interval_note([cell, Cell(1.0)], Resampler()).endswith("where the results store per-item outcomes (1 of 2 "
                                                                  "cells), else the sample std over seeds.")
    assert interval_note([Cell(1.0)], Resampler()).startswith("± is the sample std over seeds (no interval")
