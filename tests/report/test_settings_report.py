"""The TSDAE paper's other settings in the report: domain-adaptation blocks (both orders) from chain results,
the in-domain upper bound across losses, out-of-the-box and bag-of-words rows, the pre-training figure and the
Table 10 break-even, and `bench report --list`. Records have the shapes the run grid writes."""
from __future__ import annotations

import csv

import pytest
from click.testing import CliRunner

from usebench.report.build import build_table
from usebench.report.make import ReportOptions, make_report
from usebench.report.pretraining import break_even, curve_points, search
from usebench.report.reference import entries, matches
from usebench.stats.table_rows import index_results
from usebench.stats.table_specs import TABLES
from usebench.store import iter_results
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
    # every block has its published counterparts (which rows a published row is about; pairing is by content)
    matched = {(r.block, e.label, e.block) for r in built.rows if r.key for e in entries("tsdae-table2")
               if matches(e, r.key)}
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
    curve = [ln for ln in lines if ln["labeled_size"] != "0"]
    assert len(curve) == 6 and {ln["pretraining"] for ln in curve} == {"sbert", "tsdae"}
    (level,) = [ln for ln in lines if ln["labeled_size"] == "0"]  # TSDAE unsupervised, drawn as a dashed level
    assert level["pretraining"] == "tsdae (unsupervised)" and float(level["mean"]) == pytest.approx(75.0)


def test_binary_search_steps():
    """The paper's search: within the target's std is the answer; otherwise bracket and bisect."""
    assert search([(500, 70.0), (2000, 74.5)], 75.0, 0.7) == (2000, None, None, None)
    assert search([(500, 70.0), (2000, 72.0)], 75.0, 0.7) == (None, 2000, None, 4000)
    assert search([(500, 78.0), (2000, 80.0)], 75.0, 0.7) == (None, None, 500, 250)
    assert search([(500, 70.0), (1000, 76.0), (2000, 80.0)], 75.0, 0.0) == (None, 500, 1000, 750)


def test_report_list():
    from usebench.cli.main import main

    out = CliRunner().invoke(main, ["report", "--list"])
    assert out.exit_code == 0
    for name in ("paper-table2", "sts-table", "specific-vs-sts", "pretraining", "pretraining-breakeven",
                 "corpus-size", "loss-curves"):
        assert f"{name}  (" in out.output
    assert "--labeled-sizes" in out.output and "--setting" in out.output


def test_the_pretraining_figure_says_which_split_each_panel_reads(tmp_path):
    """Fig. 2 is scored on the dev sets; TwitterPara has none and is read on test. Every curve of a panel reads
    the same split, and the figure's title and caption say which."""
    from usebench.report.pretraining import splits_caption

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


# --- issue 28, item 7: the setting notes say what each side trained on ------------------------------------------

def test_chain_rows_state_each_stages_budget_and_data(tmp_path):
    """Before: "steps not recorded; corpus not recorded" for every chain (its stages hold the configs)."""
    from usebench.report.reference import our_settings
    from tests.report.genuine import stage_config

    stages = [{"method": m, "preset": "paper", "config": stage_config(m), "data": d} for m, d in (
        ("tsdae", {"kind": "corpus", "label": "askubuntu", "sha256": "1" * 64, "sentences": 3}),
        ("sbert-nli", {"kind": "labeled", "label": "allnli", "sha256": "2" * 64, "examples": 9}),
        ("sbert-stsb", {"kind": "labeled", "label": "stsb:train", "sha256": "3" * 64, "examples": 9}))]
    chain = {"method": "tsdae>sbert-nli>sbert-stsb", "chain": [s["method"] for s in stages], "stages": stages}
    add_result(tmp_path, "tsdae>sbert-nli>sbert-stsb", 0, "askubuntu", {"map": 0.6}, setting="adapt-target-first",
               train_corpus="askubuntu", config=chain)
    (setting,) = our_settings(index_results(iter_results(tmp_path))).values()
    assert setting.steps == "tsdae: 100000 steps at batch 8; sbert-nli: 1 epoch at batch 128; sbert-stsb: 4 epochs " \
                            "at batch 16"
    assert setting.corpus == ("tsdae: each task's own unlabeled sentences (in-domain) > sbert-nli: allnli > "
                              "sbert-stsb: stsb:train (3 sent.)")


