"""The smaller things a new user met in the first hour (issue 53, item 7): `bench reproduce --help` lists every
packaged recipe; `--seeds 0` is the seed 0; Ctrl-C says how to resume and from which step; a dry run with every unit
skipped exits non-zero with the reasons and no empty tables; an unknown task is a short did-you-mean."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from tests.methods.helpers import one_thread, tiny_config, toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"
RECIPES = Path(__file__).resolve().parents[2] / "usebench" / "recipes"


def test_reproduce_help_lists_every_packaged_recipe():
    out = CliRunner().invoke(main, ["reproduce", "--help"], terminal_width=400)
    assert out.exit_code == 0
    listed = out.output.split("PAPER's recipe (", 1)[1].split(")", 1)[0]
    assert sorted(listed.split(", ")) == sorted(p.stem for p in RECIPES.glob("*.toml"))  # laptop included


@pytest.mark.parametrize("spec, parsed", [("0", (1, (0,))), ("3", (3, ())), ("42,", (1, (42,))),
                                          ("0,5", (2, (0, 5)))])
def test_seeds_take_a_count_a_list_or_the_seed_zero(spec, parsed):
    from usebench.cli.run import parse_seeds

    assert parse_seeds(spec) == parsed


@pytest.mark.parametrize("spec", ["-1", "two", "1,-3", ","])
def test_bad_seeds_are_refused_with_the_syntax(spec):
    from usebench.cli.run import parse_seeds
    from usebench.errors import ConfigError

    with pytest.raises(ConfigError, match="--seeds"):
        parse_seeds(spec)


def test_seeds_zero_plans_the_seed_zero(tiny_bert_dir, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    out = CliRunner().invoke(main, ["run", "--methods", "simcse", "--tasks", "stsb", "--corpus", str(corpus),
                                    "--model", str(tiny_bert_dir), "--preset", "smoke", "--max-steps", "2",
                                    "--seeds", "0", "--dry-run", "--data-root", str(ASSETS), "--results-dir",
                                    str(tmp_path / "r"), "--plan-out", str(tmp_path / "plan.json")])
    assert out.exit_code == 0, out.output
    import json

    assert [r["seed"] for r in json.loads((tmp_path / "plan.json").read_text()) if r["number"]] == [0]


def test_ctrl_c_in_training_says_from_which_step_it_resumes(tiny_bert_dir, tmp_path):
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS
    from usebench.train.loop import train

    method = METHODS.get("tsdae")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=9, save_every=3, log_every=1, max_length=16)

    def stop_at_5(step: int) -> None:
        if step == 5:
            raise KeyboardInterrupt

    with one_thread(), pytest.raises(KeyboardInterrupt) as caught:
        train(method, cfg, toy_corpus(32), tmp_path / "a", seed=0, show_progress=False, device="cpu",
              on_step=stop_at_5)
    (note,) = caught.value.__notes__
    assert note == (f"tsdae ({tmp_path / 'a'}) stopped after step 5 of 9; its last train state is step 3 (saved every "
                    "3 steps): running the same command again resumes it from step 3; steps 4-5 are trained again")
    with one_thread():
        resumed = train(method, cfg, toy_corpus(32), tmp_path / "a", seed=0, show_progress=False, device="cpu")
    assert resumed.resumed_from == 3  # what the note said


def test_ctrl_c_prints_the_note_and_the_command_that_resumes(monkeypatch):
    import sys

    def interrupted(*_a, **_k):
        error = KeyboardInterrupt()
        error.add_note("tsdae (results/x) stopped after step 5 of 9; its last train state is step 3 ...")
        raise error

    monkeypatch.setattr("usebench.cli.report.make_report", interrupted, raising=False)
    monkeypatch.setattr("usebench.report.make.make_report", interrupted)
    monkeypatch.setattr(sys, "argv", ["/somewhere/bin/bench", "report", "--table", "sts-table"])
    out = CliRunner().invoke(main, ["report", "--table", "sts-table"])
    assert out.exit_code == 130, out.output
    assert "stopped after step 5 of 9; its last train state is step 3" in out.output
    assert "to resume: bench report --table sts-table (finished units and results are kept)" in out.output


def test_a_dry_run_with_every_unit_skipped_exits_non_zero_with_the_reasons(tiny_bert_dir, tmp_path):
    # the test assets hold no unlabeled training corpus for twitterpara: every unit is skipped
    out = CliRunner().invoke(main, ["run", "--methods", "simcse", "--tasks", "twitterpara", "--model",
                                    str(tiny_bert_dir), "--preset", "smoke", "--dry-run", "--data-root", str(ASSETS),
                                    "--results-dir", str(tmp_path / "r")])
    assert out.exit_code == 1, out.output
    assert "nothing to plan: every unit was skipped (train on twitterpara: " in out.output
    assert "plan by chain and setting" not in out.output and "units" not in out.output.split("error:")[0]


def test_an_unknown_task_is_a_short_did_you_mean():
    out = CliRunner().invoke(main, ["eval", "--tasks", "stbs"])
    assert out.exit_code == 2 and "did you mean 'stsb'" in out.output
    assert "`bench tasks` lists them" in out.output and len(out.output) < 600, len(out.output)
    assert "beir-cqadupstack-android" not in out.output
