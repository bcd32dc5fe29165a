"""Ownership and identity in the results store (issue 32): ``--force`` resets only what the named units own, and
a stage that starts from a checkpoint directory is named by that checkpoint's content, not its path."""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.plan.specs import RunOptions
from usebench.plan.planner import plan_run
from usebench.store.stage_ids import STAGES_HOME
from tests.methods.helpers import one_thread

SMALL = ("lr=1e-3", "batch_size=2", "max_length=16", "log_every=1", "save_every=0")
WORDS = "river house dog night ocean piano queen sun tree kite lemon grape island jungle kernel driver".split()


@pytest.fixture()
def twitter_root(grid_root, tmp_path) -> Path:
    """The grid fixtures plus TwitterPara's unlabeled train.txt (the release's layout)."""
    root = tmp_path / "root"
    shutil.copytree(grid_root, root)
    folder = root / "useb" / "data-train" / "twitterpara" / "unsupervised"
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(32)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 10))) for _ in range(24)]
    (folder / "train.txt").write_text("\n".join(dict.fromkeys(lines)) + "\n", encoding="utf-8")
    return root


@pytest.fixture()
def trainings(monkeypatch):
    """Output dir of every training the loop runs."""
    import usebench.train.loop as loop

    calls: list[Path] = []
    real = loop.train

    def counting(method, cfg, corpus, out_dir, **kw):
        calls.append(Path(out_dir))
        return real(method, cfg, corpus, out_dir, **kw)

    monkeypatch.setattr(loop, "train", counting)
    return calls


def _run(model: Path, root: Path, results: Path, methods: str, *more: str):
    args = ["run", "--methods", methods, "--tasks", "twitterpara", "--model", str(model), "--preset", "smoke",
            "--max-steps", "2", "--device", "cpu", "--data-root", str(root), "--results-dir", str(results),
            *sum((["--set", s] for s in SMALL), []), *more]
    with one_thread():
        return CliRunner().invoke(main, args)


def _units(results: Path) -> dict[str, Path]:
    return {json.loads((p / "config.json").read_text())["method"]: p for p in results.iterdir()
            if (p / "stages.json").is_file()}


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file() and p.name not in ("unit.log", ".lock")}


