from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.errors import BenchError, MissingDataError
from benchmark.results import iter_results
from benchmark.run.evaluation import EvalOptions, evaluate_model

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def test_eval_skips_tasks_without_the_split_or_the_data(tiny_bert_dir, tmp_path):
    opts = EvalOptions(model=str(tiny_bert_dir))
    outcome = evaluate_model(opts, "twitterpara,stsb,askubuntu", "dev", tmp_path / "empty-root", tmp_path / "r")
    reasons = dict(outcome.skipped)
    assert "no 'dev' split" in reasons["twitterpara"]
    assert "bench data download sts" in reasons["stsb"] and "bench data download useb" in reasons["askubuntu"]
    assert not outcome.evaluations


def test_eval_writes_one_result_per_task_and_reuses_it(tiny_bert_dir, tmp_path):
    opts = EvalOptions(model=str(tiny_bert_dir))
    first = evaluate_model(opts, "twitterpara,stsb", "test", ASSETS, tmp_path)
    assert [ev.task for ev in first.evaluations] == ["twitterpara", "stsb"]
    assert sorted(r.task for r in iter_results(tmp_path)) == ["stsb", "twitterpara"]
    again = evaluate_model(opts, "twitterpara,stsb", "test", ASSETS, tmp_path)
    assert again.run_id == first.run_id and again.reused == ["twitterpara", "stsb"] and not again.evaluations


def test_strict_turns_skips_into_errors(tiny_bert_dir, tmp_path):
    opts = EvalOptions(model=str(tiny_bert_dir))
    with pytest.raises(MissingDataError):
        evaluate_model(opts, "stsb", "test", tmp_path, tmp_path / "r", strict=True)
    with pytest.raises(BenchError, match="no 'dev' split"):
        evaluate_model(opts, "twitterpara", "dev", ASSETS, tmp_path / "r", strict=True)


def test_precision_is_in_the_config_and_the_run_id(tiny_bert_dir, tmp_path):
    """A bf16 result gets its own run id, so it is never reused or averaged as the fp32 one."""
    fp32 = evaluate_model(EvalOptions(model=str(tiny_bert_dir)), "stsb", "test", ASSETS, tmp_path)
    bf16 = evaluate_model(EvalOptions(model=str(tiny_bert_dir), precision="bf16"), "stsb", "test", ASSETS, tmp_path)
    assert fp32.run_id != bf16.run_id and not bf16.reused
    records = {r.record["run_id"]: r.record for r in iter_results(tmp_path)}
    assert records[fp32.run_id]["config"]["precision"] == "fp32"
    assert records[bf16.run_id]["config"]["precision"] == "bf16"
    assert records[bf16.run_id]["scorer"]["precision"] == "bf16"
