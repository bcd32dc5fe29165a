"""A quick evaluation's results in the reports (issue 56, item 3): never paired with a published number (the pairing
refuses it and says why), never placed in a paper's slot nor bold, a row of its own marked "limit N" in `bench report`,
marked in `bench compare` and compared only with results over the same subsample, and a column of its own in
``usebench.load_results``."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import usebench
from tests.report.genuine import data_root, pin_releases
from tests.report.test_pairing_by_content import _context, _genuine, _pairable_rows
from tests.report.test_pairing_eval import _untrained_record, _untrained_rows
from usebench.cli.main import main
from usebench.eval.subsample import Limit
from usebench.report.pairing import PairingContext, compare_record
from usebench.plan.eval_options import EvalOptions
from usebench.run.evaluation import evaluate_model
from usebench.stats.table_rows import index_results, row_label
from usebench.store import iter_results

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _limited(record: dict, n: int = 200) -> dict:
    """``record`` as `bench eval --limit n` writes it: the subsample in its task block and its config."""
    out = json.loads(json.dumps(record))
    out["task"]["limit"] = {**Limit(n).config(), "unit": "pairs", "of": 1000, "items": 2 * n, "ids_sha256": "c" * 64}
    out["config"] = {**out["config"], "limit": Limit(n).config()}
    return out


def test_every_pairable_published_row_refuses_a_limited_result_and_says_why(tmp_path, monkeypatch):
    root = data_root(tmp_path / "data")
    pin_releases(monkeypatch, root)
    checked = 0
    for tid, e in _pairable_rows():
        presets = e.settings["preset"]
        record = _genuine(e, root, presets if isinstance(presets, str) else presets[0])
        ctx = _context(root, e)
        if not compare_record(record, e.settings, e.match["method"], ctx).paired:
            continue  # (its evaluation data is not pinned here: tests/report/test_pairing_eval.py pins it)
        verdict = compare_record(_limited(record), e.settings, e.match["method"], ctx)
        assert not verdict.paired, (tid, e.label)
        assert any(g.startswith("evaluation items: ours a --limit subsample (200 per subset, seed 0), 400 of 1,000 "
                                "items, paper every test item") for g in verdict.gaps), verdict.gaps
        checked += 1
    for tid, e in _untrained_rows():
        task = "askubuntu" if "askubuntu" in e.values else "stsb"
        record = _untrained_record(task, e.settings["pooling"])
        if not compare_record(record, e.settings, "base", PairingContext()).paired:
            continue
        verdict = compare_record(_limited(record), e.settings, "base", PairingContext())
        assert not verdict.paired and any(g.startswith("evaluation items:") for g in verdict.gaps), (tid, e.label)
        checked += 1
    assert checked >= 10


@pytest.fixture()
def store(tiny_bert_dir, tmp_path) -> Path:
    """One model evaluated in full, with --limit 3, and with --limit 3 of another seed."""
    root = tmp_path / "r"
    for limit, seed in ((None, 0), (3, 0), (3, 1)):
        evaluate_model(EvalOptions(model=str(tiny_bert_dir), limit=limit, limit_seed=seed), "twitterpara,stsb",
                       "test", ASSETS, root)
    return root


def test_a_limited_result_is_a_row_of_its_own_marked_and_never_bold(store, tmp_path):
    index = index_results(iter_results(store))
    labels = sorted(row_label(k, False) for k in index.rows)
    assert len(labels) == 3
    assert [label.split(" · ", 1)[1] for label in labels if " · " in label] == ["limit 3", "limit 3 seed 1"]
    out = tmp_path / "reports"
    result = CliRunner().invoke(main, ["report", "--results-dir", str(store), "--table", "paper-table2", "--format",
                                       "md", "--no-plots", "--out", str(out), "--data-root", str(ASSETS)])
    assert result.exit_code == 0, result.output
    text = (out / "paper-table2.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("|") and "tiny-bert" in line]
    limited = [line for line in rows if "limit 3" in line]
    assert len(limited) == 2 and len(rows) == 3
    assert not any("**" in line for line in limited)  # never the column's best
    assert 'Rows marked "limit N" are quick evaluations (--limit)' in text


def test_bench_compare_marks_a_limited_side_and_pairs_only_the_same_subsample(store):
    runs = sorted({r.record["run_id"] for r in iter_results(store)})
    full = next(r for r in runs if "limit" not in r)
    seed0 = next(r for r in runs if "-limit3__" in r and json.loads(
        (store / r / "stsb" / "test.json").read_text())["task"]["limit"]["seed"] == 0)
    seed1 = next(r for r in runs if "-limit3__" in r and r != seed0)
    mixed = CliRunner().invoke(main, ["compare", full, seed0, "--results-dir", str(store), "--resamples", "50"])
    assert mixed.exit_code != 0  # nothing comparable: every task refused
    assert "limited: a --limit subsample (3 per subset, seed 0)" in mixed.output
    assert "not compared: A is over every item, B over a --limit subsample (3 per subset, seed 0)" in mixed.output
    assert "B is a quick evaluation over a --limit subsample (3 per subset, seed 0) (--limit)" in mixed.output
    other = CliRunner().invoke(main, ["compare", seed0, seed1, "--results-dir", str(store), "--resamples", "50"])
    assert "not compared: A is over a --limit subsample (3 per subset, seed 0), B over a --limit subsample (3 per " \
           "subset, seed 1)" in other.output
    frame = usebench.compare(full, seed0, store, resamples=50)
    assert frame["delta"].isna().all() and any("quick evaluation" in n for n in frame.attrs["notes"])


def test_load_results_keeps_a_limited_result_in_its_own_row(store):
    frame = usebench.load_results(store)
    assert set(frame["limit"]) == {"", "limit 3", "limit 3 seed 1"}
    stats = usebench.aggregate(frame)  # a full and a limited result never share a cell (no MixedRunsError either)
    main = stats[stats["main"] & (stats["task"] == "twitterpara")]
    assert sorted(main["limit"]) == ["", "limit 3", "limit 3 seed 1"] and set(main["n"]) == {1}


def test_the_paper_layout_leaves_a_limited_row_out_of_its_slots(store):
    from usebench.report.skeleton import build_with_skeleton
    from usebench.stats.table_specs import TABLES

    built = build_with_skeleton(TABLES.get("paper-table2"), index_results(iter_results(store)), data_root=ASSETS)
    placed = [r for r in built.rows if r.slot is not None and r.key is not None]
    assert not any(r.key.limit for r in placed)
    assert any(r.key is not None and r.key.limit for r in built.rows)  # listed below the skeleton
