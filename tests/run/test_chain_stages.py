"""Every stage of a chain changes the weights it starts from (issue 39, item 6).

With the old 4-pair AllNLI fixture a supervised stage took a single step, at warm-up's learning rate 0, and exported
its input unchanged: the three TSDAE blocks of Table 2 showed the same scores and no test saw a chain that skips a
stage. The chains' labeled data are now tests/assets/chains
(:func:`tests.reproduce.reproduce_root.write_chain_fixtures`): 400 NLI triplets and 48 STSb pairs, enough for the
recipes' own presets to take steps past warm-up.

- the fixtures are what their generator writes (so they can be rebuilt, never edited by hand);
- every stage every recipe plans on the fixture root, with its own presets and with the smoke options the
  end-to-end tests use, takes at least one optimizer step at a learning rate above 0, and the TSDAE paper's two
  domain-adaptation chains are planned with the recipe's presets (they were refused: 4 triplets < one batch);
- the TSDAE paper's chains trained on the fixtures, supervised stages with their published presets: each stage
  starts from the previous stage's export (the first from the backbone), its export differs from that start in
  some weight, and the unit evaluates the last stage's export;
- that check fails when a stage is skipped: a stage trained at learning rate 0 (the issue's symptom), and a stage
  whose export is its input (a chain that drops a stage).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.reproduce.reproduce_root import CHAINS, build_reproduce_root, write_chain_fixtures
from usebench.cli.main import main

GLOVE = Path(__file__).resolve().parents[1] / "assets" / "wordvec" / "tiny_glove.txt"
SMALL = ["--preset", "smoke", "--seeds", "1", "--max-steps", "2", "--set", "batch_size=8", "--set", "max_length=16",
         "--set", "sbert-nli.batch_size=2", "--set", "sbert-stsb.batch_size=2", "--set", "paser.synonym_ratio=0",
         "--labeled-sizes", "2,4", "--corpus-sizes", "16", "--allow-merged-runs"]  # tests/reproduce/test_reproduce.py's
# The TSDAE paper's domain adaptations (Table 2): NLI+STSb then TSDAE, TSDAE then NLI+STSb.
ADAPTATIONS = "nli-sts>tsdae,tsdae>nli-sts"


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return build_reproduce_root(tmp_path_factory.mktemp("chain-root"))


# --- the fixtures -----------------------------------------------------------------------------------------------

def test_the_chain_fixtures_are_what_their_generator_writes(tmp_path):
    write_chain_fixtures(tmp_path)
    for name in ("AllNLI.tsv.gz", "sts-train.csv"):
        assert (tmp_path / name).read_bytes() == (CHAINS / name).read_bytes(), (
            f"tests/assets/chains/{name} is not what write_chain_fixtures writes: "
            "python -m tests.reproduce.reproduce_root")


def test_the_root_holds_them_in_the_releases_layout(root):
    import numpy as np

    from usebench.data.labeled import nli_triplets, read_allnli, read_stsb_train

    rows = read_allnli(root / "nli/AllNLI.tsv")
    assert len(rows) == 600 and len(nli_triplets(rows, np.random.default_rng(0))) == 400
    assert len(read_allnli(root / "nli/AllNLI.tsv", "dev")) == 12
    pairs = read_stsb_train(root / "sts/original/stsbenchmark/sts-train.csv")
    assert len(pairs) == 48 and {round(p[2] * 5) for p in pairs} >= {0, 1, 3, 4}


# --- every planned stage takes a step at a learning rate above 0 ------------------------------------------------

def _plan(paper: str, root: Path, model: Path, options: list[str]):
    """`bench reproduce PAPER --dry-run`'s plan (captured), on ``root``."""
    import usebench.reproduce.build as reproduce

    captured = {}
    build = reproduce.build_plan

    def capture(*args, **kwargs):
        captured["rp"] = build(*args, **kwargs)
        return captured["rp"]

    glove = ["--glove", str(GLOVE)] if paper == "tsdae" else []
    reproduce.build_plan = capture
    try:
        result = CliRunner().invoke(main, ["reproduce", paper, "--dry-run", "--model", str(model), *options, *glove,
                                           "--data-root", str(root), "--results-dir", str(root / "no-results")],
                                    catch_exceptions=False)
    finally:
        reproduce.build_plan = build
    assert "rp" in captured, result.output
    return captured["rp"]


