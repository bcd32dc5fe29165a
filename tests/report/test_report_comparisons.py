"""Report blocks that compare rows: paired differences to a baseline row, the setting gap beside each row compared
with the paper, loss-curve markers, `--compare` that finds nothing, the writable check and the partial-data warning."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from benchmark.report.make import ReportOptions
from benchmark.results import iter_results
from tests.report.synthetic_results import add_result
from tests.report.synthetic_results import built_table as _built


def test_difference_to_a_baseline_row_is_paired_per_seed(tmp_path):
    """denosent-fig3: each row minus SimCSE of the same setting, seed by seed; SimCSE itself is the zero line."""
    root = tmp_path / "results"
    values = {"denosent": (0.50, 0.54, 0.58), "simcse": (0.48, 0.50, 0.52)}
    for method, per_seed in values.items():
        for seed, v in enumerate(per_seed):
            add_result(root, method, seed, "mteb:SciDocsRR", {"map_at_1000": v})
    add_result(root, "tsdae", 0, "mteb:SciDocsRR", {"map_at_1000": 0.9})  # ran with seed 0 only
    b = _built(root, "denosent-fig3")
    assert {r.key.method for r in b.rows} == {"denosent", "tsdae"}  # no SimCSE row: it is the zero line
    deno = next(r for r in b.rows if r.key.method == "denosent").cells["mteb.SciDocsRR"]
    assert deno.mean == pytest.approx(4.0) and deno.n == 3  # (2 + 4 + 6) / 3 points
    assert deno.std == pytest.approx(2.0)
    tsdae = next(r for r in b.rows if r.key.method == "tsdae").cells["mteb.SciDocsRR"]
    assert tsdae.mean == pytest.approx(42.0) and tsdae.n == 1
    assert any("differences to simcse" in n for n in b.notes)
    assert _built(root, "denosent-table2").rows == ()  # no classification result: no row


# --- issue 14, item 14: the setting gap beside each compared row, markers, --compare that finds nothing ---------

def test_the_vs_paper_block_states_each_rows_setting_gap(tmp_path):
    """A run that meets a published row's settings is compared with it, with the table's setting beside it; one
    that does not (a MiniLM smoke run) is shown without a published neighbour, saying which settings differ."""
    from benchmark.report.make import build_sections

    for model, preset, steps, amp in (("minilm", "smoke", 200, "off"), ("bert-base-uncased", "paper", 100_000, "off")):
        train = {"preset": preset, "config": {"max_steps": steps, "batch_size": 8, "amp": amp}}
        for seed in range(2):
            for task in ("askubuntu", "twitterpara"):
                scores = {"map": 0.5} if task == "askubuntu" else {"ap_twitterurl": 0.7, "ap_pit": 0.6, "ap_avg": 0.65}
                add_result(tmp_path, "tsdae", seed, task, scores, model=model, train_corpus=task,
                           config={**train, "corpus": {"label": task, "sentences": {"askubuntu": 1000}.get(task, 500)}})
    add_result(tmp_path, "base", 0, "askubuntu", {"map": 0.48}, pooling="mean")
    (section, *_) = build_sections(list(iter_results(tmp_path)), ReportOptions(results_dir=tmp_path,
                                                                               tables=("paper-table2",)))
    notes = section.comparison.notes
    tsdae = next(n for n in notes if n.startswith("Setting of TSDAE"))
    assert "vs TSDAE Table 2 TSDAE: no gap detected in backbone or steps" in tsdae
    assert "Ours: bert-base-uncased; 100000 steps at batch 8; corpus each task's own unlabeled sentences (in-domain) " \
           "(500, 1,000 sent.)" in tsdae
    assert "Paper: bert-base-uncased; 100K steps at batch 8 (App. B); corpus the task's own unlabeled" in tsdae
    smoke = next(n for n in notes if n.startswith("No published neighbour for TSDAE · minilm"))
    assert "TSDAE Table 2 TSDAE assumes backbone bert-base-uncased (ours: minilm), preset paper (ours: smoke)" in smoke
    assert [r.label for r, _ in section.comparison.rows] == ["TSDAE · bert-base-uncased", "bert-base-uncased (mean)"]
    base = next(n for n in notes if n.startswith("Setting of bert-base-uncased (mean)"))
    assert "no gap detected" in base and "Ours: bert-base-uncased; no training" in base


def test_loss_curves_with_one_point_per_run_draw_markers(tmp_path):
    from matplotlib.figure import Figure

    from benchmark.report.plots import draw_loss_curves

    ax = Figure().add_subplot()
    rec = {"method": {"name": "simcse"}, "seed": 0}
    draw_loss_curves(ax, [(tmp_path / "a" / "log.jsonl", rec, [(12, 0.7)]),
                          (tmp_path / "b" / "log.jsonl", rec, [(s, 1.0 / s) for s in range(1, 200)])])
    assert ax.lines[0].get_marker() == "o"  # a single point is visible
    assert ax.lines[1].get_marker() in ("None", None, "")  # a dense curve stays a line


def test_compare_explains_why_there_is_nothing_to_compare(store, tmp_path):
    from benchmark.cli.main import main

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
    import benchmark.report.make as make
    from benchmark.cli.main import main

    monkeypatch.setattr(make, "iter_results", lambda d: pytest.fail("the store was read"))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = CliRunner().invoke(main, ["report", "--results-dir", str(tmp_path), "--out", str(blocker / "reports")])
    assert res.exit_code == 2 and f"report folder {blocker / 'reports'} is not writable" in res.output
    assert "--out" in res.output


def test_report_warns_about_results_made_with_allow_partial(store, tmp_path):
    from benchmark.cli.main import main

    path = next(store.glob("tsdae__*/askubuntu/test.json"))
    record = json.loads(path.read_text())
    record["task"]["partial"] = True
    path.write_text(json.dumps(record))
    res = CliRunner().invoke(main, ["report", "--results-dir", str(store), "--out", str(tmp_path / "o"),
                                    "--no-plots", "--format", "md"])
    assert res.exit_code == 0 and "warning: 1 of them were evaluated with --allow-partial" in res.output
    assert str(path) in res.output
