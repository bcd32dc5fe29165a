"""TSDAE App. A (Tables 5-7, tying) and Table 4 report sections: rows per configuration, the published row beside
ours only when every recorded setting is met, and Table 4's final training loss from log.jsonl."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from usebench.stats.table_specs import TABLES
from usebench.report.tsdae_analyses import app_a_section, final_loss, table4_section
from usebench.store import StoredResult
from tests.report.genuine import BERT

PAPER_CFG = {"model": "bert-base-uncased", "max_steps": 30000, "dev_task": "stsb", "dev_every": 1500, "lr": 3e-5,
             "noise": "delete", "noise_ratio": 0.3, "pooling": "cls", "tie_encoder_decoder": False,
             "from_scratch": False}


def _result(path: Path, cfg: dict, seed: int, score: float, task: str = "stsb", split: str = "dev",
            corpus: str = "allnli", metric: str = "spearman") -> StoredResult:
    sha = f"sha-{task}" + ("-dev" if split == "dev" else "")  # the release, as tests/report/conftest.py pins it
    record = {"schema_version": 1, "seed": seed, "method": {"name": "tsdae", "base_model": cfg["model"],
                                                            "backbone": BERT},
              "task": {"name": task, "split": split, "data_sha256": sha}, "scores": {metric: score},
              "main_score": score,
              "config": {"method": "tsdae", "preset": "app-a", "config": cfg, "seed": seed,
                         "corpus": {"label": corpus, "sha256": "c"}}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return StoredResult(path, record)


def test_app_a_rows_are_settings_and_only_matching_rows_meet_the_paper(tmp_path):
    swap = {**PAPER_CFG, "noise": "swap"}
    results = [_result(tmp_path / f"a{s}/stsb/dev.json", PAPER_CFG, s, v) for s, v in ((0, 0.78), (1, 0.79))]
    results += [_result(tmp_path / f"b{s}/stsb/dev.json", swap, s, 0.76) for s in (0, 1)]
    short = {**PAPER_CFG, "max_steps": 200}  # a smoke budget: its own block, never beside the paper
    results += [_result(tmp_path / "c0/stsb/dev.json", short, 0, 0.5)]
    section = app_a_section(results, TABLES.get("tsdae-app-a"))
    rows = section.built.rows
    by_label = {}
    for r in rows:
        by_label.setdefault(r.label, []).append(r)
    # on the paper's skeleton: delete 0.3 is Table 5's "Delete" and Table 6's "Ratio 0.3"; the smoke budget is marked
    (delete,) = by_label["Delete"]
    assert delete.cells["stsb"].mean == pytest.approx(78.5) and delete.cells["stsb"].n == 2
    assert len(by_label["Ratio 0.3"]) == 1 and "Delete · 200 steps, STSb dev every 1500" in by_label
    assert by_label["Swap"][0].cells["stsb"].mean == pytest.approx(76.0)
    (mask,) = by_label["Mask"]
    assert mask.key is None and mask.cells["stsb"].missing and mask.note.startswith("no App. A run of TSDAE")
    pairs = {(row.label, e.label) for row, e in section.comparison.rows}
    # each row beside its own published row only; the 200-step row beside none
    assert pairs == {("Delete", "Delete"), ("Ratio 0.3", "Ratio 0.3"), ("Swap", "Swap")}
    assert [b.name for b in section.published] == ["tsdae-table5", "tsdae-table6", "tsdae-table7",
                                                   "tsdae-app-a-tying"]
    assert section.published[0].rows[0].cells["stsb"].mean == 78.33


def test_table4_reports_score_and_final_loss(tmp_path):
    cfg = {**PAPER_CFG, "max_steps": 100000, "dev_task": None, "dev_every": 0, "tie_encoder_decoder": True}
    results = []
    for seed, (score, loss) in enumerate(((0.60, 2.0), (0.58, 2.4))):
        r = _result(tmp_path / f"t{seed}/askubuntu/test.json", cfg, seed, score, task="askubuntu", split="test",
                    corpus="askubuntu", metric="map")
        (r.path.parent.parent / "log.jsonl").write_text(
            json.dumps({"step": 50, "loss": 9.0}) + "\n" + json.dumps({"step": 100, "loss": loss}) + "\n")
        results.append(r)
    assert final_loss(results[0]) == 2.0
    section = table4_section(results, TABLES.get("tsdae-table4"))
    (row,) = [r for r in section.built.rows if r.key is None and not r.note]  # BERT-base; the others "—"
    assert row.label == "BERT-base" and row.slot == 0
    assert [r.label for r in section.built.rows] == ["BERT-base", "Scratch", "BART-base", "T5-base"]
    assert row.cells["askubuntu"].mean == pytest.approx(59.0) and row.cells["askubuntu.loss"].mean == pytest.approx(2.2)
    assert row.cells["useb.avg"].missing  # the other three tasks have no result: no average
    assert [e.label for _, e in section.comparison.rows] == ["BERT-base"]  # not Scratch: from_scratch differs


def test_a_running_units_dev_probe_is_not_read_as_a_result(tmp_path):
    """A unit evaluating on its dev task exports `<run>/.dev_probe/` (config.json among its files); a report made
    meanwhile must not take that for a result (it failed with 'not a usebench result')."""
    from usebench.store import iter_results

    r = _result(tmp_path / "run0/stsb/dev.json", PAPER_CFG, 0, 0.7)
    probe = tmp_path / "run1" / ".dev_probe"
    probe.mkdir(parents=True)
    (probe / "config.json").write_text(json.dumps({"model_type": "bert"}))
    assert [x.path for x in iter_results(tmp_path)] == [r.path]