def _frozen_stages(units) -> list[str]:
    """Stages whose every optimizer step has learning rate 0 (or that take no step): they export their input."""
    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench.registry import METHODS
    from usebench.train.optim import lr_multiplier

    frozen = []
    for unit in units:
        for k, stage in enumerate(unit.stages):
            cfg = METHODS.get(stage.method).config(stage.preset, stage.values)
            total = stage.steps or 0
            factor = lr_multiplier(cfg, total)
            if not (cfg.lr > 0 and any(factor(step) > 0 for step in range(min(total, 10_000)))):
                frozen.append(f"{unit.run_id} stage {k + 1} {stage.method}: {total} step(s), lr {cfg.lr} x "
                              f"{[factor(s) for s in range(min(total, 3))]}")
    return frozen


@pytest.mark.parametrize("paper", ["tsdae", "denosent", "paser", "thesis"])
@pytest.mark.parametrize("options", [[], SMALL], ids=["own-presets", "smoke"])
def test_every_planned_stage_takes_a_step_past_warm_up(paper, options, root, tiny_bert_dir):
    rp = _plan(paper, root, tiny_bert_dir, [*options] if options else ["--seeds", "1", "--allow-merged-runs"])
    assert rp.units
    assert not _frozen_stages(rp.units), "\n".join(_frozen_stages(rp.units))


def test_the_domain_adaptation_chains_are_planned_with_the_recipes_presets(root, tiny_bert_dir):
    """With 4 NLI triplets the SBERT-nli-v2 recipe's batch of 128 could not be filled: the chains were refused."""
    rp = _plan("tsdae", root, tiny_bert_dir, ["--tables", "table2", "--seeds", "1"])
    refused = [f"{pr.command}: {pr.error or pr.blocked}" for pr in rp.runs if "--setting all" in pr.command
               and (pr.error or pr.blocked)]
    assert not refused, refused
    chains = {u.chain for u in rp.units}
    for method in ("tsdae", "mlm", "ct", "simcse", "bertflow"):
        assert ("sbert-nli", "sbert-stsb", method) in chains
    for method in ("tsdae", "mlm", "ct", "simcse"):
        assert (method, "sbert-nli", "sbert-stsb") in chains
    nli = {s.steps for u in rp.units for s in u.stages if s.method == "sbert-nli"}
    assert nli == {3}, nli  # floor(400 triplets / 128): one epoch of full batches, the first at warm-up's lr 0


# --- trained chains: each stage moves the weights ----------------------------------------------------------------

def _weights(checkpoint: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(checkpoint / "model.safetensors"))


def check_every_stage_moved(results: Path, run_id: str, backbone: Path, chain: list[str]) -> None:
    """The chain's stages in order (stages.json), each starting from the previous stage's export (the first from the
    backbone) and exporting weights that differ from that start; the unit's own method.json is the last export's."""
    import torch

    stages = json.loads((results / run_id / "stages.json").read_text(encoding="utf-8"))
    assert [s["method"] for s in stages] == chain, f"{run_id}: stages {[s['method'] for s in stages]}, not {chain}"
    start = backbone
    for k, stage in enumerate(stages):
        export = results / stage["home"] / "checkpoint"
        where = f"{run_id} stage {k + 1} ({stage['method']})"
        assert (export / "method.json").is_file(), f"{where}: {export} holds no method.json: no stage exported it"
        meta = json.loads((export / "method.json").read_text(encoding="utf-8"))
        assert Path(meta["base_model"]).resolve() == start.resolve(), \
            f"{where} started from {meta['base_model']}, not {start}"
        before, after = _weights(start), _weights(export)
        common = sorted(set(before) & set(after))
        assert common, f"{where}: no weight in common with {start}"
        moved = [name for name in common if not torch.equal(before[name], after[name])]
        assert moved, f"{where}: exported the weights it started from (all {len(common)} tensors equal)"
        start = export
    unit_meta = json.loads((results / run_id / "method.json").read_text(encoding="utf-8"))
    assert unit_meta == json.loads((start / "method.json").read_text(encoding="utf-8")), \
        f"{run_id}: its method.json is not the last stage's export"


