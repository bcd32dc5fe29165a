"""The thesis' report: STS-Avg as it computes it, published rows compared only with runs of their settings, rows
per variant, the R@k / P@k curves and the alpha sweep, and `bench report --list` / `--table thesis`."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.report.build import build_table
from usebench.report.make import ReportOptions, make_report
from usebench.report.reference import compare, entries
from usebench.report.row_settings import run_settings
from usebench.stats.table_rows import index_results
from usebench.stats.table_specs import COLUMNS, TABLES
from usebench.report.pairing import PairingContext
from usebench.store import iter_results, make_record, run_id, save_result
from tests.report.synthetic_results import task_version
from tests.report.genuine import BERT as GENUINE
from tests.report.genuine import UNTRAINED_SCORING, stage_config

BERT = "bert-base-uncased"
STS6 = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb")


def _add(root: Path, method: str, seed: int, task: str, scores: dict, *, main: str, config: dict,
         variant: str = "", subsets: dict | None = None, model: str = BERT, pooling: str = "mean",
         backbone: dict | None = None) -> None:
    untrained = method == "base"  # scored as `bench eval` scores a backbone (UNTRAINED_SCORING)
    meta = {"name": method, "base_model": model, "pooling": pooling, "max_length": 512 if untrained else 128,
            **({"variant": variant} if variant else {}), **({"backbone": backbone} if backbone else {}),
            **({"train_corpus": "file:openwebtext_1m.txt"} if method != "base" else {})}
    record = make_record(run=run_id(method, model, config, seed),
                         task={"name": task, "split": "test", "group": "x", "version": task_version(task),
                               "data_sha256": f"sha-{task}",
                               "n_queries": 10},
                         method=meta, seed=seed, scores=scores, main_metric=main, subsets=subsets or {},
                         scorer=UNTRAINED_SCORING["scorer"] if untrained else {"kind": "dense"}, timings={},
                         config={**config, **UNTRAINED_SCORING["config"]} if untrained else config)
    save_result(root, record)


# The user's own samples of the thesis' unpublished OpenWebText 1M / 10k (bench report --user-sample).
OWT, OWT_DEV = "f" * 64, "9" * 64
SAMPLES = PairingContext(None, {"thesis-openwebtext-1m": OWT, "thesis-openwebtext-10k": OWT_DEV})


def _thesis_simcse(loss: str) -> dict:
    """Table 5.9's run as `bench run --preset thesis --set loss=...` records it (resolved config, corpus hashes)."""
    return {"method": "simcse", "preset": "thesis",
            "config": stage_config("simcse", "thesis", loss=loss, batch_size=64, epochs=1.0, dev_metric="loss"),
            "corpus": {"label": "file:openwebtext_1m.txt", "sha256": OWT, "sentences": 1_000_000,
                       "dev_corpus_sha256": OWT_DEV}}


def test_sts_avg_is_the_plain_mean_of_sts12_16_and_stsb(tmp_path):
    """The thesis' BERT-base baseline: 51.6 = mean of 30.87, 59.89, 47.73, 60.29, 63.73, 47.29 (issue 22)."""
    values = dict(zip(STS6, (30.87, 59.89, 47.73, 60.29, 63.73, 47.29)))
    config = {"name": "base", "base_model": BERT, "pooling": "mean"}
    for task, v in values.items():
        _add(tmp_path, "base", 0, task, {"spearman": v / 100}, main="spearman", config=config, backbone=GENUINE)
    _add(tmp_path, "base", 0, "sickr", {"spearman": 0.5822}, main="spearman", config=config, backbone=GENUINE)
    index = index_results(iter_results(tmp_path))
    (key,) = index.rows
    thesis = index.cell(key, COLUMNS["sts.thesis-avg"], "test").scaled(100).mean
    assert thesis == pytest.approx(309.8 / 6, abs=1e-9) and round(thesis, 1) == 51.6
    assert index.cell(key, COLUMNS["sts.avg"], "test").scaled(100).mean == pytest.approx((309.8 + 58.22) / 7)
    built = build_table(TABLES.get("thesis-table5.9"), index)
    comparison = compare(built, TABLES.get("thesis-table5.9"), runs=run_settings(index))
    ((row, entry),) = comparison.rows  # the base row is bert-base-uncased by its fingerprint, mean pooling
    assert entry.label == "Bert-base-uncased" and entry.values["sts.thesis-avg"] == 51.6


