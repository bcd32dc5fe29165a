"""The TSDAE paper's other settings in the report: domain-adaptation blocks (both orders) from chain results,
the in-domain upper bound across losses, out-of-the-box and bag-of-words rows, the pre-training figure and the
Table 10 break-even, and `bench report --list`. Records have the shapes the run grid writes."""
from __future__ import annotations

import csv

import pytest
from click.testing import CliRunner

from benchmark.report.build import build_table
from benchmark.report.make import ReportOptions, make_report
from benchmark.report.pretraining import break_even, curve_points, search
from benchmark.report.reference import compare
from benchmark.report.rows import index_results
from benchmark.report.tables import TABLES
from benchmark.results import iter_results
from tests.report.synthetic_results import add_result, add_useb

NLI_STS = "sbert-nli>sbert-stsb"


def _table2_store(root):
    for seed, a in enumerate((0.60, 0.62)):
        add_useb(root, "tsdae", seed, a, 0.14, (0.76, 0.70), (0.72,) * 4)
        add_useb(root, f"tsdae>{NLI_STS}", seed, a + 0.01, 0.15, (0.77, 0.72), (0.76,) * 4,
                 setting="adapt-target-first")  # each target's unit is scored on its own task
        add_useb(root, f"{NLI_STS}>tsdae", seed, a - 0.01, 0.13, (0.75, 0.66), (0.73,) * 4,
                 setting="adapt-nli-first", train_corpus="allnli")
        add_result(root, "sbert-mnrl", seed, "askubuntu", {"map": 0.64}, setting="supervised",
                   train_corpus="askubuntu:supervised")
        add_result(root, "sbert-cosine", seed, "twitterpara", {"ap_twitterurl": 0.8, "ap_pit": 0.7, "ap_avg": 0.75},
                   setting="supervised", train_corpus="twitterpara:supervised")
    add_result(root, "base", 0, "askubuntu", {"map": 0.55}, model="minilm", pooling="mean",
               method_extra={"sentence_encoder": True})
    add_result(root, "wordvec", 0, "askubuntu", {"map": 0.51}, model="wordvec:/data/glove.6B.300d.txt",
               pooling="mean")
    return root


def test_table2_blocks_from_the_grid_settings(tmp_path):
    store = _table2_store(tmp_path / "results")
    built = build_table(TABLES.get("paper-table2"), index_results(iter_results(store)))
    blocks = {b: [r.label for r in rows] for b, rows in built.blocks()}
    assert blocks["Unsupervised learning"] == ["TSDAE"]
    assert blocks["Domain adaptation: NLI+STS → target task"] == ["TSDAE"]  # row named after its own stage
    assert blocks["Domain adaptation: target task → NLI+STS"] == ["TSDAE"]
    assert blocks["Out-of-the-box supervised pre-trained models"] == ["minilm (mean)"]
    assert blocks["Baselines (no training)"] == ["Avg. word vectors (glove.6B.300d.txt)"]
    upper = dict(built.blocks())["In-domain supervised training (upper bound)"]
    assert [r.label for r in upper] == ["SBERT-supervised"]  # MNRL on AskUbuntu and MSE on TwitterPara: one row
    assert upper[0].cells["askubuntu"].mean == pytest.approx(64.0)
    assert upper[0].cells["twitterpara.avg"].mean == pytest.approx(75.0) and not upper[0].cells["askubuntu"].bold
    # every block has its published counterpart beside it
    comp = compare(built, TABLES.get("paper-table2"))
    matched = {(r.block, e.label, e.block) for r, e in comp.rows}
    assert ("Domain adaptation: target task → NLI+STS", "TSDAE", "Domain adaptation: target task -> NLI+STS") in matched
    assert ("Domain adaptation: NLI+STS → target task", "TSDAE", "Domain adaptation: NLI+STS -> target task") in matched
    assert ("In-domain supervised training (upper bound)", "SBERT-supervised",
            "In-domain supervised training (upper bound)") in matched
    assert ("Baselines (no training)", "Avg. GloVe", "Other previous unsupervised approaches") in matched


def _pretraining_store(root):
    """SBERT from the backbone at 500 / 2000 / 8000 pairs, TSDAE+SBERT, and unsupervised TSDAE, on STSb dev."""
    plain = {500: (0.60, 0.62), 2000: (0.70, 0.72), 8000: (0.80, 0.82)}
    for size, values in plain.items():
        for seed, v in enumerate(values):
            add_result(root, "sbert-cosine", seed, "stsb", {"spearman": v}, split="dev", setting="pretraining",
                       config={"labeled_size": size}, train_corpus=f"stsb:train[{size}]")
            add_result(root, "tsdae>sbert-cosine", seed, "stsb", {"spearman": v + 0.05}, split="dev",
                       setting="pretraining", config={"labeled_size": size}, train_corpus="stsb")
    for seed, v in enumerate((0.745, 0.755)):
        add_result(root, "tsdae", seed, "stsb", {"spearman": v}, split="dev")
    return root