def _run(root: Path, model: Path, results: Path, methods: str, options: list[str]) -> list[str]:
    result = CliRunner().invoke(main, ["run", "--methods", methods, "--tasks", "askubuntu", "--eval-tasks", "stsb",
                                       "--seeds", "1", "--model", str(model), *options, "--data-root", str(root),
                                       "--results-dir", str(results)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return sorted(p.parent.name for p in results.glob("*/stages.json"))


def test_each_stage_of_the_domain_adaptations_moves_the_weights(root, tiny_bert_dir, tmp_path):
    """Supervised stages with the published presets (SBERT-nli-v2: 1 epoch of 128; -stsb-v2: 4 epochs of 16, dev
    checks on STSb); TSDAE's paper preset cut to 4 steps."""
    results = tmp_path / "store"
    runs = _run(root, tiny_bert_dir, results, ADAPTATIONS, ["--set", "tsdae.max_steps=4"])
    assert len(runs) == 2
    for run_id in runs:
        chain = json.loads((results / run_id / "config.json").read_text(encoding="utf-8"))["chain"]
        check_every_stage_moved(results, run_id, tiny_bert_dir, chain)


# --- the check sees a skipped stage -------------------------------------------------------------------------------

def _one_chain(root: Path, model: Path, results: Path) -> str:
    """nli-sts (sbert-nli > sbert-stsb) at the end-to-end tests' smoke options: a few seconds."""
    runs = _run(root, model, results, "nli-sts", ["--preset", "smoke", "--max-steps", "3", "--set", "batch_size=8"])
    assert len(runs) == 1
    return runs[0]


def test_a_stage_at_learning_rate_0_fails_the_check(root, tiny_bert_dir, tmp_path, monkeypatch):
    """The issue's symptom: the STSb stage steps at warm-up's learning rate 0 only, and exports its input."""
    import usebench.train.optim as optim

    real = optim.lr_multiplier

    def frozen_stsb(cfg, total_steps):
        return (lambda step: 0.0) if getattr(cfg, "train_data", None) == "stsb" else real(cfg, total_steps)

    monkeypatch.setattr(optim, "lr_multiplier", frozen_stsb)
    results = tmp_path / "store"
    run_id = _one_chain(root, tiny_bert_dir, results)
    with pytest.raises(AssertionError, match=r"stage 2 \(sbert-stsb\): exported the weights it started from"):
        check_every_stage_moved(results, run_id, tiny_bert_dir, ["sbert-nli", "sbert-stsb"])


def test_a_skipped_stage_fails_the_check(root, tiny_bert_dir, tmp_path, monkeypatch):
    """A chain that drops its first stage: the stage's export is the backbone, copied, and the next stage trains
    from it."""
    import usebench.run.unit as unit

    real = unit._stage

    def skip_nli(spec, k, previous, home, *args, **kwargs):
        if spec.stages[k].method != "sbert-nli":
            return real(spec, k, previous, home, *args, **kwargs)
        shutil.copytree(previous or Path(spec.stages[k].values["model"]), home / "checkpoint", dirs_exist_ok=True)
        return "skipped"

    monkeypatch.setattr(unit, "_stage", skip_nli)
    results = tmp_path / "store"
    run_id = _one_chain(root, tiny_bert_dir, results)
    with pytest.raises(AssertionError, match=r"stage 1 \(sbert-nli\): .* holds no method.json"):
        check_every_stage_moved(results, run_id, tiny_bert_dir, ["sbert-nli", "sbert-stsb"])