def test_published_rows_pair_only_with_runs_of_their_settings(tmp_path):
    for seed in (1, 7, 42):
        for loss, v in (("nt_xent", 0.71), ("bce", 0.43)):
            for task in STS6:
                _add(tmp_path, "simcse", seed, task, {"spearman": v}, main="spearman", config=_thesis_simcse(loss),
                     backbone=GENUINE, variant=f"thesis loss={loss}")
        # the TSDAE paper's SimCSE (another preset and loss): a SimCSE row, but not the thesis' setting
        paper = {"method": "simcse", "preset": "paper", "config": {"model": BERT, "loss": "infonce", "batch_size": 512}}
        _add(tmp_path, "simcse", seed, "stsb", {"spearman": 0.7}, main="spearman", config=paper)
    index = index_results(iter_results(tmp_path))
    assert len(index.rows) == 3  # one row per variant: nothing refused for mixing configurations
    spec = TABLES.get("thesis-table5.9")
    comparison = compare(build_table(spec, index), spec, runs=run_settings(index), context=SAMPLES)
    pairs = {row.label: entry.label for row, entry in comparison.rows}
    owt = "SimCSE · trained on file:openwebtext_1m.txt · thesis"
    assert pairs == {f"{owt} loss=nt_xent (user's sample)": "SimCSE NT-Xent",
                     f"{owt} loss=bce (user's sample)": "SimCSE BCE"}
    assert any(n.startswith(f"No published neighbour for {owt.removesuffix(' · thesis')}:") for n in comparison.notes)
    (every,) = [dict(missed)["thesis Table 5.9 SimCSE NT-Xent"] for label, missed in comparison.unpaired
                if label == owt.removesuffix(" · thesis")]
    assert "loss: ours infonce, paper nt_xent" in every and "batch_size: ours 512, paper 64" in every
    alone = compare(build_table(spec, index), spec, runs=run_settings(index))
    assert alone.rows == ()  # the thesis' OpenWebText sample was never published: only on the user's word


def test_every_thesis_row_types_its_table_and_the_eproduct_rows_have_no_counterpart():
    rows = {t: entries(t) for t in ("thesis-table5.9", "thesis-table5.10", "thesis-table5.17", "thesis-table5.16")}
    assert [e.values["quora.recall@10"] for e in rows["thesis-table5.17"] if "0.001 L_CLM" in e.label] == [88.8]
    assert all(e.match is None and "internal" in (e.note or "") for e in rows["thesis-table5.16"])
    public = [e for t in ("thesis-table5.9", "thesis-table5.10", "thesis-table5.17") for e in rows[t]]
    assert all(e.settings for e in public)  # every comparable published row says what a run must meet
    w = {e.settings["config"].get("ae_weight") for e in rows["thesis-table5.17"] if e.match["method"] == "simcse-clm"}
    assert w == {0.1, 0.01, 0.001, 0.0001}


def test_thesis_figures_curves_and_alpha_sweep(tmp_path):
    res = tmp_path / "results"
    for seed, base in ((1, 0.5), (7, 0.6)):
        scores = {f"{m}@{k}": min(1.0, base * k ** 0.1) / (1 if m == "recall" else k)
                  for m in ("recall", "p") for k in (1, 3, 5, 10, 100, 1000)}
        _add(res, "simcse", seed, "quora", {**scores, "ndcg@10": 0.5}, main="ndcg@10", config=_thesis_simcse("nt_xent"),
             variant="thesis")
        sweep = {f"none/alpha={a:g}": {"recall@10": 0.5 + a / 1000, "p@10": 0.1, "ndcg@10": 0.4} for a in (0, 1, 20, 120)}
        _add(res, "simcse", seed, "bm25-pyserini-a20+quora", {"ndcg@10": 0.4, "recall@10": 0.52, "p@10": 0.1},
             main="ndcg@10", config=_thesis_simcse("nt_xent"), variant="thesis", subsets=sweep)
    report = make_report(ReportOptions(results_dir=res, out=tmp_path / "out", tables=("thesis-fig5.3",),
                                       formats=("md", "csv")))
    names = {p.name for p in report.plots}
    assert {"thesis-fig5.3", "thesis-alpha"} <= names
    with (tmp_path / "out/plots/thesis-fig5.3.csv").open() as fh:
        curve = [r for r in csv.DictReader(fh) if r["metric"] == "recall"]
    assert [int(r["k"]) for r in curve] == [1, 3, 5, 10, 100, 1000]
    assert float(curve[0]["mean_x100"]) == pytest.approx(55.0)  # mean of 0.5 and 0.6 at k = 1
    with (tmp_path / "out/plots/thesis-alpha.csv").open() as fh:
        sweep_rows = [r for r in csv.DictReader(fh) if r["metric"] == "recall@10"]
    assert [float(r["alpha"]) for r in sweep_rows] == [0, 1, 20, 120]
    assert float(sweep_rows[2]["mean_x100"]) == pytest.approx(52.0) and sweep_rows[2]["n_seeds"] == "2"


def test_bench_report_lists_and_selects_the_thesis_group(tmp_path):
    from usebench.cli.main import main

    out = CliRunner().invoke(main, ["report", "--list"])
    assert out.exit_code == 0 and "thesis  (group)" in out.output and "thesis-table5.17" in out.output
    res = tmp_path / "results"
    _add(res, "simcse", 1, "stsb", {"spearman": 0.7}, main="spearman", config=_thesis_simcse("nt_xent"))
    out = CliRunner().invoke(main, ["report", "--results-dir", str(res), "--out", str(tmp_path / "o"), "--table",
                                    "thesis", "--format", "md", "--no-plots"])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "o/thesis-table5.17.md").is_file() and (tmp_path / "o/thesis-eproduct.md").is_file()
    assert "Published: thesis Table 5.16" in (tmp_path / "o/thesis-eproduct.md").read_text()
