"""Issue 29's report items: a table's skeleton is the paper's (blocks, rows and columns in its order, a "—" row
with the reason for each row not made, slot by slot status for `bench reproduce`), the dagger on TSDAE's cells
only, a supervised checkpoint scored by `bench eval` never filed as unsupervised, Table 2 without blocks the paper
does not have, Fig. 2's unsupervised line, and the thesis and DenoSent figures in their own settings."""
from __future__ import annotations

import csv

import pytest

from usebench.report.build import build_table
from usebench.report.make import ReportOptions, make_report
from usebench.report.reference import entries
from usebench.stats.table_rows import LABELED_STAGES, index_results
from usebench.report.skeleton import NOT_IN_PAPER, build_with_skeleton, table_status
from usebench.stats.table_specs import TABLES
from usebench.store import iter_results
from tests.report.synthetic_results import add_result, add_useb
from tests.report.test_thesis_report import _add, _thesis_simcse

NLI_STS = "sbert-nli>sbert-stsb"


def _index(root):
    return index_results(iter_results(root))


def test_table2_is_laid_out_on_the_papers_rows_and_blocks(tmp_path):
    root = tmp_path / "results"
    add_useb(root, "tsdae", 0, 0.60, 0.14, (0.76, 0.70), (0.72,) * 4)
    add_useb(root, "ct", 0, 0.55, 0.12, (0.75, 0.70), (0.70,) * 4)
    add_useb(root, "consert", 0, 0.50, 0.10, (0.70, 0.65), (0.68,) * 4)  # no row of Table 2
    built = build_with_skeleton(TABLES.get("paper-table2"), _index(root))
    published = entries("tsdae-table2")
    slotted = [r for r in built.rows if r.slot is not None]
    assert [(r.block, r.label) for r in slotted] == [(e.block, e.label) for e in published]  # the paper's order
    assert [c.id for c in built.columns] == load_columns("tsdae-table2")
    tsdae = next(r for r in slotted if r.label == "TSDAE" and r.block.startswith("Unsupervised"))
    assert tsdae.key is not None and tsdae.cells["askubuntu"].mean == pytest.approx(60.0)
    mlm = next(r for r in slotted if r.label == "MLM" and r.block.startswith("Unsupervised"))
    assert mlm.key is None and all(c.missing for c in mlm.cells.values())
    assert mlm.note == "no results of mlm on bert-base-uncased in the unsupervised setting in this store"  # issue 53
    (extra,) = [r for r in built.rows if r.slot is None]
    assert extra.key.method == "consert" and extra.block.endswith("(not in the paper's table)")
    assert any("USE-large: cannot be made here" in n for n in built.notes)


def load_columns(table_id):
    from usebench.report.reference import load_reference

    return load_reference()["tables"][table_id]["columns"]


def test_table_status_says_slot_by_slot_what_was_made_and_why_not(tmp_path):
    root = tmp_path / "results"
    add_useb(root, "tsdae", 0, 0.60, 0.14, (0.76, 0.70), (0.72,) * 4)
    add_result(root, "ct", 0, "askubuntu", {"map": 0.5})  # three tasks missing
    status = {(s.block, s.label): s for s in table_status("paper-table2", _index(root))}
    assert len(status) == len(entries("tsdae-table2"))
    assert status["Unsupervised learning based on BERT-base", "TSDAE"].made
    ct = status["Unsupervised learning based on BERT-base", "CT"]
    assert not ct.made and not ct.never and ct.reason.startswith("no results for ") and "CQADup." in ct.reason
    use = status["Out-of-the-box supervised pre-trained models", "USE-large"]
    assert use.never and not use.made and "cannot be made here" in use.reason
    assert table_status("protocols", _index(root)) == []  # no published skeleton: nothing to report


def test_rows_of_one_method_are_told_apart_by_what_the_table_varies(tmp_path):
    """Thesis Table 5.9 has two SimCSE rows, NT-Xent and BCE: each run goes to the row of its loss."""
    root = tmp_path / "results"
    for loss, v in (("nt_xent", 0.70), ("bce", 0.60)):
        _add(root, "simcse", 1, "stsb", {"spearman": v}, main="spearman", config=_thesis_simcse(loss),
             variant=f"thesis + loss={loss}" if loss == "bce" else "thesis")
    built = build_with_skeleton(TABLES.get("thesis-table5.9"), _index(root))
    by_label = {r.label.split(" · ")[0]: r for r in built.rows if r.key is not None}
    assert by_label["SimCSE NT-Xent"].cells["stsb"].mean == pytest.approx(70.0)
    assert by_label["SimCSE BCE"].cells["stsb"].mean == pytest.approx(60.0)


