"""The dry run as a person reads it: a summary of one row per chain and setting (per table in `bench reproduce`),
the unit table for a small plan or with --units, and every unit's row to a CSV or JSON file with --plan-out."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

import usebench.cli.dry_run as dry_run
import usebench.tasks  # noqa: F401  (enrols the adapters: a unit names the split of each task)
from usebench.cli.main import main
from usebench.plan.plan_rows import CSV_COLUMNS, group_rows, plan_view
from usebench.plan.specs import BaselineSpec, Plan, StageSpec, UnitSpec
from tests.methods.helpers import toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _stage(method: str, home: str, steps: int) -> StageSpec:
    return StageSpec(method, "smoke", {}, {"kind": "corpus", "label": "corpus.txt"}, home=home, pooling="mean",
                     steps=steps)


def _unit(run_id: str, chain: tuple[str, ...], stages: tuple[StageSpec, ...], seed: int) -> UnitSpec:
    return UnitSpec(run_id, chain, stages, seed, "stsb", (), None, ("stsb",), {}, "-")


def _plan() -> Plan:
    """simcse (one unit), mlm>simcse (two seeds sharing their mlm stage: the second reuses it; its simcse stage is
    done in the store), and the base row."""
    units = [_unit("simcse_s0", ("simcse",), (_stage("simcse", "simcse_s0", 5),), 0),
             _unit("ms_s0", ("mlm", "simcse"), (_stage("mlm", ".stages/mlm", 10), _stage("simcse", "ms_s0", 5)), 0),
             _unit("ms_s1", ("mlm", "simcse"), (_stage("mlm", ".stages/mlm", 10), _stage("simcse", "ms_s1", 5)), 1)]
    return Plan(units=units, baselines=[BaselineSpec("base", "tiny", ("stsb",))])


def test_the_summary_has_one_row_per_chain_and_setting(tmp_path):
    (tmp_path / "ms_s1" / "checkpoint").mkdir(parents=True)
    (tmp_path / "ms_s1" / "checkpoint" / "method.json").write_text("{}")  # its simcse stage: done in the store
    view = plan_view(_plan(), tmp_path)
    rows = [(g.chain, g.setting, g.units, len(g.seeds), g.train, g.reuse, g.done, g.steps)
            for g in group_rows(view.rows)]
    # by hand: mlm>simcse trains mlm once (10 steps) and simcse of seed 0 (5); seed 1 reuses mlm, its simcse is done
    assert rows == [("simcse", "unsupervised", 1, 1, 1, 0, 0, 5), ("mlm>simcse", "unsupervised", 2, 2, 2, 1, 1, 15),
                    ("base", "baselines", 0, 0, 0, 0, 0, 0)]
    assert [r.stages[0].text for r in view.rows[1:3]] == ["mlm: train", "mlm: reuse (unit #2)"]
    assert view.rows[2].stages[1].text == "simcse: done (ms_s1)"


def test_a_plan_larger_than_a_screen_is_summarised_and_listed_with_units(tmp_path, monkeypatch):
    view = plan_view(_plan(), tmp_path)
    monkeypatch.setattr(dry_run, "UNITS_LISTED", 2)
    out = _printed(view, list_units=False)
    assert "bench run --dry-run: 3 unit(s), 1 baseline(s)" in out and "mlm>simcse" in out
    assert "simcse_s0" not in out and "mlm: reuse (unit #2)" not in out  # the units are not listed
    out = _printed(view, list_units=True)
    assert "simcse_s0" in out and "mlm: reuse (unit #2)" in out


def _printed(view, list_units: bool) -> str:
    from rich.console import Console

    buf = io.StringIO()
    dry_run.print_plan(view, list_units, console=Console(file=buf, width=320))
    return buf.getvalue()


def _run_args(tiny_bert_dir, tmp_path, *more):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    return ["run", "--tasks", "stsb", "--corpus", str(corpus), "--model", str(tiny_bert_dir), "--preset", "smoke",
            "--max-steps", "2", "--device", "cpu", "--data-root", str(ASSETS), "--results-dir", str(tmp_path / "r"),
            "--set", "batch_size=8", "--set", "max_length=32", "--methods", "simcse,mlm>simcse,base", "--seeds", "2",
            "--dry-run", *more]


def test_plan_out_writes_every_unit_as_csv_and_json(tiny_bert_dir, tmp_path):
    result = CliRunner().invoke(main, _run_args(tiny_bert_dir, tmp_path, "--plan-out", str(tmp_path / "p.csv")))
    assert result.exit_code == 0, result.output
    with (tmp_path / "p.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(CSV_COLUMNS)
    assert [(r["number"], r["chain"], r["seed"]) for r in rows] == [
        ("1", "simcse", "0"), ("2", "simcse", "1"), ("3", "mlm>simcse", "0"), ("4", "mlm>simcse", "1"),
        ("", "base", "")]
    assert rows[2]["stages"] == "mlm: train; simcse: train" and rows[2]["steps"] == "2 > 2"
    assert rows[0]["evaluates"] == "stsb (test)" and rows[0]["now"] == "missing"

    result = CliRunner().invoke(main, _run_args(tiny_bert_dir, tmp_path, "--plan-out", str(tmp_path / "p.json")))
    assert result.exit_code == 0, result.output
    units = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
    assert [u["run_id"] for u in units[:4]] == [r["run_id"] for r in rows[:4]]
    assert [s["action"] for s in units[2]["stages"]] == ["train", "train"] and units[2]["stages"][0]["steps"] == 2
    assert not (tmp_path / "r").exists()  # a dry run writes the plan file, nothing in the store


def test_plan_out_of_another_kind_is_a_usage_error(tiny_bert_dir, tmp_path):
    result = CliRunner().invoke(main, _run_args(tiny_bert_dir, tmp_path, "--plan-out", str(tmp_path / "p.txt")))
    assert result.exit_code == 2 and "expected a .csv or .json file" in result.output, result.output
    assert not (tmp_path / "p.txt").exists()
