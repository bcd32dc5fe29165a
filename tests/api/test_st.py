"""usebench.st.USEBEvaluator: a sentence-transformers evaluator whose numbers are `bench eval`'s, bit for bit, on the
checkpoint saved from the same model; its metrics, CSV, model card and checkpoint selection in sentence-transformers'
trainer (the `st` extra: datasets + accelerate; those tests skip without it)."""
from __future__ import annotations

import csv
import importlib.util
import warnings
from pathlib import Path

import pytest

from usebench.errors import BenchError, BenchValueError
from usebench.plan.eval_options import EvalOptions
from usebench.run.evaluation import evaluate_model

ASSETS = Path(__file__).resolve().parents[1] / "assets"  # the fixture data root (its own usebench-counts.json)
USEB = ["askubuntu", "cqadupstack", "twitterpara", "scidocs"]
needs_st = pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("datasets", "accelerate")),
                              reason="needs the `st` extra (datasets, accelerate): pip install -e '.[st]'")


@pytest.fixture()
def st_model(tiny_bert_dir):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_bert_dir), device="cpu")  # Transformer + mean Pooling


def bench_eval(checkpoint: Path, tasks: list[str], split: str, store: Path) -> dict[str, dict[str, float]]:
    """What `bench eval --model CHECKPOINT --tasks ... --split ...` computes (its runner), per task."""
    out = evaluate_model(EvalOptions(model=str(checkpoint), device="cpu", show_progress=False), ",".join(tasks), split,
                         ASSETS, store)
    return {ev.task: ev.scores for ev in out.evaluations}


def test_the_evaluator_equals_bench_eval_on_the_saved_checkpoint(st_model, tmp_path):
    from usebench.st import USEBEvaluator

    st_model.save(str(tmp_path / "ckpt"))
    evaluator = USEBEvaluator("useb", split="test", data_root=ASSETS)
    metrics = evaluator(st_model)
    assert evaluator.last_encoding == "engine" and evaluator.tasks == USEB
    expected = bench_eval(tmp_path / "ckpt", USEB, "test", tmp_path / "store")
    for ev in evaluator.last_evaluations:
        assert ev.scores == expected[ev.task]  # bit-equal, every metric
        for metric, value in expected[ev.task].items():
            assert metrics[f"useb_test_{ev.task}_{metric}"] == value
    mains = [expected[t][m] for t, m in (("askubuntu", "map"), ("cqadupstack", "map@100"),
                                         ("twitterpara", "ap_avg"), ("scidocs", "map_avg"))]
    assert evaluator.primary_metric == "useb_test_avg"
    assert metrics["useb_test_avg"] == pytest.approx(sum(mains) / 4, abs=1e-15)


def test_its_own_encode_gives_the_in_memory_api_numbers(st_model):
    """encode='sentence-transformers': the model's SentenceTransformer.encode, as usebench.evaluate(model) does."""
    import usebench.api.evaluation
    from usebench.st import USEBEvaluator

    evaluator = USEBEvaluator(["askubuntu", "twitterpara"], split="test", data_root=ASSETS,
                              encode="sentence-transformers")
    metrics = evaluator(st_model)
    assert evaluator.last_encoding == "sentence-transformers"
    frame = usebench.api.evaluation.evaluate(st_model, ["askubuntu", "twitterpara"], data_root=ASSETS, show_progress=False)
    for row in frame[frame["subset"] == ""].itertuples():
        assert metrics[f"useb_test_{row.task}_{row.metric}"] == row.value


def test_a_model_bench_eval_would_encode_otherwise_is_encoded_by_itself(st_model):
    from sentence_transformers.models import Dense

    from usebench.st import USEBEvaluator

    st_model.append(Dense(32, 8))
    evaluator = USEBEvaluator("askubuntu", split="test", data_root=ASSETS)
    evaluator(st_model)
    assert evaluator.last_encoding == "sentence-transformers"
    with pytest.raises(BenchValueError, match="modules are .*Dense"):
        USEBEvaluator("askubuntu", split="test", data_root=ASSETS, encode="engine")(st_model)