def test_the_dagger_marks_tsdae_cells_only(tmp_path):
    """The paper: "cases where TSDAE outperforms both CT and SimCSE in all 5 runs"; MLM beating both is no †."""
    root = tmp_path / "results"
    for seed in (0, 1):
        add_useb(root, "tsdae", seed, 0.60 + seed / 100, 0.14, (0.76, 0.70), (0.72,) * 4)
        add_useb(root, "mlm", seed, 0.70 + seed / 100, 0.16, (0.80, 0.75), (0.80,) * 4)
        add_useb(root, "ct", seed, 0.50, 0.10, (0.70, 0.60), (0.60,) * 4)
        add_useb(root, "simcse", seed, 0.50, 0.10, (0.70, 0.60), (0.60,) * 4)
    built = build_table(TABLES.get("paper-table2"), _index(root))
    rows = {r.key.method: r for r in built.rows}
    assert rows["tsdae"].cells["askubuntu"].dagger
    assert not any(c.dagger for c in rows["mlm"].cells.values())


def test_a_supervised_checkpoint_scored_by_bench_eval_is_not_unsupervised(tmp_path):
    root = tmp_path / "results"
    add_useb(root, "tsdae", 0, 0.60, 0.14, (0.76, 0.70), (0.72,) * 4)
    add_useb(root, "sbert-cosine", 0, 0.90, 0.30, (0.90, 0.90), (0.90,) * 4)  # bench eval: no setting recorded
    index = _index(root)
    table2 = build_table(TABLES.get("paper-table2"), index)
    assert [r.key.method for r in table2.rows] == ["tsdae"]
    assert table2.rows[0].cells["askubuntu"].bold  # the supervised checkpoint takes no bold from it
    (other,) = build_table(TABLES.get("useb-other-chains"), index).rows
    assert other.key.group == "other-supervised" and other.upper_bound and not other.cells["askubuntu"].bold


def test_labeled_stages_are_the_registrys_labeled_methods():
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS

    # nli-sts is the alias of the NLI and STSb stages (usebench.plan.settings.CHAIN_ALIASES)
    assert LABELED_STAGES - {"nli-sts"} == {n for n in METHODS.names() if METHODS.get(n).data_kind == "labeled"}


def test_table2_has_only_the_papers_blocks(tmp_path):
    root = tmp_path / "results"
    add_useb(root, "tsdae", 0, 0.60, 0.14, (0.76, 0.70), (0.72,) * 4)
    add_useb(root, f"tsdae>{NLI_STS}>sbert-mnrl", 0, 0.70, 0.2, (0.8, 0.7), (0.8,) * 4, setting="other-supervised")
    add_useb(root, "tsdae>sbert-mnrl", 0, 0.70, 0.2, (0.8, 0.7), (0.8,) * 4, setting="pretraining",
             config={"labeled_size": 100})
    built = build_with_skeleton(TABLES.get("paper-table2"), _index(root))
    paper_blocks = list(dict.fromkeys(e.block for e in entries("tsdae-table2")))
    assert list(dict.fromkeys(r.block for r in built.rows)) == paper_blocks
    other = build_table(TABLES.get("useb-other-chains"), _index(root))
    assert {r.key.group for r in other.rows} == {"other-supervised", "pretraining"}


def test_fig2_draws_each_unsupervised_method_on_the_curves_split(tmp_path):
    root = tmp_path / "results"
    for seed in (0, 1):
        for method in ("sbert-mnrl", "tsdae>sbert-mnrl"):
            add_result(root, method, seed, "askubuntu", {"map": 0.6}, split="dev", setting="pretraining",
                       config={"labeled_size": 100})
        add_result(root, "tsdae", seed, "askubuntu", {"map": 0.55 + seed / 100}, split="dev")
        add_result(root, "tsdae", seed, "askubuntu", {"map": 0.99}, split="test")  # not the curve's split
    make_report(ReportOptions(results_dir=root, out=tmp_path / "out", tables=("paper-table2",), formats=("md",)))
    with (tmp_path / "out/plots/pretraining.csv").open() as fh:
        lines = list(csv.DictReader(fh))
    (flat,) = [r for r in lines if r["pretraining"] == "tsdae (unsupervised)"]
    assert flat["split"] == "dev" and float(flat["mean"]) == pytest.approx(55.5) and flat["n"] == "2"


def test_thesis_figures_plot_their_setting_and_the_sweep_splits_losses(tmp_path):
    """Figs. 5.3/5.4 plot SimCSE NT-Xent only; the alpha sweep keeps an NT-Xent and a BCE run apart."""
    res = tmp_path / "results"
    for loss, base in (("nt_xent", 0.5), ("bce", 0.3)):
        variant = "thesis" if loss == "nt_xent" else "thesis + loss=bce"
        scores = {f"{m}@{k}": base for m in ("recall", "p") for k in (1, 3, 5, 10, 100, 1000)}
        _add(res, "simcse", 1, "quora", {**scores, "ndcg@10": 0.5}, main="ndcg@10", config=_thesis_simcse(loss),
             variant=variant)
        sweep = {f"none/alpha={a:g}": {"recall@10": base + a / 1000, "p@10": 0.1} for a in (0, 20)}
        _add(res, "simcse", 1, "bm25-pyserini-a20+quora", {"ndcg@10": 0.4, "recall@10": base, "p@10": 0.1},
             main="ndcg@10", config=_thesis_simcse(loss), variant=variant, subsets=sweep)
    _add(res, "base", 0, "quora", {f"{m}@{k}": 0.2 for m in ("recall", "p") for k in (1, 3, 5, 10, 100, 1000)}
         | {"ndcg@10": 0.2},
         main="ndcg@10", config={"method": "base"})
    make_report(ReportOptions(results_dir=res, out=tmp_path / "out", tables=("thesis-fig5.3",), formats=("md",)))
    with (tmp_path / "out/plots/thesis-fig5.3.csv").open() as fh:
        curves = {r["row"] for r in csv.DictReader(fh)}
    assert len(curves) == 1 and "bce" not in next(iter(curves)).lower()
    with (tmp_path / "out/plots/thesis-alpha.csv").open() as fh:
        sweep_rows = {r["row"] for r in csv.DictReader(fh)}
    assert len(sweep_rows) == 2 and any("loss=bce" in r for r in sweep_rows)


