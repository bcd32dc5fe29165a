"""The model card of a unit's checkpoint lists the unit's stored results and the command that trained it, and a later
`bench eval --model <checkpoint>` adds its result to the same card."""
from __future__ import annotations

import json
from pathlib import Path

from usebench.plan.eval_options import EvalOptions

from usebench.run.evaluation import evaluate_model
from usebench.plan.specs import RunOptions
from usebench.plan.planner import plan_run
from usebench.run.grid import run_benchmark
from usebench.plan.manifest import write_manifest
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
    # issue 53: shareable, so no `cd` to this machine's folder (the command is run from the repository's root)
    assert "bench run --methods simcse --tasks stsb" in card.text and f"cd {Path.cwd()}" not in card.text
    with one_thread():
        evaluate_model(EvalOptions(model=str(checkpoint), device="cpu", show_progress=False), "sts12", "test", ASSETS,
                       results)
    card = ModelCard.load(checkpoint / "README.md")
    assert sorted({r.dataset_name for r in card.data.eval_results}) == ["sts12", "stsb"]
    assert "bench run --methods simcse --tasks stsb" in card.text  # the training command stays


def test_the_card_is_shareable_and_lists_one_row_per_task_split_and_metric(tiny_bert_dir, tmp_path, monkeypatch):
    """Issue 53, item 6: the Reproduce section names no path of this machine, the data by their sha256 and release,
    the git commit; a later command (the same grid run again without --set log_every=1) does not rewrite it; `bench
    eval --model <run>/checkpoint` on a task the unit scored lists that task once."""
    import sys

    from click.testing import CliRunner
    from huggingface_hub import ModelCard

    from usebench.cli.main import main
    from usebench.store import git_sha

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    results = tmp_path / "results"
    args = ["run", "--methods", "simcse", "--tasks", "stsb", "--corpus", str(corpus), "--model", str(tiny_bert_dir),
            "--preset", "smoke", "--max-steps", "2", "--device", "cpu", "--data-root", str(ASSETS), "--results-dir",
            str(results), "--set", "batch_size=8", "--set", "max_length=32"]
    monkeypatch.chdir(tmp_path)
    for extra in (["--set", "log_every=1"], ["--eval-tasks", "sts12"]):  # the second: another grid, same unit
        monkeypatch.setattr(sys, "argv", [str(tmp_path / "venv" / "bin" / "bench"), *args, *extra])
        with one_thread():
            out = CliRunner().invoke(main, [*args, *extra])
        assert out.exit_code == 0, out.output
    (run,) = [p for p in results.iterdir() if p.name.startswith("simcse__")]
    with one_thread():
        again = CliRunner().invoke(main, ["eval", "--model", str(run / "checkpoint"), "--tasks", "stsb", "--device",
                                          "cpu", "--data-root", str(ASSETS), "--results-dir", str(results)])
    assert again.exit_code == 0, again.output
    text = (run / "checkpoint" / "README.md").read_text(encoding="utf-8")
    assert str(tmp_path) not in text and str(ASSETS) not in text  # no path of this machine
    command = text.split("```bash\n", 1)[1].split("\n```", 1)[0]
    assert command.startswith("bench run --methods simcse --tasks stsb --corpus corpus.txt --model ../tiny-bert")
    assert "--set log_every=1" in command and "--eval-tasks" not in command  # the training command, kept
    assert "--data-root" not in command and "--results-dir results" in command
    if git_sha():
        assert f"git checkout {git_sha()}" in text
    stored = json.loads((run / "stsb" / "test.json").read_text())
    assert f"- stsb/test: sha256 `{stored['task']['data_sha256']}`" in text
    card = ModelCard.load(run / "checkpoint" / "README.md")
    rows = [(r.dataset_name, r.dataset_split, r.metric_type) for r in card.data.eval_results]
    assert len(rows) == len(set(rows)) and {n for n, _, _ in rows} == {"stsb", "sts12"}
    assert text.count("| stsb | test | spearman (main) |") == 1
    index = json.loads((run / "checkpoint" / "usebench_card.json").read_text())
    assert len(index["weights_sha256"]) == 64 and index["git_sha"] == git_sha()