def test_dev_leaves_twitterpara_out_writes_the_csv_and_restores_train_mode(st_model, tmp_path):
    from usebench.st import USEBEvaluator

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluator = USEBEvaluator(data_root=ASSETS)
    assert evaluator.tasks == ["askubuntu", "cqadupstack", "scidocs"]
    assert any("'twitterpara' has no 'dev' split" in str(w.message) for w in caught)
    st_model.train()
    for step in (5, 10):
        metrics = evaluator(st_model, output_path=str(tmp_path), epoch=0, steps=step)
    assert st_model.training  # the trainer's mode is left as it was
    rows = list(csv.reader((tmp_path / "useb_evaluation_useb_dev_results.csv").open()))  # sentence-transformers' naming
    assert rows[0][:3] == ["epoch", "steps", "askubuntu_map"] and len(rows) == 3 and rows[2][1] == "10"
    assert float(rows[2][-1]) == metrics["useb_dev_avg"]
    assert evaluator in st_model.model_card_data.eval_results_dict


def test_bad_arguments_and_missing_data_are_clear(tmp_path):
    from usebench.errors import MissingDataError
    from usebench.st import USEBEvaluator

    with pytest.raises(BenchValueError, match="no task of 'twitterpara' has a 'dev' split"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            USEBEvaluator("twitterpara", split="dev", data_root=ASSETS)
    with pytest.raises(BenchValueError, match="split must be"):
        USEBEvaluator("askubuntu", split="valid", data_root=ASSETS)
    with pytest.raises(MissingDataError, match="bench data download useb"):
        USEBEvaluator("askubuntu", split="test", data_root=tmp_path)


def test_the_trainer_extra_is_named_when_missing(monkeypatch):
    """The evaluator works on the base install; the trainer's keywords (selection_args) name the `st` extra."""
    from usebench.st import USEBEvaluator, require_trainer, selection_args

    evaluator = USEBEvaluator("askubuntu", split="test", data_root=ASSETS)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "accelerate" else real(name, *a))
    with pytest.raises(BenchError, match=r"accelerate: the `st` extra, pip install -e '\.\[st\]'"):
        require_trainer()
    with pytest.raises(BenchError, match="the `st` extra"):
        selection_args(evaluator)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())  # both present
    assert selection_args(evaluator) == {"metric_for_best_model": "eval_useb_test_avg", "greater_is_better": True,
                                         "load_best_model_at_end": True}


