"""Report blocks that compare rows: paired differences to a baseline row, the setting gap beside each row compared
with the paper, loss-curve markers, `--compare` that finds nothing, the writable check and the partial-data warning."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from usebench.report.make import ReportOptions
from usebench.store import iter_results
from tests.report.synthetic_results import add_result
from tests.report.synthetic_results import built_table as _built


def test_difference_to_a_baseline_row_is_paired_per_seed(tmp_path):
    """denosent-fig3: each row minus SimCSE of the same setting, seed by seed; SimCSE itself is the zero line."""
    root = tmp_path / "results"
    values = {"denosent": (0.50, 0.54, 0.58), "simcse": (0.48, 0.50, 0.52)}
    for method, per_seed in values.items():
        for seed, v in enumerate(per_seed):
            add_result(root, method, seed, "mteb:SciDocsRR", {"map_at_1000": v, "mrr_at_10": v})
    add_result(root, "tsdae", 0, "mteb:SciDocsRR", {"map_at_1000": 0.9, "mrr_at_10": 0.9})  # ran with seed 0 only
    b = _built(root, "denosent-fig3")
    assert {r.key.method for r in b.rows} == {"denosent", "tsdae"}  # no SimCSE row: it is the zero line
    # the figure plots MRR and MAP differences (the paper: "We report the mean MRR@1 and MAP@1"), not nDCG
    assert [(c.group, c.header, c.metric) for c in b.columns if c.task == "mteb:SciDocsRR"] == [
        ("SciD", "MAP", "map_at_1000"), ("SciD", "MRR@10", "mrr_at_10")]
    assert [c.metric for c in b.columns if c.task == "mteb:QuoraRetrieval"] == ["map_at_1", "mrr_at_1"]
    deno = next(r for r in b.rows if r.key.method == "denosent").cells["mteb.SciDocsRR.map"]
    assert deno.mean == pytest.approx(4.0) and deno.n == 3  # (2 + 4 + 6) / 3 points
    assert deno.std == pytest.approx(2.0)
    tsdae = next(r for r in b.rows if r.key.method == "tsdae").cells["mteb.SciDocsRR.map"]
    assert tsdae.mean == pytest.approx(42.0) and tsdae.n == 1
    assert any("differences to simcse" in n for n in b.notes)
    assert _built(root, "denosent-table2").rows == ()  # no classification result: no row


# --- issue 14, item 14: the setting gap beside each compared row, markers, --compare that finds nothing ---------

def test_the_vs_paper_block_states_each_rows_setting_gap(tmp_path, monkeypatch):
    """A run of the published row's setting (by content) is compared with it, with the table's setting beside it;
    one that is not (a MiniLM smoke run) is shown without a published neighbour, with the exact keys that differ."""
    from usebench.report.make import build_sections
    from tests.report.genuine import (BERT, UNTRAINED_SCORING, add_trained, corpus_entry, data_root, pin_releases,
                                      stage_config)

    data, store = data_root(tmp_path / "data"), tmp_path / "results"
    pin_releases(monkeypatch, data)
    minilm = {"model": "minilm", "config_sha256": "1" * 64, "weights_sha256": {"model.safetensors": "2" * 64}}
    for cfg, backbone in ((stage_config("tsdae", "smoke"), minilm), (stage_config("tsdae"), BERT)):
        for seed in range(2):
            add_trained(store, "tsdae", seed, "askubuntu", {"map": 0.5}, config=cfg, backbone=backbone,
                        corpus=corpus_entry(data, "askubuntu"), preset="smoke" if backbone is minilm else "paper")
    add_result(store, "base", 0, "askubuntu", {"map": 0.48}, pooling="mean", scorer=UNTRAINED_SCORING["scorer"],
               config=UNTRAINED_SCORING["config"], method_extra={"backbone": BERT, **UNTRAINED_SCORING["method"]})
    (section, *_) = build_sections(list(iter_results(store)), ReportOptions(results_dir=store, data_root=data,
                                                                            tables=("paper-table2",)))
    notes = section.comparison.notes
    tsdae = next(n for n in notes if n.startswith("Setting of TSDAE"))
    assert "vs TSDAE Table 2 TSDAE: the same setting by content" in tsdae
    assert "Ours: bert-base-uncased; 100000 steps at batch 8; corpus each task's own unlabeled sentences (in-domain) " \
           "(2 sent.)" in tsdae
    assert "Paper: bert-base-uncased; 100K steps at batch 8 (App. B); corpus the task's own unlabeled" in tsdae
    smoke = next(n for n in notes if n.startswith("No published neighbour for TSDAE · minilm"))
    assert "TSDAE Table 2 TSDAE differs in backbone: ours was fingerprinted by an older usebench" in smoke
    every = dict(dict(section.comparison.unpaired)["TSDAE · minilm"])["TSDAE Table 2 TSDAE"]
    assert "max_steps: ours 200, paper 100000" in every and "max_length: ours 64, paper 128" in every
    assert [(r.key.model, e.label) for r, e in section.comparison.rows] == [("bert-base-uncased", "TSDAE"),
                                                                             ("bert-base-uncased", "BERT-base-uncased")]
    base = next(n for n in notes if n.startswith("Setting of ") and "BERT-base-uncased:" in n)
    assert "the same setting by content" in base and "Ours: bert-base-uncased; no training" in base


def test_loss_curves_with_one_point_per_run_draw_markers(tmp_path):
    from matplotlib.figure import Figure

    from usebench.report.plots import draw_loss_curves

    ax = Figure().add_subplot()
    rec = {"method": {"name": "simcse"}, "seed": 0}
    draw_loss_curves(ax, [(tmp_path / "a" / "log.jsonl", rec, [(12, 0.7)]),
                          (tmp_path / "b" / "log.jsonl", rec, [(s, 1.0 / s) for s in range(1, 200)])])
    assert ax.lines[0].get_marker() == "o"  # a single point is visible
    assert ax.lines[1].get_marker() in ("None", None, "")  # a dense curve stays a line


def test_compare_explains_why_there_is_nothing_to_compare(store, tmp_path):
    from usebench.cli.main import main

    out = tmp_path / "o"
    res = CliRunner().invoke(main, ["report", "--results-dir", str(store), "--out", str(out), "--table",
                                    "paper-table2", "--compare", "tsdae,consert", "--no-plots", "--format", "md"])
    assert res.exit_code == 0
    assert "--compare tsdae,consert: nothing to compare in paper-table2: no results of method 'consert' in its " \
           "columns (methods with results here: base, ct, mlm, sbert-supervised, simcse, tsdae)" in res.output
    add_result(store, "consert", 0, "askubuntu", {"map": 0.5}, model="distilbert-base-uncased")
    res = CliRunner().invoke(main, ["report", "--results-dir", str(store), "--out", str(out), "--table",
                                    "paper-table2", "--compare", "tsdae,consert", "--no-plots", "--format", "md"])
    assert "pairs need the same block, base model, training corpus and corpus size, and none match" in res.output
    assert "model distilbert-base-uncased" in res.output and "model bert-base-uncased" in res.output


def test_report_out_must_be_writable_before_anything_is_read(tmp_path, monkeypatch):
    import usebench.report.make as make
    from usebench.cli.main import main

    monkeypatch.setattr(make, "all_results", lambda d: pytest.fail("the store was read"))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = CliRunner().invoke(main, ["report", "--results-dir", str(tmp_path), "--out", str(blocker / "reports")])
    assert res.exit_code == 2 and f"report folder {blocker / 'reports'} is not writable" in res.output
    assert "--out" in res.output


def test_report_warns_about_results_made_with_allow_partial(store, tmp_path):
    from usebench.cli.main import main

    path = next(store.glob("tsdae__*/askubuntu/test.json"))
    record = json.loads(path.read_text())
    record["task"]["partial"] = True
    path.write_text(json.dumps(record))
    res = CliRunner().invoke(main, ["report", "--results-dir", str(store), "--out", str(tmp_path / "o"),
                                    "--no-plots", "--format", "md"])
    assert res.exit_code == 0 and "warning: 1 of them were evaluated with --allow-partial" in res.output
    assert str(path) in res.output
