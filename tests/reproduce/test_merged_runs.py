"""Options that would merge runs a recipe lists as distinct are refused before anything is planned (issue 39,
item 5): the thesis' batch-size study under a global ``--set batch_size=8`` became one unit, its three rows one
number."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.reproduce.reproduce_root import build_reproduce_root
from usebench.cli.main import main
from usebench.errors import ConfigError
from usebench.reproduce.status import load_checked_recipe
from usebench.reproduce.build import Given, build_plan


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return build_reproduce_root(tmp_path_factory.mktemp("merge-root"))


def _plan(root: Path, tables: list[str], **given):
    return build_plan(load_checked_recipe("thesis"), tables, Given(seeds=(1, ()), max_steps=2, **given), root)


def test_a_global_set_that_merges_the_batch_size_study_is_refused_naming_the_runs(root):
    with pytest.raises(ConfigError) as e:
        _plan(root, ["tables5.11-5.13"], overrides=("batch_size=8",))
    text = str(e.value)
    assert text.startswith("--set batch_size=8 would merge runs the recipe lists as distinct")
    assert "tables5.11-5.13 runs 1, 2, 3, 5 become one simcse unit" in text
    assert "--set batch_size=32 | --set batch_size=128 | --set batch_size=512" in text  # and run 5: batch 64, 100k
    assert "--allow-merged-runs" in text


def test_allowed_merges_are_named_in_the_plan_and_really_are_one_unit(root, tiny_bert_dir):
    # the batch-size study trains on 100k sentences (Table 5.11): --corpus-sizes 16 lets the fixtures hold it
    rp = _plan(root, ["tables5.11-5.13"], overrides=("batch_size=8",), allow_merged_runs=True, model=str(tiny_bert_dir),
               corpus_sizes=(16,))
    assert any(line.startswith("tables5.11-5.13 runs 1-5 become one simcse unit") for line in rp.merged)
    study = rp.runs[:3]
    assert all(r.run_ids for r in study) and len({tuple(r.run_ids) for r in study}) == 1  # what the check predicted, the planner did


def test_options_that_keep_the_runs_apart_pass(root):
    # no option at all; an option every run keeps distinct (max_length); a set for a method of no study run
    for given in ({}, {"overrides": ("max_length=16",)}, {"overrides": ("tsdae.batch_size=8",)}):
        assert _plan(root, ["tables5.11-5.13"], **given).merged == []


def test_the_corpus_sizes_option_merging_the_corpus_size_study_is_named(root):
    with pytest.raises(ConfigError, match=r"tables5.11-5.13 runs 4, 5 become one simcse unit; the recipe tells them apart "
                                          r"by --corpus-size 10000 \| --corpus-size 100000"):
        _plan(root, ["tables5.11-5.13"], corpus_sizes=(16,))


def test_the_command_refuses_before_planning_and_the_flag_lets_a_smoke_check_through(root, tmp_path):
    args = ["reproduce", "thesis", "--tables", "tables5.11-5.13", "--dry-run", "--seeds", "1", "--set", "batch_size=8",
            "--data-root", str(root), "--results-dir", str(tmp_path / "r")]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "would merge runs the recipe lists as distinct" in refused.output
    allowed = CliRunner().invoke(main, [*args, "--allow-merged-runs"])
    assert "merged by the options (one unit, one number in their rows): tables5.11-5.13 runs 1, 2, 3, 5" in allowed.output
