"""The chains `--setting` and `--labeled-sizes` build are the paper's rows (TSDAE paper §4, §5.5, §6, App. E):
no stage after BERT-flow, the labeled size cuts the target's supervised stage only, a supervised stage keeps the
pooling it starts from, Fig. 2 is read on the dev sets, and a typed chain is filed under the setting its shape
says."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.errors import ConfigError
from usebench.plan.specs import RunOptions
from usebench.plan.planner import plan_run

SMALL = ("batch_size=2", "max_length=16")


def _plan(tiny_bert_dir, corpus_file, root, **kw):
    base = dict(methods=("tsdae",), tasks="stsb", preset="smoke", model=str(tiny_bert_dir), corpus=(corpus_file,),
                max_steps=2, overrides=SMALL)
    return plan_run(RunOptions(**{**base, **kw}), root)


def _stage_cfg(unit, k):
    return unit.config["config"] if "config" in unit.config else unit.config["stages"][k]["config"]


def test_no_expanded_chain_continues_after_bertflow(tiny_bert_dir, corpus_file, grid_root):
    small = SMALL + ("bertflow.ddi_batch_size=8",)
    plan = _plan(tiny_bert_dir, corpus_file, grid_root, methods=("bertflow", "tsdae"), setting="all", overrides=small)
    labels = [u.label for u in plan.units]
    assert "bertflow>sbert-nli>sbert-stsb" not in labels and "tsdae>sbert-nli>sbert-stsb" in labels
    assert "sbert-nli>sbert-stsb>bertflow" in labels and "bertflow" in labels  # the rows the paper reports
    assert all("bertflow" not in u.chain[:-1] for u in plan.units)
    assert any("bertflow: left out of adapt-target-first" in n and "§5.5" in n for n in plan.notes)
    pre = _plan(tiny_bert_dir, corpus_file, grid_root, methods=("bertflow", "tsdae"), labeled_sizes=(2,),
                overrides=small)
    assert all("bertflow" not in u.chain[:-1] for u in pre.units)  # no stage after BERT-flow's flow
    assert [u.config.get("setting", "unsupervised") for u in pre.units if u.chain == ("bertflow",)] == ["unsupervised"]
    assert any("bertflow: left out of pretraining" in n for n in pre.notes)


def test_labeled_sizes_cut_only_the_target_tasks_supervised_stage(tiny_bert_dir, corpus_file, grid_root):
    plan = _plan(tiny_bert_dir, corpus_file, grid_root, methods=("nli-sts",), labeled_sizes=(3,))
    unit = next(u for u in plan.units if u.chain == ("sbert-nli", "sbert-stsb", "sbert-cosine"))
    nli, sts, target = unit.config["stages"]
    assert nli["config"]["labeled_size"] is None and "labeled_size" not in nli["data"]  # the full NLI+STSb recipe
    assert sts["config"]["labeled_size"] is None and sts["data"]["label"] == "stsb:train"
    assert target["config"]["labeled_size"] == 3 and target["data"]["labeled_size"] == 3
    assert unit.config["setting"] == "pretraining"


def test_a_supervised_stage_keeps_the_pooling_it_starts_from(tiny_bert_dir, corpus_file, grid_root, tmp_path):
    plan = _plan(tiny_bert_dir, corpus_file, grid_root, methods=("tsdae>nli-sts", "nli-sts>tsdae"))
    after, before = plan.units
    assert [s.pooling for s in after.stages] == ["cls", "cls", "cls"]  # TSDAE's CLS kept through NLI+STSb
    assert [_stage_cfg(after, k)["pooling"] for k in (1, 2)] == ["cls", "cls"]  # in the identity too
    assert [s.pooling for s in before.stages] == ["mean", "mean", "cls"]  # TSDAE builds its own (its script)
    override = _plan(tiny_bert_dir, corpus_file, grid_root, methods=("tsdae>nli-sts",),
                     overrides=SMALL + ("sbert-nli.pooling=max",))
    assert [s.pooling for s in override.units[0].stages] == ["cls", "max", "max"]
    result = CliRunner().invoke(main, ["run", "--methods", "tsdae>nli-sts", "--tasks", "stsb", "--corpus",
                                       str(corpus_file), "--model", str(tiny_bert_dir), "--preset", "smoke",
                                       "--max-steps", "2", "--data-root", str(grid_root), "--results-dir",
                                       str(tmp_path / "r"), *sum((["--set", s] for s in SMALL), []), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "cls > cls > cls" in result.output


def test_pretraining_is_read_on_dev_and_twitterpara_on_test(tiny_bert_dir, corpus_file, grid_root):
    from usebench.registry import TASKS
    from usebench.plan.specs import task_split

    plan = _plan(tiny_bert_dir, corpus_file, grid_root, tasks="twitterpara", labeled_sizes=(2,),
                 eval_tasks="stsb")
    unit = plan.units[0]
    assert plan.split == "dev" and unit.split == "dev" and unit.test_where_no_dev
    assert task_split(unit, TASKS.get("twitterpara")) == "test" and task_split(unit, TASKS.get("stsb")) == "dev"
    explicit = _plan(tiny_bert_dir, corpus_file, grid_root, tasks="twitterpara", labeled_sizes=(2,), split="test")
    assert explicit.units[0].split == "test" and not explicit.units[0].test_where_no_dev


def test_a_typed_chain_is_filed_under_the_setting_its_shape_says(tiny_bert_dir, corpus_file, grid_root):
    typed = _plan(tiny_bert_dir, corpus_file, grid_root, methods=("tsdae>nli-sts", "nli-sts", "tsdae"))
    settings = {u.label: u.config.get("setting", "unsupervised") for u in typed.units}
    assert settings == {"tsdae>sbert-nli>sbert-stsb": "adapt-target-first", "sbert-nli>sbert-stsb": "other-supervised",
                        "tsdae": "unsupervised"}
    expanded = _plan(tiny_bert_dir, corpus_file, grid_root, setting="adapt-target-first")
    assert expanded.units[0].run_id == typed.units[0].run_id  # the same unit, typed or expanded
    with pytest.raises(ConfigError, match="has the shape of the adapt-target-first setting, not unsupervised"):
        _plan(tiny_bert_dir, corpus_file, grid_root, methods=("tsdae>nli-sts",), setting="unsupervised")


def test_a_published_nli_sts_model_replaces_the_nli_sts_stages(tiny_bert_dir, corpus_file, grid_root):
    published = Path(tiny_bert_dir)
    plan = _plan(tiny_bert_dir, corpus_file, grid_root, setting="adapt-nli-first", nli_sts_model=str(published))
    (unit,) = plan.units
    assert unit.chain == ("tsdae",) and unit.start == str(published)
    assert unit.label == f"nli-sts[{published}]>tsdae" and unit.config["setting"] == "adapt-nli-first"
    assert unit.config["nli_sts_model"]["model"] == str(published) and len(unit.config["nli_sts_model"]["fingerprint"]) == 16
    trained = _plan(tiny_bert_dir, corpus_file, grid_root, setting="adapt-nli-first")
    assert trained.units[0].run_id != unit.run_id
    with pytest.raises(ConfigError, match="no chain of this run starts with the NLI\\+STSb stages"):
        _plan(tiny_bert_dir, corpus_file, grid_root, nli_sts_model=str(published))
    help_text = CliRunner().invoke(main, ["run", "--help"]).output
    assert "--nli-sts-model" in help_text and "PATH|HF_ID" in help_text


def test_the_dry_run_prints_a_published_start_in_the_chain_label(tiny_bert_dir, corpus_file, grid_root, tmp_path):
    """The label nli-sts[/abs/path]>tsdae is text, not rich markup: an absolute path crashed the table (a closing
    tag), a name such as [minilm] vanished from it."""
    args = ["run", "--methods", "tsdae", "--tasks", "stsb", "--corpus", str(corpus_file), "--model",
            str(tiny_bert_dir), "--preset", "smoke", "--setting", "adapt-nli-first", "--nli-sts-model",
            str(tiny_bert_dir), "--data-root", str(grid_root), "--results-dir", str(tmp_path / "r"), "--dry-run",
            "--max-steps", "2", *sum((["--set", s] for s in SMALL), [])]
    dry = CliRunner().invoke(main, args)
    assert dry.exit_code == 0, dry.output
    assert "nli-sts[/" in dry.output and Path(tiny_bert_dir).name in dry.output, dry.output
