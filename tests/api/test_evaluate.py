"""usebench.evaluate: a model name through `bench eval`'s runner; a callable or a SentenceTransformer through the
same runner as a pre-built encoder."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import usebench
from usebench.errors import BenchError
from usebench.store import iter_results
from usebench.plan.eval_options import EvalOptions
from usebench.run.evaluation import build_scorer, evaluate_model

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TASKS = ["twitterpara", "stsb"]


def scores_of(store: Path) -> dict[tuple[str, str], float]:
    """(task, metric) -> value of every result in a store (one run)."""
    return {(r.task, m): v for r in iter_results(store) for m, v in r.record["scores"].items()}


def frame_scores(frame) -> dict[tuple[str, str], float]:
    top = frame[frame["subset"] == ""]
    return {(t, m): v for t, m, v in zip(top["task"], top["metric"], top["value"])}


def test_a_model_name_is_bench_evals_run_with_the_same_records(tiny_bert_dir, tmp_path):
    frame = usebench.evaluate(str(tiny_bert_dir), TASKS, data_root=ASSETS, results_dir=tmp_path / "api",
                              show_progress=False)
    outcome = evaluate_model(EvalOptions(model=str(tiny_bert_dir)), ",".join(TASKS), "test", ASSETS, tmp_path / "cli")
    assert list(frame.columns) == ["model", "revision", "task", "split", "subset", "metric", "value", "main", "run_id"]
    assert set(frame["model"]) == {str(tiny_bert_dir)} and frame["revision"].nunique() == 1
    assert len(frame["revision"].iloc[0]) == 8  # a model name's revision: its weights' fingerprint
    assert set(frame["run_id"]) == {outcome.run_id}  # same config, same run id as `bench eval`
    assert frame_scores(frame) == scores_of(tmp_path / "cli") == scores_of(tmp_path / "api")
    mains = frame[frame["main"]]
    assert list(mains["task"]) == TASKS and list(mains["metric"]) == ["ap_avg", "spearman"]
    # TwitterPara's subsets are scores (its pair counts are left out); values are 0-1 as stored
    sub = frame[(frame["task"] == "twitterpara") & (frame["subset"] != "")]
    assert set(sub["subset"]) == {"twitterurl", "pit"} and not sub["metric"].str.startswith("n_").any()
    assert frame["value"].between(-1, 1).all()
    again = usebench.evaluate(str(tiny_bert_dir), TASKS, data_root=ASSETS, results_dir=tmp_path / "api",
                              show_progress=False)
    assert again.attrs["reused"] == TASKS and frame_scores(again) == frame_scores(frame)


def test_a_callable_is_recorded_under_its_name_as_not_fingerprinted(tiny_bert_dir, tmp_path):
    from usebench.eval.encoder import load_encoder

    encoder = load_encoder(str(tiny_bert_dir), batch_size=64, show_progress=False)
    calls: list[list[str]] = []

    def fn(texts: list[str]) -> torch.Tensor:  # a tensor, as a notebook's function would return
        calls.append(list(texts))
        return torch.from_numpy(encoder.encode(texts))

    frame = usebench.evaluate(fn, TASKS, data_root=ASSETS, results_dir=tmp_path / "fn", name="my-encoder",
                              batch_size=5, show_progress=False)
    by_name = usebench.evaluate(str(tiny_bert_dir), TASKS, data_root=ASSETS, show_progress=False)
    # the same vectors give the same numbers (batches differ: float noise only)
    ours, ref = frame_scores(frame), frame_scores(by_name)
    assert ours.keys() == ref.keys()
    assert all(ours[k] == pytest.approx(ref[k], abs=1e-6) for k in ref)
    assert calls and max(len(c) for c in calls) == 5 and all(isinstance(t, str) for c in calls for t in c)
    records = [r.record for r in iter_results(tmp_path / "fn")]
    assert len(records) == 2
    for record in records:
        assert record["method"]["name"] == "my-encoder" and record["run_id"].startswith("my-encoder__my-encoder__")
        assert record["method"]["weights_fingerprinted"] is False and "name and revision" in record["method"]["note"]
        assert record["method"]["setting"] == "external"  # not "unsupervised": usebench did not train it
        assert record["scorer"]["source"] == "python-callable" and record["config"]["weights_fingerprinted"] is False


def test_another_function_under_the_same_name_is_refused_then_overwritten(tmp_path):
    """The same name may hold another function the next time: its different result is refused (nothing
    written) unless overwrite=True; the same result is no conflict."""
    from usebench.api.staging import ResultConflictError

    def constant(texts):  # a different function under the same name
        return np.array([[1.0, len(t) % 3 + 1.0, 0.5] for t in texts])

    def varied(texts):
        return np.array([[len(t), t.count("e") + 1.0, 1.0] for t in texts])

    first = usebench.evaluate(constant, "stsb", data_root=ASSETS, results_dir=tmp_path, name="f",
                              show_progress=False)
    with pytest.raises(ResultConflictError, match="different result is already stored .*overwrite=True"):
        usebench.evaluate(varied, "stsb", data_root=ASSETS, results_dir=tmp_path, name="f", show_progress=False)
    (stored,) = [r.record for r in iter_results(tmp_path)]
    assert stored["scores"]["spearman"] == frame_scores(first)[("stsb", "spearman")]  # untouched
    again = usebench.evaluate(constant, "stsb", data_root=ASSETS, results_dir=tmp_path, name="f",
                              show_progress=False)  # the same numbers: no conflict, evaluated again
    assert again.attrs["reused"] == [] and frame_scores(again) == frame_scores(first)
    second = usebench.evaluate(varied, "stsb", data_root=ASSETS, results_dir=tmp_path, name="f",
                               show_progress=False, overwrite=True)
    assert frame_scores(first) != frame_scores(second)
    (stored,) = [r.record for r in iter_results(tmp_path)]
    assert stored["scores"]["spearman"] == frame_scores(second)[("stsb", "spearman")]


def test_a_sentence_transformer_gives_the_packaged_models_numbers(tmp_path, packaged_weights):
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(packaged_weights), device="cpu")
    frame = usebench.evaluate(st, TASKS, data_root=ASSETS, results_dir=tmp_path, device="cpu", show_progress=False)
    ref = usebench.evaluate("minilm", TASKS, data_root=ASSETS, device="cpu", show_progress=False)
    ours, want = frame_scores(frame), frame_scores(ref)
    assert ours.keys() == want.keys() and all(ours[k] == pytest.approx(want[k], abs=1e-5) for k in want)
    record = next(iter_results(tmp_path)).record
    assert record["method"]["sentence_encoder"] is True and record["method"]["pooling"] == "mean"
    assert record["scorer"]["source"] == "sentence-transformers" and record["method"]["base_model"]


def test_without_results_dir_nothing_is_left_behind(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    frame = usebench.evaluate(lambda t: np.ones((len(t), 2)) + np.arange(len(t))[:, None], "stsb", data_root=ASSETS,
                              name="ones", show_progress=False)
    assert len(frame) and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kwargs, message", [
    ({}, "name= is required for a callable"),
    ({"name": "x", "pooling": "cls"}, "pooling= applies to a model given by name"),
    ({"name": "x", "device": "cpu"}, "device= does not apply to function"),
    ({"name": "x", "precision": "bf16"}, "precision='bf16' applies to a model given by name"),
])
def test_options_that_do_not_apply_to_a_callable_are_errors(kwargs, message):
    with pytest.raises(BenchError, match=message):
        usebench.evaluate(lambda t: np.ones((len(t), 2)), "stsb", data_root=ASSETS, show_progress=False, **kwargs)


@pytest.mark.parametrize("output, message", [
    (lambda t: np.ones(len(t)), r"returned shape \(\d+,\) for \d+ texts"),
    (lambda t: np.ones((len(t) + 1, 3)), r"returned shape \(\d+, 3\) for \d+ texts"),
    (lambda t: "vectors", r"returned str \(task stsb, batch 1 of 1: 8 texts, .*\), expected an array or tensor"),
])
def test_a_callable_with_the_wrong_output_is_an_error_naming_it(output, message):
    with pytest.raises(BenchError, match=rf"model 'bad' {message}"):
        usebench.evaluate(output, "stsb", data_root=ASSETS, name="bad", show_progress=False)


def test_not_a_model_and_a_missing_data_root_are_errors(tmp_path):
    with pytest.raises(BenchError, match="expected a model name .*, got int"):
        usebench.evaluate(3, "stsb", data_root=ASSETS, name="x")
    with pytest.raises(BenchError, match="data root .* does not exist"):
        usebench.evaluate("minilm", "stsb", data_root=tmp_path / "nowhere")


def test_show_progress_reaches_the_checkpoint_encoder(tiny_bert_dir):
    """show_progress=False turns off the encoder's own bar (EvalOptions.show_progress -> HFEncoder)."""
    quiet, _, _ = build_scorer(EvalOptions(model=str(tiny_bert_dir), show_progress=False))
    loud, _, _ = build_scorer(EvalOptions(model=str(tiny_bert_dir)))
    assert quiet.encoder.show_progress is False and loud.encoder.show_progress is True


