from __future__ import annotations

import re
from pathlib import Path

import pytest

from usebench.errors import BenchError, MissingDataError
from usebench.store import iter_results
from usebench.plan.eval_options import EvalOptions
from usebench.run.evaluation import evaluate_model

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


# --- issue 14: reuse keyed on data, config and precision; no non-finite score stored; progress lines -------------

def _copy_assets(tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(ASSETS, tmp_path / "data")
    return tmp_path / "data"


def _stored(results: Path, run: str, task: str = "stsb") -> dict:
    import json

    return json.loads((results / run / task / "test.json").read_text(encoding="utf-8"))


def test_reuse_keys_on_the_data_hash(tiny_bert_dir, tmp_path):
    root, results = _copy_assets(tmp_path), tmp_path / "r"
    opts = EvalOptions(model=str(tiny_bert_dir))
    first = evaluate_model(opts, "stsb", "test", root, results)
    old_sha = _stored(results, first.run_id)["task"]["data_sha256"]
    assert evaluate_model(opts, "stsb", "test", root, results).reused == ["stsb"]
    # Same pairs, one gold score changed: a stored result of the old data must not be reused.
    csv = root / "sts/senteval/STSBenchmark/sts-test.csv"
    csv.write_text(csv.read_text(encoding="utf-8").replace("\t2.500\t", "\t4.500\t", 1), encoding="utf-8")
    third = evaluate_model(opts, "stsb", "test", root, results)
    assert third.reused == [] and [ev.task for ev in third.evaluations] == ["stsb"]
    assert _stored(results, first.run_id)["task"]["data_sha256"] != old_sha


def test_reuse_and_its_refusal_are_said(tiny_bert_dir, tmp_path):
    root, results, lines = _copy_assets(tmp_path), tmp_path / "r", []
    opts = EvalOptions(model=str(tiny_bert_dir))
    evaluate_model(opts, "stsb", "test", root, results)
    evaluate_model(opts, "stsb", "test", root, results, log=lines.append)
    assert lines == [f"stsb (test): reused {next(results.glob('*/stsb/test.json'))} (same model, configuration and "
                     "data; --force re-runs)"]
    csv = root / "sts/senteval/STSBenchmark/sts-test.csv"
    csv.write_text(csv.read_text(encoding="utf-8").replace("\t2.500\t", "\t4.500\t", 1), encoding="utf-8")
    lines.clear()
    evaluate_model(opts, "stsb", "test", root, results, log=lines.append)
    assert "not reusing" in lines[0] and "the task's data changed (sha256 " in lines[0]


def test_reuse_keys_on_the_evaluation_precision(tiny_bert_dir, tmp_path):
    from usebench.store import write_json_atomic

    results = tmp_path / "r"
    opts = EvalOptions(model=str(tiny_bert_dir), device="cpu")
    first = evaluate_model(opts, "stsb", "test", ASSETS, results)
    record = _stored(results, first.run_id)
    record["scorer"]["dtype"] = "bfloat16-autocast"  # as if it had been computed on a GPU
    write_json_atomic(results / first.run_id / "stsb" / "test.json", record)
    again = evaluate_model(opts, "stsb", "test", ASSETS, results)
    assert again.reused == [] and _stored(results, first.run_id)["scorer"]["dtype"] == "float32"


def test_a_stored_nan_result_is_never_reused(tiny_bert_dir, tmp_path):
    results = tmp_path / "r"
    opts = EvalOptions(model=str(tiny_bert_dir))
    first = evaluate_model(opts, "stsb", "test", ASSETS, results)
    path = results / first.run_id / "stsb" / "test.json"
    path.write_text(path.read_text().replace(f'"main_score": {_stored(results, first.run_id)["main_score"]!r}',
                                             '"main_score": NaN'))
    assert "NaN" in path.read_text()
    again = evaluate_model(opts, "stsb", "test", ASSETS, results)
    assert again.reused == [] and again.evaluations and _stored(results, first.run_id)["main_score"] == pytest.approx(
        first.evaluations[0].main_score)


def test_a_non_finite_main_score_fails_the_task_and_stores_nothing(tiny_bert_dir, tmp_path, monkeypatch):
    """The issue's `--batch-size -4` encoded nothing: every vector equal, every cosine equal, Spearman NaN."""
    import numpy as np

    from usebench.eval.encoder import HFEncoder

    monkeypatch.setattr(HFEncoder, "encode", lambda self, texts: np.ones((len(texts), 4), np.float32))
    try:
        outcome = evaluate_model(EvalOptions(model=str(tiny_bert_dir)), "stsb", "test", ASSETS, tmp_path / "r")
    finally:
        assert not list((tmp_path / "r").rglob("*.json"))  # nothing stored, whatever happened
    assert [t for t, _ in outcome.failed] == ["stsb"] and not outcome.evaluations
    assert "main score spearman = nan is not a finite number" in outcome.failed[0][1]


def test_non_finite_embeddings_fail_the_task_before_any_metric(tiny_bert_dir, tmp_path, monkeypatch):
    import numpy as np

    from usebench.eval.encoder import HFEncoder

    monkeypatch.setattr(HFEncoder, "encode", lambda self, texts: np.full((len(texts), 4), np.nan, np.float32))
    outcome = evaluate_model(EvalOptions(model=str(tiny_bert_dir)), "twitterpara,stsb", "test", ASSETS,
                             tmp_path / "r")
    assert [t for t, _ in outcome.failed] == ["twitterpara", "stsb"] and not outcome.evaluations
    assert re.search(r"produced non-finite embeddings for (\d+) of \1 texts", outcome.failed[0][1])
    assert not list((tmp_path / "r").rglob("*.json"))


@pytest.mark.parametrize("kw, message", [
    ({"batch_size": -4}, "--batch-size must be a positive integer, got -4"),
    ({"batch_size": 0}, "--batch-size must be a positive integer, got 0"),
    ({"max_length": 0}, "--max-length must be a positive integer, got 0"),
])
def test_numeric_options_are_checked_before_anything_runs(kw, message):
    with pytest.raises(BenchError, match=message):
        EvalOptions(model="minilm", **kw)


def test_max_length_beyond_the_model_positions_is_an_error(tiny_bert_dir, tmp_path):
    with pytest.raises(BenchError, match="exceeds the 128 positions"):
        evaluate_model(EvalOptions(model=str(tiny_bert_dir), max_length=100_000), "stsb", "test", ASSETS, tmp_path)


def test_progress_lines_name_task_split_items_seconds_and_score(tiny_bert_dir, tmp_path):
    lines: list[str] = []
    evaluate_model(EvalOptions(model=str(tiny_bert_dir)), "twitterpara,stsb,askubuntu", "dev", ASSETS, tmp_path,
                   log=lines.append)
    assert lines[0] == "twitterpara (dev): skipped: task 'twitterpara' has no 'dev' split (it has: test)"
    assert lines[1] == "[1/2] stsb (dev): evaluating ..."
    assert re.fullmatch(r"\[1/2\] stsb \(dev\): 3 pairs, \d+\.\d s, spearman -?\d+\.\d\d", lines[2])
    assert re.fullmatch(r"\[2/2\] askubuntu \(dev\): 2 queries, \d+\.\d s, map \d+\.\d\d", lines[4])
    assert sum("twitterpara" in line for line in lines) == 1  # one skip message per task


def test_nothing_is_loaded_when_every_task_is_reused_or_skipped(tiny_bert_dir, tmp_path, monkeypatch):
    import usebench.run.evaluation as evaluation

    opts = EvalOptions(model=str(tiny_bert_dir))
    evaluate_model(opts, "stsb", "test", ASSETS, tmp_path)
    monkeypatch.setattr(evaluation, "build_scorer", lambda o: pytest.fail("the model was loaded"))
    skipped = evaluate_model(opts, "twitterpara,stsb", "dev", tmp_path / "no-data", tmp_path / "other")
    assert [t for t, _ in skipped.skipped] == ["twitterpara", "stsb"] and not skipped.evaluations
    assert evaluate_model(opts, "stsb", "test", ASSETS, tmp_path).reused == ["stsb"]
