"""``--eval-pooling``: a unit whose final encoder is scored with another pooling than its method's is its own row
(its run id and variant say so) on the same training: its stages are the plain unit's, trained once."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.errors import ConfigError
from usebench.plan.planner import plan_run
from usebench.plan.specs import RunOptions
from usebench.store import iter_results
from tests.methods.helpers import one_thread, toy_corpus
from tests.run.test_stage_reuse import SMALL, trainings  # noqa: F401  (the fixture)


def _args(tiny_bert_dir: Path, corpus: Path, root: Path, results: Path, *more: str) -> list[str]:
    return ["run", "--methods", "tsdae", "--tasks", "stsb", "--corpus", str(corpus), "--model", str(tiny_bert_dir),
            "--preset", "smoke", "--max-steps", "2", "--device", "cpu", "--data-root", str(root), "--results-dir",
            str(results), *sum((["--set", s] for s in SMALL), []), *more]


def test_a_second_pooling_of_the_same_training_is_its_own_row_and_trains_nothing(tiny_bert_dir, grid_root, tmp_path,
                                                                                   trainings):  # noqa: F811
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(20)) + "\n", encoding="utf-8")
    results = tmp_path / "results"
    with one_thread():
        plain = CliRunner().invoke(main, _args(tiny_bert_dir, corpus, grid_root, results))
        assert plain.exit_code == 0, plain.output
        other = CliRunner().invoke(main, _args(tiny_bert_dir, corpus, grid_root, results, "--eval-pooling", "mean"))
    assert other.exit_code == 0, other.output
    assert [m for m, _ in trainings] == ["tsdae"]  # the second unit reused the first one's training
    records = {r.record["method"]["pooling"]: r.record for r in iter_results(results)}
    assert set(records) == {"cls", "mean"}  # TSDAE's own CLS, and mean pooling of the same weights
    assert records["mean"]["method"]["variant"].endswith(" eval_pooling=mean")  # after the smoke preset's overrides
    assert records["cls"]["method"]["variant"] + " eval_pooling=mean" == records["mean"]["method"]["variant"]
    assert records["mean"]["config"]["eval_pooling"] == "mean" and "eval_pooling" not in records["cls"]["config"]
    units = [p for p in results.iterdir() if (p / "stages.json").is_file()]
    homes = {json.loads((p / "stages.json").read_text())[0]["home"] for p in units}
    assert len(units) == 2 and len(homes) == 1  # two run directories, one stage home
    assert records["mean"]["scores"] != records["cls"]["scores"]


def test_the_eval_pooling_must_be_a_built_in_one(grid_root):
    with pytest.raises(ConfigError, match="--eval-pooling 'cls_mlp'"):
        plan_run(RunOptions(methods=("tsdae",), tasks="stsb", preset="smoke", eval_pooling="cls_mlp"), grid_root)


def test_a_recipe_run_takes_eval_pooling_and_writes_it_into_its_command():
    from usebench.reproduce.recipes import RunEntry

    entry = RunEntry(methods=("simcse",), tasks="twitterpara", preset="laptop", eval_pooling="cls")
    assert "--eval-pooling cls" in entry.command()