def test_force_on_a_chain_keeps_the_plain_unit_whose_directory_is_its_first_stage(tiny_bert_dir, twitter_root,
                                                                                  tmp_path, trainings):
    results = tmp_path / "results"
    assert _run(tiny_bert_dir, twitter_root, results, "tsdae").exit_code == 0
    chain = _run(tiny_bert_dir, twitter_root, results, "tsdae>nli-sts")
    assert chain.exit_code == 0, chain.output
    units = _units(results)
    tsdae, chained = units["tsdae"], units["tsdae>sbert-nli>sbert-stsb"]
    assert json.loads((chained / "stages.json").read_text())[0]["home"] == tsdae.name  # the shared first stage
    before = _snapshot(tsdae)
    assert {"method.json", "stages.json", "twitterpara/test.json", "checkpoint/method.json"} <= set(before)

    dry = _run(tiny_bert_dir, twitter_root, results, "tsdae>nli-sts", "--force", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert f"--force: stage home {tsdae.name} is kept (also used by {tsdae.name}" in dry.output
    assert f"tsdae: done ({tsdae.name})" in dry.output  # the plan shows the kept stage reused
    assert "sbert-nli: train" in dry.output and "sbert-stsb: train" in dry.output

    trainings.clear()
    forced = _run(tiny_bert_dir, twitter_root, results, "tsdae>nli-sts", "--force")
    assert forced.exit_code == 0, forced.output
    assert f"stage home {tsdae.name} is kept" in forced.output
    assert _snapshot(tsdae) == before  # the plain unit's results, export and stages.json are untouched
    assert len(trainings) == 2 and all(p.parent.name == STAGES_HOME for p in trainings)  # the chain's own stages
    assert (chained / "twitterpara" / "test.json").is_file()
    status = CliRunner().invoke(main, ["status", "--results-dir", str(results)])
    assert status.exit_code == 0 and "stopped" not in status.output


def test_force_naming_every_user_of_a_stage_resets_it(tiny_bert_dir, twitter_root, tmp_path):
    """Named together, the plain unit and the chain own the shared home: --force starts it over (once)."""
    from usebench.plan.stage_usage import force_plan

    results = tmp_path / "results"
    assert _run(tiny_bert_dir, twitter_root, results, "tsdae,tsdae>nli-sts").exit_code == 0
    opts = RunOptions(methods=("tsdae", "tsdae>nli-sts"), tasks="twitterpara", preset="smoke",
                      model=str(tiny_bert_dir), max_steps=2, overrides=SMALL, force=True)
    plan = plan_run(opts, twitter_root)
    forced = force_plan(plan.units, results)
    assert not forced.kept
    assert set(forced.reset) == {*(u.run_id for u in plan.units), *(s.home for u in plan.units for s in u.stages)}
    # the chain alone: its run directory and its two .stages homes, not the plain unit's
    alone = force_plan([u for u in plan.units if len(u.stages) > 1], results)
    tsdae_dir = next(u.run_id for u in plan.units if len(u.stages) == 1)
    assert tsdae_dir not in alone.reset and alone.kept == {tsdae_dir: (tsdae_dir,)}
    # the plain unit alone: its directory is the chain's first stage, so it is kept (and said), not reset
    chain_id = next(u.run_id for u in plan.units if len(u.stages) > 1)
    plain = force_plan([u for u in plan.units if len(u.stages) == 1], results)
    assert plain.reset == () and plain.kept == {tsdae_dir: (chain_id,)}
    assert f"also used by {chain_id}" in plain.notes()[0]


def _rewrite_weights(model: Path, seed: int) -> None:
    """New random weights of the same architecture at the same path."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    BertModel(BertConfig.from_pretrained(model)).save_pretrained(model)


def test_new_weights_at_the_same_nli_sts_model_path_are_a_new_stage(tiny_bert_dir, twitter_root, tmp_path):
    start = tmp_path / "published-sbert"
    shutil.copytree(tiny_bert_dir, start)
    results = tmp_path / "results"
    first = _run(tiny_bert_dir, twitter_root, results, "nli-sts>tsdae", "--nli-sts-model", str(start))
    assert first.exit_code == 0, first.output
    # one run directory, the unit's own: the stage after a published start is no unsupervised-looking unit
    assert [p.name for p in results.iterdir() if not p.name.startswith(".")] == [_only_unit(results).name]
    old = json.loads((_only_unit(results) / "stages.json").read_text())[0]["home"]
    assert old.startswith(STAGES_HOME + "/tsdae__")

    _rewrite_weights(start, seed=7)
    opts = RunOptions(methods=("nli-sts>tsdae",), tasks="twitterpara", preset="smoke", model=str(tiny_bert_dir),
                      max_steps=2, overrides=SMALL, nli_sts_model=str(start))
    unit = plan_run(opts, twitter_root).units[0]
    assert unit.stages[0].home != old  # not "done" from the stage trained on the old weights
    dry = _run(tiny_bert_dir, twitter_root, results, "nli-sts>tsdae", "--nli-sts-model", str(start), "--dry-run")
    assert "tsdae: train" in dry.output and "tsdae: done" not in dry.output


def _only_unit(results: Path) -> Path:
    (unit,) = _units(results).values()
    return unit


def test_new_weights_at_the_same_model_path_are_a_new_stage(tiny_bert_dir, twitter_root, tmp_path):
    model = tmp_path / "backbone"
    shutil.copytree(tiny_bert_dir, model)
    opts = RunOptions(methods=("tsdae", "tsdae>nli-sts"), tasks="twitterpara", preset="smoke", model=str(model),
                      max_steps=2, overrides=SMALL)
    before = plan_run(opts, twitter_root).units
    _rewrite_weights(model, seed=11)
    after = plan_run(opts, twitter_root).units
    for old, new in zip(before, after):
        assert old.run_id != new.run_id
        assert all(a.home != b.home for a, b in zip(old.stages, new.stages))
    assert before[0].config["starts"]["model"] != after[0].config["starts"]["model"]


def test_a_packaged_backbone_keeps_its_run_id(twitter_root):
    """The store reuses plain units by run id: an alias or hub backbone adds nothing to their identity."""
    opts = RunOptions(methods=("tsdae",), tasks="twitterpara", preset="smoke", max_steps=2, overrides=SMALL)
    (unit,) = plan_run(opts, twitter_root).units
    assert "starts" not in unit.config and "starts" not in unit.stages[0].identity
    assert unit.stages[0].home == unit.run_id


def test_new_weights_at_the_same_decoder_model_path_are_a_new_stage(tiny_bert_dir, twitter_root, tmp_path):
    decoder = tmp_path / "decoder"
    shutil.copytree(tiny_bert_dir, decoder)
    opts = RunOptions(methods=("tsdae",), tasks="twitterpara", preset="smoke", model=str(tiny_bert_dir),
                      max_steps=2, overrides=(*SMALL, "tsdae.tie_encoder_decoder=false",
                                              f"tsdae.decoder_model={decoder}"))
    (before,) = plan_run(opts, twitter_root).units
    _rewrite_weights(decoder, seed=13)
    (after,) = plan_run(opts, twitter_root).units
    assert set(before.config["starts"]) == {"model", "decoder_model"}
    assert before.config["starts"]["model"] == after.config["starts"]["model"]  # the encoder did not change
    assert before.config["starts"]["decoder_model"] != after.config["starts"]["decoder_model"]
    assert before.run_id != after.run_id and before.stages[0].home != after.stages[0].home
