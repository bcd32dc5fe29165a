"""One writer of result records (usebench/run/record_writer.py), one rule: a NaN main score fails its task the same
way under `bench eval` and in a run unit: nothing is stored for it, the task after it is still scored and stored,
and the command (or the unit) fails naming the task."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from usebench.errors import BenchError, NonFiniteScoreError
from usebench.eval.encoder import HFEncoder
from usebench.plan.planner import plan_run
from usebench.plan.specs import RunOptions
from usebench.run import unit as unit_module
from usebench.plan.eval_options import EvalOptions
from usebench.run.evaluation import evaluate_model, raise_unless_done
from usebench.store.unit_state import UnitResult
from tests.methods.helpers import toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"
NAN = "main score spearman = nan is not a finite number"


@pytest.fixture()
def equal_vectors(monkeypatch):
    """Every text encoded to the same vector: every cosine equal, so Spearman is NaN (TwitterPara's AP stays finite)."""
    monkeypatch.setattr(HFEncoder, "encode", lambda self, texts: np.ones((len(texts), 4), np.float32))


def test_bench_eval_stores_the_finite_task_and_fails_the_nan_one(tiny_bert_dir, tmp_path, equal_vectors):
    outcome = evaluate_model(EvalOptions(model=str(tiny_bert_dir)), "stsb,twitterpara", "test", ASSETS, tmp_path)
    assert [t for t, _ in outcome.failed] == ["stsb"] and NAN in outcome.failed[0][1]
    stored = sorted(p.relative_to(tmp_path / outcome.run_id).as_posix() for p in tmp_path.rglob("*/test.json"))
    assert stored == ["twitterpara/test.json"]
    with pytest.raises(BenchError, match="1 task"):
        raise_unless_done(outcome, 2, "see above")


def test_a_unit_stores_the_finite_task_and_fails_the_nan_one(tiny_bert_dir, tmp_path, equal_vectors):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    opts = RunOptions(methods=("simcse",), tasks="stsb", eval_tasks="twitterpara", seeds=1, preset="smoke",
                      model=str(tiny_bert_dir), corpus=(corpus,), max_steps=2, show_progress=False, device="cpu")
    spec = plan_run(opts, ASSETS).units[0]
    results = tmp_path / "results"
    result = UnitResult(spec.run_id, results / spec.run_id, spec.row)
    with pytest.raises(NonFiniteScoreError, match=rf"1 task\(s\) failed and stored nothing: stsb: .*{NAN}"):
        unit_module._evaluate(spec, Path(tiny_bert_dir), ASSETS, results, result)
    stored = sorted(p.relative_to(results / spec.run_id).as_posix() for p in results.rglob("*/test.json"))
    assert stored == ["twitterpara/test.json"] and [t for t, _ in result.results] == ["twitterpara"]
