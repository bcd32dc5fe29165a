"""A deleted result does not read "done" (issue 53, item 4): `bench status`, `bench run --dry-run` and the run ask
the one validity rule (usebench/validity.py); the plan names the missing result and the command that fills it, and
the run scores it again from the finished checkpoint without retraining. `bench status` counts a stage's users from
the units that ran, planned in this store or not (item 7)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.store.unit_state import grid_status, stage_states
from tests.methods.helpers import one_thread, toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"


@pytest.fixture()
def trained(tiny_bert_dir, tmp_path, monkeypatch) -> tuple[list[str], Path]:
    """A finished simcse unit evaluated on stsb and sickr, its `bench run` arguments and its store; started from a
    given checkpoint (as the laptop recipe's units), so its stage lives in ``.stages/``."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    results = tmp_path / "r"
    args = ["run", "--methods", "simcse", "--tasks", "stsb", "--eval-tasks", "sickr", "--corpus", str(corpus),
            "--model", str(tiny_bert_dir), "--preset", "smoke", "--max-steps", "2",
            "--setting", "adapt-nli-first", "--nli-sts-model", str(tiny_bert_dir), "--device", "cpu", "--data-root",
            str(ASSETS), "--results-dir", str(results), "--set", "batch_size=8", "--set", "max_length=32"]
    monkeypatch.setattr(sys, "argv", [str(tmp_path / ".venv" / "bin" / "bench"), *args])  # the manifest's command
    with one_thread():
        first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    return args, results


def test_status_plan_and_run_agree_that_a_deleted_result_is_missing(trained):
    args, results = trained
    (run,) = [p for p in results.iterdir() if p.name.startswith("simcse__")]
    assert [u.state for u in grid_status(results)] == ["done"]
    (run / "stsb" / "test.json").unlink()  # as the error about a corrupt file advises

    (unit,) = grid_status(results)
    assert unit.state == "rescore" and "missing result: stsb/test" in unit.detail
    assert "scores it again from its finished checkpoint" in unit.detail and "bench run --methods simcse" in unit.detail
    status = CliRunner().invoke(main, ["status", "--results-dir", str(results)])
    assert status.exit_code == 0 and "1 unit(s): 1 rescore\n" in status.output, status.output

    plan_file = results.parent / "plan.json"
    plan = CliRunner().invoke(main, [*args, "--dry-run", "--plan-out", str(plan_file)])
    assert plan.exit_code == 0, plan.output
    assert [r["now"] for r in json.loads(plan_file.read_text()) if r["number"]] == ["rescore"]
    assert "1 rescore" in plan.output  # the summary's "now" column
    assert f"{run.name}: trained; missing result: stsb/test: running this command without --dry-run scores it" \
        in plan.output

    with one_thread():
        again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert f"{run.name}: trained; scoring again: missing result: stsb/test" in again.output
    assert json.loads((run / "stsb" / "test.json").read_text())["task"]["name"] == "stsb"
    assert [u.state for u in grid_status(results)] == ["done"]


def test_a_stale_result_reads_rescore_in_status(trained):
    _args, results = trained
    (run,) = [p for p in results.iterdir() if p.name.startswith("simcse__")]
    path = run / "sickr" / "test.json"
    record = json.loads(path.read_text())
    record["main_score"] = 0.123  # edited after it was written: its digest no longer matches
    path.write_text(json.dumps(record))
    (unit,) = grid_status(results)
    assert unit.state == "rescore" and "sickr/test: the stored result was changed after it was written" in unit.detail


def test_a_stage_is_used_by_the_units_that_ran_on_it(trained):
    """A store without grid manifests (the committed results/laptop: units copied without .launch/) still counts
    each stage's users from the units' stages.json."""
    import shutil

    _args, results = trained
    shutil.rmtree(results / ".launch")
    homes = {st.home: st.used_by for st in stage_states(results)}
    assert homes and all(n == 1 for n in homes.values()), homes