def test_pretraining_curve_and_break_even(tmp_path):
    store = _pretraining_store(tmp_path / "results")
    index = index_results(iter_results(store))
    points = {(p.method, p.size): p for p in curve_points(index)}
    assert points[("sbert", 2000)].stats.mean == pytest.approx(71.0) and points[("sbert", 2000)].split == "dev"
    assert points[("tsdae", 8000)].stats.mean == pytest.approx(86.0)
    (row,) = break_even(index)
    # TSDAE: 75.0 ± 0.707; SBERT 71 at 2,000 and 81 at 8,000 bracket it; the search's next size is 5,000.
    assert (row.target_method, row.low, row.high, row.next_size, row.found) == ("tsdae", 2000, 8000, 5000, None)
    assert row.target == pytest.approx(75.0) and row.precision == pytest.approx(0.7071, abs=1e-4)
    rep = make_report(ReportOptions(results_dir=store, out=tmp_path / "out", tables=("paper-table2",),
                                    formats=("md", "csv")))
    md = (tmp_path / "out" / "pretraining-breakeven.md").read_text()
    assert "| TSDAE | 2,000–8,000 (next: 5,000) |" in md and "paper: TSDAE (Table 10)" in md
    plot = next(p for p in rep.plots if p.name == "pretraining")
    with plot.data.open() as fh:
        lines = list(csv.DictReader(fh))
    assert len(lines) == 6 and {ln["pretraining"] for ln in lines} == {"sbert", "tsdae"}


def test_binary_search_steps():
    """The paper's search: within the target's std is the answer; otherwise bracket and bisect."""
    assert search([(500, 70.0), (2000, 74.5)], 75.0, 0.7) == (2000, None, None, None)
    assert search([(500, 70.0), (2000, 72.0)], 75.0, 0.7) == (None, 2000, None, 4000)
    assert search([(500, 78.0), (2000, 80.0)], 75.0, 0.7) == (None, None, 500, 250)
    assert search([(500, 70.0), (1000, 76.0), (2000, 80.0)], 75.0, 0.0) == (None, 500, 1000, 750)


def test_report_list():
    from benchmark.cli.main import main

    out = CliRunner().invoke(main, ["report", "--list"])
    assert out.exit_code == 0
    for name in ("paper-table2", "sts-table", "specific-vs-sts", "pretraining", "pretraining-breakeven",
                 "corpus-size", "loss-curves"):
        assert f"{name}  (" in out.output
    assert "--labeled-sizes" in out.output and "--setting" in out.output


def test_the_pretraining_figure_says_which_split_each_panel_reads(tmp_path):
    """Fig. 2 is scored on the dev sets; TwitterPara has none and is read on test. Every curve of a panel reads
    the same split, and the figure's title and caption say which."""
    from benchmark.report.pretraining import splits_caption

    root = tmp_path / "results"
    for seed in (0, 1):
        for method in ("sbert-mnrl", "tsdae>sbert-mnrl"):
            add_result(root, method, seed, "askubuntu", {"map": 0.6}, split="dev", setting="pretraining",
                       config={"labeled_size": 100})
            add_result(root, method, seed, "askubuntu", {"map": 0.5}, split="test", setting="pretraining",
                       config={"labeled_size": 100})
            add_result(root, method, seed, "stsb", {"spearman": 0.7}, split="dev", setting="pretraining",
                       config={"labeled_size": 100})
            add_result(root, method.replace("mnrl", "cosine"), seed, "twitterpara",
                       {"ap_twitterurl": 0.8, "ap_pit": 0.7, "ap_avg": 0.75}, setting="pretraining",
                       config={"labeled_size": 100})
    points = curve_points(index_results(iter_results(root)))
    assert {(p.column, p.split) for p in points} == {("askubuntu", "dev"), ("stsb", "dev"),
                                                      ("twitterpara.avg", "test")}
    assert splits_caption(points) == "scored on dev (TwitterP. Avg.: test)"
    rep = make_report(ReportOptions(results_dir=root, out=tmp_path / "out", tables=("paper-table2",),
                                    formats=("md",)))
    plot = next(p for p in rep.plots if p.name == "pretraining")
    assert "scored on dev (TwitterP. Avg.: test)" in plot.caption


def test_a_chain_of_no_paper_setting_is_its_own_block_and_never_bold(tmp_path):
    root = tmp_path / "results"
    add_useb(root, "tsdae", 0, 0.60, 0.14, (0.76, 0.70), (0.72,) * 4)
    add_useb(root, "sbert-nli>sbert-stsb", 0, 0.70, 0.20, (0.80, 0.75), (0.80,) * 4, setting="other-supervised")
    index = index_results(iter_results(root))
    built = build_table(TABLES.get("paper-table2"), index)
    blocks = dict(built.blocks())
    assert "Other chains with supervised stages (no setting of the paper)" not in blocks  # not a block of Table 2
    assert blocks["Unsupervised learning"][0].cells["askubuntu"].bold  # the unsupervised row keeps the bold mark
    other = dict(build_table(TABLES.get("useb-other-chains"), index).blocks())
    (row,) = other["Other chains with supervised stages (no setting of the paper)"]
    assert row.upper_bound and not row.cells["askubuntu"].bold
