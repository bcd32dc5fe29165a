"""Issue 29's planner items: what a unit records for its table row. A unit of a chain is named by its target's
data (never the NLI+STSb data every target shares), values the planner derives never name a variant, a chain
carries the variant of its stages, `--labeled-sizes` trains each method alone too (Fig. 2's flat line, Table 10's
target), and the dry run prints the split each task is read on. The end-to-end test runs the TSDAE paper's
`--setting all` command on two targets with an extra evaluation task, as docs/papers/tsdae.md documents it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.stats.table_rows import index_results, row_key
from usebench.store import iter_results
from usebench.plan.specs import RunOptions
from usebench.plan.planner import plan_run
from tests.grid_roots import root_with_train_corpora

SMALL = ("batch_size=2", "max_length=16")
USEB = ("askubuntu", "cqadupstack", "twitterpara", "scidocs")


@pytest.fixture(scope="module")
def useb_root(grid_root, tmp_path_factory) -> Path:
    """The grid fixtures plus a small unlabeled train.txt per USEB task (the release's layout)."""
    return root_with_train_corpora(grid_root, tmp_path_factory.mktemp("useb-root"), USEB)


def _plan(model, root, **kw):
    base = dict(methods=("tsdae",), tasks="twitterpara,askubuntu", preset="smoke", model=str(model), max_steps=2,
                overrides=SMALL)
    return plan_run(RunOptions(**{**base, **kw}), root)


def test_a_chain_unit_is_named_by_its_targets_data(tiny_bert_dir, useb_root):
    plan = _plan(tiny_bert_dir, useb_root, setting="adapt-nli-first")
    assert [(u.task, u.train_corpus) for u in plan.units] == [("twitterpara", "twitterpara"),
                                                              ("askubuntu", "askubuntu")]
    assert [u.row for u in plan.units] == ["sbert-nli>sbert-stsb>tsdae (twitterpara)",
                                           "sbert-nli>sbert-stsb>tsdae (askubuntu)"]
    first = _plan(tiny_bert_dir, useb_root, setting="adapt-target-first")
    assert {u.train_corpus for u in first.units} == {"twitterpara", "askubuntu"}


def test_planner_derived_values_never_name_a_variant(tiny_bert_dir, useb_root):
    """The upper bound's dev task is the target's ("dev_task=askubuntu") or none where the task has no dev split
    (TwitterPara): derived, so both units are one experiment of the default preset."""
    plan = plan_run(RunOptions(methods=("tsdae",), tasks="twitterpara,askubuntu", setting="supervised",
                               model=str(tiny_bert_dir), overrides=("sbert-cosine.batch_size=2",
                                                                     "sbert-mnrl.batch_size=2")), useb_root)
    assert {u.chain for u in plan.units} == {("sbert-cosine",), ("sbert-mnrl",)}
    assert {u.variant for u in plan.units} == {"paper + batch_size=2"}  # the user's override, nothing derived
    smoke = _plan(tiny_bert_dir, useb_root, setting="supervised", overrides=())
    assert {u.variant for u in smoke.units} == {"smoke + max_steps=2"}


def test_a_variant_names_every_resolved_key_that_differs_from_the_preset(tiny_bert_dir, useb_root):
    plan = _plan(tiny_bert_dir, useb_root, tasks="twitterpara", preset=None, max_steps=10,
                 overrides=("tsdae.noise_ratio=0.3",) + SMALL)
    (unit,) = plan.units
    assert unit.variant == "paper + batch_size=2 max_length=16 max_steps=10 noise_ratio=0.3"
    default = _plan(tiny_bert_dir, useb_root, tasks="twitterpara", preset=None, max_steps=None, overrides=())
    assert default.units[0].variant == ""  # the default preset as is


def test_a_chain_carries_its_stages_variant(tiny_bert_dir, useb_root):
    """A smoke and a paper run of tsdae>nli-sts in one store are two rows, never one MixedRunsError."""
    smoke = _plan(tiny_bert_dir, useb_root, tasks="twitterpara", methods=("tsdae>nli-sts",))
    paper = _plan(tiny_bert_dir, useb_root, tasks="twitterpara", methods=("tsdae>nli-sts",), preset=None,
                  max_steps=None, overrides=("batch_size=2",))
    assert smoke.units[0].variant == "smoke + batch_size=2 max_length=16 max_steps=2"
    assert paper.units[0].variant == "paper + batch_size=2"
    mixed = _plan(tiny_bert_dir, useb_root, tasks="twitterpara", methods=("tsdae>nli-sts",),
                  overrides=SMALL + ("sbert-nli.lr=1e-05",))
    assert mixed.units[0].variant.startswith("tsdae: smoke + ") and "sbert-nli: smoke + " in mixed.units[0].variant
    assert "lr=1e-05" in mixed.units[0].variant


def test_labeled_sizes_train_each_method_alone_on_the_same_split(tiny_bert_dir, useb_root):
    plan = _plan(tiny_bert_dir, useb_root, tasks="askubuntu", labeled_sizes=(2, 4),
                 overrides=SMALL + ("sbert-mnrl.batch_size=2",))
    shapes = sorted((u.chain, u.config.get("labeled_size"), u.config.get("setting", "unsupervised"))
                    for u in plan.units)
    assert shapes == [(("sbert-mnrl",), 2, "pretraining"), (("sbert-mnrl",), 4, "pretraining"),
                      (("tsdae",), None, "unsupervised"),  # once, not once per size: Fig. 2's flat line
                      (("tsdae", "sbert-mnrl"), 2, "pretraining"), (("tsdae", "sbert-mnrl"), 4, "pretraining")]
    assert {u.split for u in plan.units} == {"dev"}  # every unit on the split the curve is read on


def test_the_dry_run_prints_the_split_each_task_is_read_on(tiny_bert_dir, useb_root, tmp_path):
    args = ["run", "--methods", "tsdae", "--tasks", "twitterpara,askubuntu", "--model", str(tiny_bert_dir),
            "--preset", "smoke", "--max-steps", "2", "--labeled-sizes", "2", "--data-root", str(useb_root),
            "--results-dir", str(tmp_path / "r"), "--dry-run", "--set", "batch_size=2", "--set", "max_length=16"]
    dry = CliRunner().invoke(main, args)
    assert dry.exit_code == 0, dry.output
    assert "twitterpara (test)" in dry.output and "twitterpara (dev)" not in dry.output  # no dev split: test
    assert "askubuntu (dev)" in dry.output
    assert "smoke + batch_size=2" in dry.output  # the variant column


@pytest.mark.timeout(600)
def test_the_documented_setting_all_command_runs_and_reports(tiny_bert_dir, useb_root, tmp_path):
    """docs/papers/tsdae.md's Table 2 command on two targets with an extra evaluation task: every unit trains,
    the summary splits the NLI+STS → target rows by target (it exited 2 after training everything), and the
    report builds Table 2's blocks with the domain-adaptation rows beside their targets."""
    results = tmp_path / "r"
    args = ["run", "--methods", "tsdae", "--tasks", "twitterpara,askubuntu", "--eval-tasks", "stsb", "--seeds", "1",
            "--setting", "all", "--model", str(tiny_bert_dir), "--preset", "smoke", "--max-steps", "1",
            "--data-root", str(useb_root), "--results-dir", str(results), "--device", "cpu",
            *sum((["--set", s] for s in SMALL + ("sbert-cosine.batch_size=2", "sbert-mnrl.batch_size=2")), [])]
    run = CliRunner().invoke(main, args)
    assert run.exit_code == 0, run.output
    records = [json.loads(p.read_text()) for p in results.glob("*/stsb/test.json")]
    nli_first = [r for r in records if r["method"]["name"] == "sbert-nli>sbert-stsb>tsdae"]
    assert sorted(r["method"]["train_corpus"] for r in nli_first) == ["askubuntu", "twitterpara"]
    keys = {row_key(r) for r in nli_first}
    assert {(k.group, k.method, k.corpus) for k in keys} == {("adapt-nli-first", "tsdae", "askubuntu"),
                                                             ("adapt-nli-first", "tsdae", "twitterpara")}
    index = index_results(iter_results(results))
    upper = [k for k in index.rows if k.group == "supervised"]
    assert {k.variant for k in upper} == {"smoke + batch_size=2 max_length=16 max_steps=1"}
    report = CliRunner().invoke(main, ["report", "--results-dir", str(results), "--out", str(tmp_path / "o"),
                                       "--table", "paper-table2,sts-table,useb-other-chains", "--format", "md",
                                       "--no-plots"])
    assert report.exit_code == 0, report.output
    table2 = (tmp_path / "o" / "paper-table2.md").read_text()
    assert "SBERT-supervised" in table2 and "Domain adaptation: NLI+STS -> target task" in table2


def test_tsdae_on_an_encoder_decoder_backbone_is_settled_at_plan_time(useb_root, tmp_path):
    """BART decodes with its own decoder (paper Table 4): the plan turns the tied decoder off with a note (the unit
    failed on it after planning), and refuses a tied decoder the user asked for before anything trains."""
    from usebench.errors import ConfigError
    from tests.methods.tiny_models import build_tiny

    bart = build_tiny("bart", tmp_path / "bart")
    plan = _plan(bart, useb_root, tasks="twitterpara")
    (unit,) = plan.units
    assert unit.config["config"]["tie_encoder_decoder"] is False
    assert unit.variant == "smoke + batch_size=2 max_length=16 max_steps=2"  # derived: no variant of its own
    assert any("decodes with its own decoder" in n and "tie_encoder_decoder=false" in n for n in plan.notes)
    with pytest.raises(ConfigError, match="encoder-decoder checkpoint"):
        _plan(bart, useb_root, tasks="twitterpara", overrides=SMALL + ("tie_encoder_decoder=true",))