def test_the_reasons_no_row_is_beside_the_paper_are_written(tmp_path):
    """When no row pairs, the keys that differ were in no output; now in the Markdown and the JSON."""
    import json

    root = tmp_path / "results"
    add_useb(root, "tsdae", 0, 0.60, 0.14, (0.76, 0.70), (0.72,) * 4, model="minilm")
    make_report(ReportOptions(results_dir=root, out=tmp_path / "out", tables=("paper-table2",),
                              formats=("md", "csv"), plots=False))
    md = (tmp_path / "out/paper-table2.md").read_text()
    assert "Not beside the published numbers" in md and "No published neighbour for TSDAE" in md
    data = json.loads((tmp_path / "out/paper-table2.json").read_text())
    assert any(n.startswith("No published neighbour for TSDAE") for n in data["paper_notes"])
    assert any(r.get("not_made") == "no results of mlm on bert-base-uncased in the unsupervised setting in this store"
               for r in data["rows"])  # issue 53: the reason names the backbone the slot waits for
    # issue 53: a TSDAE run from MiniLM is no row of the paper's BERT-base block: it stands below, saying so
    tsdae = next(r for r in data["rows"] if r["label"].startswith("TSDAE") and r.get("key"))
    assert tsdae["block"] == "Unsupervised learning · on minilm, not bert-base-uncased (not in the paper's table)"


def test_denosent_tables_have_their_published_numbers(tmp_path):
    """DenoSent Table 2 and Figure 3's numbers (the authors' paper.pdf and appendix.pdf): Fig. 3 as the bars it
    draws, each row minus SimCSE's."""
    from usebench.report.reference import load_reference

    fig = load_reference()["tables"]["denosent-fig3"]
    deno = next(r for r in fig["rows"] if r["label"] == "DenoSent (back-translation)")
    assert "SimCSE" not in [r["label"] for r in fig["rows"]] and deno["match"] == {"method": "denosent"}
    assert fig["columns"] == list(TABLES.get("denosent-fig3").columns)  # MindSmall's MRR@10 too (issue 39)
    table2 = load_reference()["tables"]["denosent-table2"]
    assert table2["columns"] == list(TABLES.get("denosent-table2").columns)


def test_untrained_rows_and_corpora_go_to_the_slot_of_their_kind(tmp_path):
    """An untrained row of the table's backbone slot takes a run's own backbone (marked); a published checkpoint's
    slot takes only that checkpoint; Table 11's TSDAE (Wikipedia sentences) takes no row trained on a target's own
    sentences and scored on STS."""
    root = tmp_path / "results"
    add_result(root, "base", 0, "stsb", {"spearman": 0.5}, model="/models/tiny-bert", pooling="mean")
    add_result(root, "tsdae", 0, "stsb", {"spearman": 0.6}, train_corpus="askubuntu",  # in-domain, scored on STSb
               config={"corpus": {"label": "askubuntu"}})
    add_result(root, "tsdae", 0, "stsb", {"spearman": 0.7}, train_corpus="file:wiki-sentences.txt",
               config={"corpus": {"label": "file:wiki-sentences.txt"}})
    built = build_with_skeleton(TABLES.get("specific-vs-sts"), _index(root))
    sbert = next(r for r in built.rows if r.label == "SBERT-base-nli-v2")
    assert sbert.key is None  # the tiny BERT is not SBERT-base-nli-v2
    tsdae = [r for r in built.rows if r.slot is not None and r.label.startswith("TSDAE")]
    assert [r.key.corpus for r in tsdae] == ["file:wiki-sentences.txt"]
    assert any(r.key and r.key.corpus == "askubuntu" and r.slot is None for r in built.rows)
    deno = build_with_skeleton(TABLES.get("denosent-table1"), _index(root))
    # issue 53: before, the tiny BERT stood in the BERT-base slot ("BERTbase (Mean) · tiny-bert"); a row stands in a
    # paper's slot only when its backbone is the slot's, so the slot waits and the row is below, not the paper's
    mean = next(r for r in deno.rows if r.label.startswith("BERTbase (Mean)"))
    assert mean.key is None and "ours: tiny-bert, below, not in the paper's table" in mean.note
    (tiny,) = [r for r in deno.rows if r.key is not None and r.key.method == "base"]
    assert tiny.slot is None and tiny.block.endswith(NOT_IN_PAPER)
