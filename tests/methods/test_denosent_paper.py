"""DenoSent's `paper` and `official` presets are the published runs: back-translated paraphrases (paper Table 3:
79.33 with, 77.99 without), the README's dev metric (mean of STSb-dev and SICK-R-dev), fp32; without paraphrase
data a clear refusal when the run is planned, and the ablation only under its own name."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.cli.main import main
from usebench.errors import BenchError
from usebench.registry import METHODS
from tests.methods.helpers import toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def test_paper_and_official_need_paraphrases_and_the_ablation_is_named():
    method = METHODS.get("denosent")
    assert method.config("paper").paraphrases and method.config("official").paraphrases
    ablation = method.config("paper-no-bt")
    assert not ablation.paraphrases and ablation.replace(paraphrases=True) == method.config("paper")
    assert method.config("official").dev_task == "stsb,sickr"  # [DS] trainer.py eval_avg_sts
    assert "77.99" in method.preset_notes["paper-no-bt"]


def test_plain_sentences_under_the_paper_preset_are_refused_with_what_to_do():
    method = METHODS.get("denosent")
    with pytest.raises(BenchError, match=r"line 2 of the corpus.*bench data download denosent.*paper-no-bt"):
        method.filter_corpus(method.config("paper"), ["a\tb", "no paraphrase here"])
    assert method.filter_corpus(method.config("paper"), ["a\tb"]) == ["a\tb"]
    assert method.filter_corpus(method.config("paper-no-bt"), ["plain"]) == ["plain"]


def _run(tiny_bert_dir, corpus, results, *more):
    args = ["run", "--methods", "denosent", "--tasks", "stsb", "--corpus", str(corpus), "--model", str(tiny_bert_dir),
            "--max-steps", "2", "--device", "cpu", "--data-root", str(ASSETS), "--results-dir", str(results),
            "--set", "batch_size=4", "--set", "decoder_layers=1", "--set", "dev_every=0", *more]
    return CliRunner().invoke(main, args)


def test_the_refusal_comes_when_the_plan_is_built(tiny_bert_dir, tmp_path):
    corpus = tmp_path / "plain.txt"
    corpus.write_text("\n".join(toy_corpus(20)) + "\n", encoding="utf-8")
    result = _run(tiny_bert_dir, corpus, tmp_path / "r", "--preset", "paper", "--dry-run")
    assert result.exit_code == 2 and "bench data download denosent" in result.output, result.output
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").glob("denosent__*"))


def test_dev_selection_on_several_tasks_is_the_mean_of_their_scores(tiny_bert_dir, tmp_path):
    from usebench.eval.encoder import HFEncoder
    from usebench.eval.evaluate import evaluate
    from usebench.eval.scorer import DenseScorer
    from usebench.run.unit import _dev_evaluator

    class Spec:
        batch_size, device = 8, "cpu"

    cfg = METHODS.get("denosent").config("official")
    score = _dev_evaluator(cfg, Spec(), ASSETS, tmp_path)(Path(tiny_bert_dir))
    scorer = DenseScorer(HFEncoder(str(tiny_bert_dir), device="cpu", show_progress=False))
    each = [evaluate(t, scorer, "dev", ASSETS).main_score for t in ("stsb", "sickr")]
    assert score == pytest.approx(sum(each) / 2, abs=1e-9) and each[0] != each[1]
