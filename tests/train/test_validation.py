"""Checkpoint selection as the thesis does it: validation loss on held-out sentences (lower is better), or a named
dev metric; seeds given as a list."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from usebench import methods  # noqa: F401
import usebench.train.validation as validation
from usebench.cli.run import parse_seeds
from usebench.errors import BenchError, ConfigError
from usebench.registry import METHODS
from usebench.plan.specs import RunOptions
from usebench.plan.planner import plan_run
from usebench.train.loop import train
from tests.methods.helpers import one_thread, tiny_config, toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _dev_file(tmp_path: Path, n: int = 16) -> Path:
    path = tmp_path / "dev.txt"
    path.write_text("\n".join(toy_corpus(n, seed=9)) + "\n", encoding="utf-8")
    return path


def test_loss_selection_without_a_dev_corpus_fails_before_training(tiny_bert_dir, tmp_path):
    cfg = tiny_config(METHODS.get("clm-ae"), tiny_bert_dir, dev_every=5, dev_metric="loss")
    with pytest.raises(BenchError, match="dev_corpus=FILE"):
        train(METHODS.get("clm-ae"), cfg, toy_corpus(), tmp_path / "run", show_progress=False, device="cpu")
    assert not (tmp_path / "run").exists()


def test_the_checkpoint_with_the_lowest_validation_loss_is_kept(tiny_bert_dir, tmp_path, monkeypatch):
    losses = iter([3.0, 1.0, 2.0, 4.0])  # evaluations at steps 5, 10, 15, 20: the best is step 10
    monkeypatch.setattr(validation, "validation_loss", lambda *a, **k: next(losses))
    method = METHODS.get("clm-ae")
    cfg = tiny_config(method, tiny_bert_dir, dev_every=5, dev_metric="loss", dev_corpus=str(_dev_file(tmp_path)))
    with one_thread():
        result = train(method, cfg, toy_corpus(), tmp_path / "run", show_progress=False, device="cpu")
    meta = json.loads((result.checkpoint / "method.json").read_text())
    assert meta["dev"]["step"] == 10 and meta["dev"]["score"] == -1.0 and meta["dev"]["metric"] == "loss"
    assert meta["steps_trained"] == 20


def test_validation_loss_is_the_eval_mode_loss_on_fixed_inputs(tiny_bert_dir, tmp_path):
    method = METHODS.get("mlm-ae")
    cfg = tiny_config(method, tiny_bert_dir, batch_size=4)
    texts = toy_corpus(10, seed=9)
    with one_thread():
        torch.manual_seed(0)
        module = method.build(cfg, torch.device("cpu")).train()
        first = validation.validation_loss(method, cfg, module, texts, torch.device("cpu"))
        assert module.training  # the mode is restored
        again = validation.validation_loss(method, cfg, module, texts, torch.device("cpu"))
        module.eval()
        with torch.no_grad():  # by hand: two whole batches of 4 (the last 2 sentences are no batch)
            by_hand = np.mean([float(module(method.collate(cfg, module.tokenizer, texts[k * 4:(k + 1) * 4],
                                                           np.random.default_rng([validation.VALIDATION_SEED, k]))
                                            )["loss"]) for k in range(2)])
    assert first == again == pytest.approx(by_hand, rel=1e-6)


def test_a_named_dev_metric_must_be_one_of_the_dev_task_metrics(tiny_bert_dir, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(toy_corpus(64)), encoding="utf-8")
    opts = RunOptions(methods=("simcse",), tasks="stsb", preset="smoke", model=str(tiny_bert_dir), corpus=(corpus,),
                      overrides=("dev_task=stsb", "dev_every=5", "dev_metric=recall@10"))
    with pytest.raises(ConfigError, match="not a metric of stsb"):
        plan_run(opts, ASSETS)
    opts = RunOptions(methods=("simcse",), tasks="stsb", preset="smoke", model=str(tiny_bert_dir), corpus=(corpus,),
                      overrides=("dev_every=5", "dev_metric=loss"))
    with pytest.raises(BenchError, match="dev_corpus=FILE"):
        plan_run(opts, ASSETS)


def test_the_dev_evaluator_reads_the_named_metric(monkeypatch, tmp_path):
    import usebench.eval.evaluate as evaluate_mod
    from usebench.eval.evaluate import Evaluation
    from usebench.run import unit

    ev = Evaluation("quora", "dev", {"ndcg@10": 0.5, "recall@10": 0.8}, "ndcg@10", {}, 3, "sha")
    monkeypatch.setattr(evaluate_mod, "evaluate", lambda *a, **k: ev)
    monkeypatch.setattr("usebench.eval.encoder.HFEncoder", lambda *a, **k: None)
    monkeypatch.setattr("usebench.eval.scorer.DenseScorer", lambda *a, **k: None)
    cfg = METHODS.get("simcse").config("smoke", dev_task="quora", dev_every=5, dev_metric="recall@10")
    spec = type("Spec", (), {"batch_size": 8, "device": "cpu"})()
    assert unit._dev_evaluator(cfg, spec, tmp_path, tmp_path / "home")(tmp_path) == 0.8
    cfg = cfg.replace(dev_metric=None)
    assert unit._dev_evaluator(cfg, spec, tmp_path, tmp_path / "home")(tmp_path) == 0.5


def test_seeds_as_a_count_or_a_list(tiny_bert_dir, tmp_path):
    assert parse_seeds("3") == (3, ()) and parse_seeds("1,7,42") == (3, (1, 7, 42)) and parse_seeds("42,") == (1, (42,))
    assert parse_seeds("0") == (1, (0,))  # no count means nothing: a lone 0 is the seed 0 (issue 53, item 7)
    for bad in ("a,b", ",", "-1"):
        with pytest.raises(ConfigError):
            parse_seeds(bad)
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(toy_corpus(64)), encoding="utf-8")
    opts = RunOptions(methods=("simcse",), tasks="stsb", preset="smoke", model=str(tiny_bert_dir), corpus=(corpus,),
                      seeds=3, seed_list=(1, 7, 42))
    assert [u.seed for u in plan_run(opts, ASSETS).units] == [1, 7, 42]
    with pytest.raises(ConfigError, match="distinct"):
        plan_run(RunOptions(methods=("simcse",), tasks="stsb", preset="smoke", model=str(tiny_bert_dir),
                            corpus=(corpus,), seeds=2, seed_list=(7, 7)), ASSETS)


def test_bench_run_dry_run_lists_the_thesis_seeds(tiny_bert_dir, tmp_path):
    from usebench.cli.main import main

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(toy_corpus(64)), encoding="utf-8")
    result = CliRunner().invoke(main, ["run", "--methods", "clm-ae", "--tasks", "stsb", "--corpus", str(corpus),
                                       "--model", str(tiny_bert_dir), "--preset", "smoke", "--seeds", "1,7,42",
                                       "--dry-run", "--data-root", str(ASSETS), "--results-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert all(f"__s{s}" in result.output for s in (1, 7, 42))


def test_the_validation_corpus_content_names_the_run(tiny_bert_dir, tmp_path):
    """dev_metric=loss: the held-out sentences choose the checkpoint, so their content (not the file's path) is
    part of the stage's identity and the run id; an edit after planning is refused at run time."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(toy_corpus(64)), encoding="utf-8")
    dev = _dev_file(tmp_path, 64)

    def plan():
        opts = RunOptions(methods=("clm-ae",), tasks="stsb", preset="smoke", model=str(tiny_bert_dir),
                          corpus=(corpus,), overrides=("dev_every=5", "dev_metric=loss", f"dev_corpus={dev}"))
        return plan_run(opts, ASSETS).units[0]

    first = plan()
    assert first.stages[0].data["dev_corpus_sha256"] == validation.corpus_sha256(validation.read_dev_corpus(
        METHODS.get("clm-ae").config("smoke", {"dev_corpus": str(dev), "dev_every": 5, "dev_metric": "loss"}), 1))
    dev.write_text("\n".join(toy_corpus(64, seed=3)) + "\n", encoding="utf-8")
    second = plan()
    assert second.run_id != first.run_id
    assert second.stages[0].data["dev_corpus_sha256"] != first.stages[0].data["dev_corpus_sha256"]