@needs_st
def test_checkpoint_selection_in_sentence_transformers_trainer(st_model, tmp_path):
    """The `st` extra: the trainer calls the evaluator every N steps, logs its metrics, keeps the best checkpoint;
    the trained model's numbers are still `bench eval`'s on its saved checkpoint."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from usebench.st import USEBEvaluator, selection_args

    pairs = ["how do i install flash", "install adobe flash player", "ubuntu updates", "enable automatic updates",
             "wifi not working", "wireless driver broken", "change the theme", "customize the desktop look"]
    train = Dataset.from_dict({"anchor": pairs[0::2] * 4, "positive": pairs[1::2] * 4})
    evaluator = USEBEvaluator("useb", split="test", data_root=ASSETS)
    args = SentenceTransformerTrainingArguments(
        str(tmp_path / "out"), max_steps=6, per_device_train_batch_size=4, learning_rate=1e-3, eval_strategy="steps",
        eval_steps=2, save_strategy="steps", save_steps=2, use_cpu=True, report_to=[], seed=0,
        **selection_args(evaluator))
    trainer = SentenceTransformerTrainer(model=st_model, args=args, train_dataset=train,
                                         loss=MultipleNegativesRankingLoss(st_model), evaluator=evaluator)
    trainer.train()
    logged = [h["eval_useb_test_avg"] for h in trainer.state.log_history if "eval_useb_test_avg" in h]
    assert len(logged) == 3 and trainer.state.best_metric == max(logged)
    rows = list(csv.reader((tmp_path / "out" / "eval" / "useb_evaluation_useb_test_results.csv").open()))
    assert [r[1] for r in rows[1:]] == ["2", "4", "6"]
    assert evaluator(st_model)["useb_test_avg"] == trainer.state.best_metric  # the best checkpoint was loaded
    st_model.save(str(tmp_path / "trained"))
    expected = bench_eval(tmp_path / "trained", USEB, "test", tmp_path / "store")
    assert all(ev.scores == expected[ev.task] for ev in evaluator.last_evaluations)


@needs_st
@pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true")
def test_model_fit_calls_it_every_n_steps(st_model, tmp_path, monkeypatch):
    """`model.fit(evaluator=..., evaluation_steps=N)` (sentence-transformers' older API, on its trainer) calls it."""
    from sentence_transformers import InputExample
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from torch.utils.data import DataLoader

    from usebench.st import USEBEvaluator

    evaluator = USEBEvaluator("askubuntu", split="test", data_root=ASSETS)
    calls = []
    real_call = USEBEvaluator.__call__
    monkeypatch.setattr(USEBEvaluator, "__call__",
                        lambda self, model, *a, **k: calls.append(k.get("steps")) or real_call(self, model, *a, **k))
    examples = [InputExample(texts=[t, t + " please"]) for t in ("install flash", "wifi broken", "ubuntu updates",
                                                                   "change theme")] * 4
    # fit's trainer writes its own evaluations under checkpoints/model[_N] of the current folder: the tmp path's
    monkeypatch.chdir(tmp_path)
    st_model.fit(train_objectives=[(DataLoader(examples, batch_size=4), MultipleNegativesRankingLoss(st_model))],
                 evaluator=evaluator, epochs=1, evaluation_steps=2, output_path=str(tmp_path / "fit"),
                 show_progress_bar=False)
    assert len(calls) >= 2  # at step 2 and at the end (step 4)
    assert (tmp_path / "fit" / "eval" / "useb_evaluation_useb_test_results.csv").is_file()


@needs_st
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_pages_example_runs(tiny_bert_dir, tmp_path, monkeypatch):
    """docs/st.md's example as a reader runs it, with stand-ins: the fixtures as $BENCH_DATA, the tiny BERT for
    bert-base-uncased, a few pairs for the reader's dataset, 4 steps instead of 3000."""
    import re

    from datasets import Dataset

    page = (ASSETS.parents[1] / "docs" / "st.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"^```python\n(.*?)^```", page, re.S | re.M)
    for old, new in (('"bert-base-uncased"', repr(str(tiny_bert_dir))), ("max_steps=3000", "max_steps=4"),
                     ("eval_steps=500", "eval_steps=2"), ("save_steps=500", "save_steps=2"),
                     ('("out",', '("out", use_cpu=True, report_to=[],')):
        assert old in code, old
        code = code.replace(old, new)
    monkeypatch.setenv("BENCH_DATA", str(ASSETS))
    monkeypatch.chdir(tmp_path)
    texts = ["how do i install flash", "install adobe flash player", "wifi not working", "wireless driver broken"]
    namespace = {"train_dataset": Dataset.from_dict({"anchor": texts * 2, "positive": texts[1:] + texts[:1] + texts})}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, "docs/st.md", "exec"), namespace)
    assert [r[1] for r in csv.reader((tmp_path / "out" / "eval" / "useb_evaluation_useb_dev_results.csv").open())][1:] == ["2", "4"]
    assert namespace["trainer"].state.best_metric is not None


def test_the_pages_imports_raise_no_deprecation_warning():
    """docs/st.md's imports in a fresh interpreter (a module imported earlier in this session would not warn again),
    with DeprecationWarning an error: the page shows the installed sentence-transformers' own import paths."""
    import re
    import subprocess
    import sys

    page = (ASSETS.parents[1] / "docs" / "st.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"^```python\n(.*?)^```", page, re.S | re.M)
    imports = "\n".join(line for line in code.splitlines() if line.startswith(("from ", "import ")))
    assert "MultipleNegativesRankingLoss" in imports
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", imports], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
