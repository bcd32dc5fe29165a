"""The supervised stages through `bench run`: a pre-training grid (`--labeled-sizes`) on the tiny model ends in
results the report draws as the Fig. 2 curve, and a labeled size larger than the labeled set is refused before
anything trains, naming the option."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from usebench.cli.main import main
from tests.methods.helpers import toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"
PAIRS = ASSETS / "labeled_root" / "useb" / "extra" / "twitter_url_train_tok"  # 6 graded pairs
TINY = ("lr=1e-3", "batch_size=2", "max_length=32", "log_every=1", "save_every=0")


def _args(tiny_bert_dir, tmp_path, *more):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(20)) + "\n", encoding="utf-8")
    return ["run", "--methods", "tsdae", "--tasks", "stsb", "--corpus", str(corpus), "--model", str(tiny_bert_dir),
            "--preset", "smoke", "--max-steps", "2", "--device", "cpu", "--data-root", str(ASSETS),
            "--results-dir", str(tmp_path / "results"), "--set", f"sbert-cosine.train_data={PAIRS}",
            *sum((["--set", t] for t in TINY), []), *more]


def test_labeled_sizes_larger_than_the_set_fail_before_training(tiny_bert_dir, tmp_path):
    result = CliRunner().invoke(main, _args(tiny_bert_dir, tmp_path, "--labeled-sizes", "2,9"))
    assert result.exit_code == 2, result.output
    assert "--labeled-sizes 9:" in result.output and "has only 6 labeled examples" in result.output
    assert not list((tmp_path / "results").glob("*/stsb")), "a unit trained before the bad size was found"


def test_pretraining_grid_feeds_the_report(tiny_bert_dir, tmp_path):
    from usebench.report.pretraining import curve_points
    from usebench.stats.table_rows import index_results
    from usebench.store import iter_results

    result = CliRunner().invoke(main, _args(tiny_bert_dir, tmp_path, "--labeled-sizes", "4"))
    assert result.exit_code == 0, result.output
    assert not list((tmp_path / "results").glob("*/stsb/test.json"))  # Fig. 2 is read on the dev sets
    records = [json.loads(p.read_text()) for p in (tmp_path / "results").glob("*/stsb/dev.json")]
    assert sorted((r["method"]["name"], r["config"].get("labeled_size")) for r in records) == [
        ("sbert-cosine", 4), ("tsdae", None), ("tsdae>sbert-cosine", 4)]  # TSDAE alone: Fig. 2's flat line
    assert {r["config"].get("setting") for r in records if r["method"]["name"] != "tsdae"} == {"pretraining"}
    stage = next(r for r in records if r["method"]["name"] == "sbert-cosine")["config"]["stages"][0]["data"]
    assert stage["label"].startswith(str(PAIRS)) and stage["examples"] == 6  # the full set's size and hash
    points = curve_points(index_results(iter_results(tmp_path / "results")))
    # one point per pre-training method ("sbert" = from the backbone), read on the dev split by default
    assert sorted((p.method, p.size, p.split) for p in points) == [("sbert", 4, "dev"), ("tsdae", 4, "dev")]


def test_the_target_dev_split_is_dropped_where_the_task_has_none(tiny_bert_dir, tmp_path):
    """The paper preset stops early on the target task's dev split; TwitterPara has none, so the plan turns
    early stopping off for it and says so (instead of refusing the supervised setup)."""
    from usebench.plan.specs import RunOptions
    from usebench.plan.planner import plan_run

    opts = RunOptions(methods=("tsdae",), tasks="twitterpara", setting="supervised", model=str(tiny_bert_dir),
                      overrides=(f"sbert-cosine.train_data={PAIRS}", "sbert-cosine.batch_size=2"))
    plan = plan_run(opts, ASSETS)
    (unit,) = plan.units
    assert unit.chain == ("sbert-cosine",) and unit.config["setting"] == "supervised"
    stage = unit.config["config"] if "config" in unit.config else unit.config["stages"][0]["config"]
    assert stage["dev_task"] is None and stage["dev_every"] == 0
    assert any("twitterpara: the task has no dev split, so no early stopping" in n for n in plan.notes)
