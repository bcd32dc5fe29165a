"""The model card of a unit's checkpoint lists the unit's stored results and the command that trained it, and a later
`bench eval --model <checkpoint>` adds its result to the same card."""
from __future__ import annotations

import json
from pathlib import Path

from usebench.run.evaluation import EvalOptions, evaluate_model
from usebench.plan.specs import RunOptions
from usebench.plan.planner import plan_run
from usebench.run.grid import run_benchmark
from usebench.run.manifest import write_manifest
from tests.methods.helpers import one_thread, toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def test_a_units_card_lists_its_results_and_a_later_evaluation_refreshes_it(tiny_bert_dir, tmp_path):
    from huggingface_hub import ModelCard

    (tmp_path / "corpus.txt").write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    opts = RunOptions(methods=("simcse",), tasks="stsb", seeds=1, preset="smoke", model=str(tiny_bert_dir),
                      corpus=(tmp_path / "corpus.txt",), max_steps=2, show_progress=False, device="cpu",
                      overrides=("batch_size=8", "max_length=32", "save_every=0"))
    plan = plan_run(opts, ASSETS)
    results = tmp_path / "results"
    write_manifest(plan, results, "local", argv=["bench", "run", "--methods", "simcse", "--tasks", "stsb"])
    with one_thread():
        (unit,) = run_benchmark(opts, ASSETS, results, plan=plan).units
    checkpoint = unit.run_dir / "checkpoint"
    card = ModelCard.load(checkpoint / "README.md")
    stored = json.loads((unit.run_dir / "stsb" / "test.json").read_text())
    assert {r.metric_type: r.metric_value for r in card.data.eval_results} == stored["scores"]
    assert f"cd {Path.cwd()} && bench run --methods simcse --tasks stsb" in card.text
    with one_thread():
        evaluate_model(EvalOptions(model=str(checkpoint), device="cpu", show_progress=False), "sts12", "test", ASSETS,
                       results)
    card = ModelCard.load(checkpoint / "README.md")
    assert sorted({r.dataset_name for r in card.data.eval_results}) == ["sts12", "stsb"]
    assert "bench run --methods simcse --tasks stsb" in card.text  # the training command stays