def test_quiet_evaluation_writes_nothing_to_stderr(capfd):
    usebench.evaluate(lambda t: np.ones((len(t), 2)) + np.arange(len(t))[:, None], "stsb", data_root=ASSETS,
                      name="q", show_progress=False)
    assert capfd.readouterr().err == ""
    usebench.evaluate(lambda t: np.ones((len(t), 2)) + np.arange(len(t))[:, None], "stsb", data_root=ASSETS,
                      name="q", show_progress=True)
    assert "stsb (test)" in capfd.readouterr().err  # the runner's per-task lines


def test_groups_expand_and_missing_tasks_warn(tmp_path):
    """`useb` expands as on the CLI; tasks without data are skipped with a warning, the others evaluated."""
    root = tmp_path / "root"
    (root / "useb").mkdir(parents=True)
    (root / "useb" / "data-eval").symlink_to(ASSETS / "useb" / "data-eval")
    (root / "usebench-counts.json").write_text((ASSETS / "usebench-counts.json").read_text())
    with pytest.warns(UserWarning, match="skipped 7 task.*sts12 .test. file not found"):
        frame = usebench.evaluate(lambda t: np.array([[len(x), 1.0 + x.count("a")] for x in t]), ["twitterpara", "sts"],
                                  data_root=root, name="lens", show_progress=False)
    assert set(frame["task"]) == {"twitterpara"}
    assert json.loads((ASSETS / "usebench-counts.json").read_text())  # the fixture root is untouched


def test_an_in_memory_evaluation_publishes_the_records_it_built_without_reading_them_back(tmp_path, monkeypatch):
    """The staging store's records are written once (the runner's reuse check may look, nothing else): the frame
    and the published records are the ones the runner built, equal to what the store then holds."""
    reads = []
    real = Path.read_text

    def spy(self, *args, **kwargs):
        reads.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", spy)
    frame = usebench.evaluate(lambda texts: np.array([[len(t), t.count("e") + 1.0, 1.0] for t in texts]), TASKS,
                              data_root=ASSETS, results_dir=tmp_path / "store", name="f", show_progress=False)
    monkeypatch.undo()
    staged = [p for p in reads if "usebench-staging-" in str(p) and p.suffix == ".json"]
    assert staged == []
    assert frame_scores(frame) == scores_of(tmp_path / "store") and set(frame["task"]) == set(TASKS)
