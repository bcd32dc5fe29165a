"""Chains of stages in one run unit: stage k+1 starts from stage k's export, a chain killed in a later stage
resumes to the same weights, and the unit's files say what happened."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from usebench.plan.specs import RunOptions
from usebench.plan.planner import plan_run
from usebench.run.grid import run_benchmark
from usebench.store.unit_state import unit_state
from tests.methods.helpers import one_thread

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TINY = ("lr=1e-3", "batch_size=8", "max_length=32", "log_every=1", "save_every=0")


class Crash(Exception):
    pass


def _opts(tiny_bert_dir, corpus_file, **kw):
    base = dict(methods=("mlm>simcse",), tasks="stsb", seeds=1, preset="smoke", model=str(tiny_bert_dir),
                corpus=(corpus_file,), max_steps=3, overrides=TINY, show_progress=False, device="cpu")
    return RunOptions(**{**base, **kw})


def _weights(checkpoint: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(checkpoint / "model.safetensors"))


def _homes(run: Path) -> list[Path]:
    """The stage homes a unit's stages.json names."""
    return [run.parent / e["home"] for e in json.loads((run / "stages.json").read_text())]


def test_stage_two_starts_from_stage_one(tiny_bert_dir, corpus_file, tmp_path):
    # Stage 2 with a vanishing learning rate: its export must equal stage 1's export, not the backbone.
    opts = _opts(tiny_bert_dir, corpus_file, overrides=TINY + ("simcse.lr=1e-12",))
    with one_thread():
        outcome = run_benchmark(opts, ASSETS, tmp_path)
    (unit,) = outcome.units
    run = unit.run_dir
    first_home, second_home = _homes(run)
    # stage 1 is the single-method unit `mlm` of the same config (its run directory); stage 2 has its own home
    assert first_home.name.startswith("mlm__tiny-bert") and second_home.parent.name == ".stages"
    first, second = first_home / "checkpoint", second_home / "checkpoint"
    assert json.loads((second / "method.json").read_text())["base_model"] == str(first)
    w1, w2, w0 = _weights(first), _weights(second), _weights(tiny_bert_dir)
    shared = [k for k in w2 if k in w1 and "pooler" not in k]
    assert shared and all(torch.allclose(w1[k], w2[k], atol=1e-6) for k in shared)
    assert any(not torch.allclose(w0[k], w1[k]) for k in shared if k in w0)  # stage 1 did train
    config = json.loads((run / "config.json").read_text())
    assert config["chain"] == ["mlm", "simcse"] and config["stages"][1]["config"]["model"] == "stage:1"
    record = json.loads((run / "stsb" / "test.json").read_text())
    assert record["method"]["name"] == "mlm>simcse" and record["method"]["base_model"] == str(tiny_bert_dir)
    assert run.name.startswith("mlm+simcse__tiny-bert") and unit_state(run).state == "done"
    assert (first_home / "config.json").is_file() and (second_home / "log.jsonl").is_file()
    assert json.loads((first_home / "config.json").read_text())["run_id"] == first_home.name
    assert not (run / "checkpoint").exists() and not (run / "stages").exists()  # no copies in the unit


def test_a_chain_killed_in_stage_two_resumes_to_the_same_weights(tiny_bert_dir, corpus_file, tmp_path,
                                                                  monkeypatch):
    import usebench.train.loop as loop

    opts = _opts(tiny_bert_dir, corpus_file, max_steps=4, overrides=TINY[:-1] + ("save_every=1",))
    with one_thread():
        clean = run_benchmark(opts, ASSETS, tmp_path / "clean").units[0].run_dir
        real_train = loop.train

        def crash_in_stage_two(method, cfg, corpus, out_dir, **kw):
            if method.name == "simcse":
                def crash(step):
                    if step == 3:
                        raise Crash
                kw["on_step"] = crash
            return real_train(method, cfg, corpus, out_dir, **kw)

        monkeypatch.setattr(loop, "train", crash_in_stage_two)
        with pytest.raises(Crash):
            run_benchmark(opts, ASSETS, tmp_path / "killed")
        killed = tmp_path / "killed" / clean.name
        state = unit_state(killed)
        assert state.state == "interrupted" or state.state == "failed"
        assert state.stage == "2/2 simcse" and state.step == 3 and "Crash" in state.detail
        first, second = _homes(killed)
        stamp = (first / "checkpoint/model.safetensors").stat().st_mtime_ns
        monkeypatch.setattr(loop, "train", real_train)
        resumed = run_benchmark(opts, ASSETS, tmp_path / "killed").units[0]
    assert resumed.training == ["reusing its finished checkpoint", "resuming from its last train state"]
    assert (first / "checkpoint/model.safetensors").stat().st_mtime_ns == stamp
    a, b = _weights(_homes(clean)[1] / "checkpoint"), _weights(second / "checkpoint")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not (killed / "failed.json").exists() and unit_state(killed).state == "done"


def test_plan_names_chains_and_settings(tiny_bert_dir, corpus_file):
    plan = plan_run(_opts(tiny_bert_dir, corpus_file, methods=("simcse", "mlm>simcse", "base"), seeds=2), ASSETS)
    assert [(u.label, u.seed) for u in plan.units] == [("simcse", 0), ("simcse", 1), ("mlm>simcse", 0),
                                                     ("mlm>simcse", 1)]
    assert [b.name for b in plan.baselines] == ["base"]
    assert plan.units[0].run_id.split("__")[2] == plan.units[1].run_id.split("__")[2]  # seeds share the config
    assert "chain" not in plan.units[0].config  # a single method keeps the earlier layout (and run ids)