def test_the_papers_setting_prose_of_the_adaptation_blocks_the_upper_bound_and_bm25():
    from usebench.report.reference import paper_setting
    from usebench.stats.table_rows import RowKey

    rows = {(e.match or {}).get("group", (e.match or {}).get("method")): e for e in entries("tsdae-table2")}
    nli_first = paper_setting(rows["adapt-nli-first"], RowKey("adapt-nli-first", "tsdae", "bert-base-uncased", "cls"))
    assert nli_first.corpus.startswith("NLI+STS (supervised), then")  # before: the unsupervised default
    target_first = paper_setting(rows["adapt-target-first"], RowKey("adapt-target-first", "tsdae", "m", "cls"))
    assert target_first.corpus.startswith("the task's own unlabeled sentences, then NLI+STS")
    upper = paper_setting(rows["supervised"], RowKey("supervised", "sbert-supervised", "m", "mean"))
    assert "labeled training pairs" in upper.corpus  # before: "unlabeled training sentences"
    bm25 = paper_setting(rows["bm25"], RowKey("baselines", "bm25", "bm25", "none"))
    assert bm25.backbone == "none (lexical)"  # before: "differs in backbone" (not stated vs bm25)


def test_bm25_pairs_by_its_scoring_parameters(tmp_path):
    from usebench.eval.bm25 import bm25_method
    from usebench.report.make import build_sections

    for name in ("bm25-elasticsearch", "bm25-anserini"):
        _, method, config = bm25_method(name)
        add_result(tmp_path / name, "bm25", 0, "askubuntu", {"map": 0.53}, model=name, pooling="none",
                   config=config)
    got = {}
    for name in ("bm25-elasticsearch", "bm25-anserini"):
        (section,) = build_sections(list(iter_results(tmp_path / name)), ReportOptions(
            results_dir=tmp_path / name, tables=("paper-table2",), data_root=tmp_path))
        got[name] = ([e.label for _, e in section.comparison.rows], section.comparison.notes)
    assert got["bm25-elasticsearch"][0] == ["BM25"]  # Elasticsearch's defaults, as the paper's row
    assert got["bm25-anserini"][0] == []
    assert any("k1: ours 0.9, paper 1.2" in n for n in got["bm25-anserini"][1])
    line = next(n for n in got["bm25-elasticsearch"][1] if n.startswith("Setting of"))
    assert "Ours: none (lexical)" in line and "Paper: none (lexical)" in line


def test_break_even_prints_the_papers_number_only_beside_the_tasks_own_labeled_data(tmp_path):
    """Before: Table 10's 6,067 stood beside a TwitterPara curve trained on the Twitter URL stand-in."""
    from usebench.report.pretraining import break_even_markdown

    for seed, v in enumerate((0.70, 0.72)):
        for size, shift in ((500, 0.0), (8000, 0.1)):
            stages = [{"method": "sbert-cosine", "preset": "paper", "config": {},
                       "data": {"kind": "labeled", "label": "twitter-url", "examples": 42200}}]
            add_result(tmp_path, "sbert-cosine", seed, "twitterpara",
                       {"ap_twitterurl": v + shift, "ap_pit": v + shift, "ap_avg": v + shift}, setting="pretraining",
                       config={"labeled_size": size, "stages": stages}, train_corpus="twitter-url")
        add_result(tmp_path, "tsdae", seed, "twitterpara", {"ap_twitterurl": 0.75, "ap_pit": 0.75, "ap_avg": 0.75})
    rows = break_even(index_results(iter_results(tmp_path)))
    md = break_even_markdown(rows, {"twitterpara.avg": 6067})
    assert "6,067" not in md and "— (ours trained on twitter-url)" in md
