"""`bench run` validates every unit before the first trains, says what it will do, and exits honestly."""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.errors import BenchError, ConfigError
from usebench.plan.specs import RunOptions
from usebench.plan.planner import plan_run
from usebench.run.grid import run_benchmark
from usebench.store.locks import LOCK_FILE, UnitLock, UnitLockedError
from usebench.store.unit_state import unit_state
from tests.methods.helpers import one_thread, toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TINY = ("lr=1e-3", "batch_size=8", "max_length=32", "log_every=1", "save_every=0")


@pytest.fixture()
def corpus_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(toy_corpus(40) * 2) + "\n", encoding="utf-8")  # every line twice
    return path


def _args(tiny_bert_dir, corpus_file, results, *more):
    return ["run", "--tasks", "stsb", "--corpus", str(corpus_file), "--model", str(tiny_bert_dir), "--preset",
            "smoke", "--max-steps", "2", "--device", "cpu", "--data-root", str(ASSETS), "--results-dir",
            str(results), *sum((["--set", t] for t in TINY), []), *more]


def test_a_bad_value_for_a_later_method_fails_before_anything_trains(tiny_bert_dir, corpus_file, tmp_path):
    result = CliRunner().invoke(main, _args(tiny_bert_dir, corpus_file, tmp_path, "--methods", "simcse,tsdae",
                                            "--set", "tsdae.noise_ratio=1.5"))
    assert result.exit_code == 2 and "noise_ratio" in result.output, result.output
    assert not list(tmp_path.glob("simcse__*")), "simcse trained although tsdae's config was invalid"


def test_a_mistyped_method_prefix_is_an_error(tiny_bert_dir, corpus_file, tmp_path):
    result = CliRunner().invoke(main, _args(tiny_bert_dir, corpus_file, tmp_path, "--methods", "simcse",
                                            "--set", "simcsee.lr=1e-4"))
    assert result.exit_code == 2 and "'simcsee' is not a method of this run; did you mean 'simcse'?" in result.output


@pytest.mark.parametrize("methods, message", [
    ("simcse>tsdaee", "did you mean 'tsdae'"),
    ("bertflow>simcse", "no stage can follow 'bertflow'"),
    ("bertflow", "ddi_batch_size=256 exceeds the corpus (40 sentences)"),  # a corpus check, still up front
    ("simcse>base", "untrained baseline, not a training stage"),
    ("simcse>", "empty stage"),
])
def test_bad_chains_are_named(tiny_bert_dir, corpus_file, tmp_path, methods, message):
    result = CliRunner().invoke(main, _args(tiny_bert_dir, corpus_file, tmp_path, "--methods", methods))
    assert result.exit_code == 2 and message in result.output, result.output


def test_dry_run_prints_the_plan_and_trains_nothing(tiny_bert_dir, corpus_file, tmp_path):
    results = tmp_path / "results"
    result = CliRunner().invoke(main, _args(tiny_bert_dir, corpus_file, results, "--methods",
                                            "simcse,mlm>simcse,base", "--seeds", "2", "--dry-run"))
    assert result.exit_code == 0, result.output
    assert "4 unit(s), 1 baseline(s)" in result.output and "mlm>simcse" in result.output
    assert "corpus file:corpus.txt: 80 lines -> 40 unique" in result.output  # said before any work
    assert not results.exists()


def test_nothing_done_is_a_non_zero_exit(tiny_bert_dir, tmp_path):
    # The test assets have no unlabeled training corpus for twitterpara: every unit is skipped.
    result = CliRunner().invoke(main, ["run", "--methods", "simcse", "--tasks", "twitterpara", "--model",
                                       str(tiny_bert_dir), "--preset", "smoke", "--data-root", str(ASSETS),
                                       "--results-dir", str(tmp_path)])
    assert result.exit_code == 1 and "nothing was trained or evaluated" in result.output
    assert "bench data download useb" in result.output


def test_a_backbone_that_cannot_be_loaded_fails_the_plan(corpus_file, monkeypatch):
    """Offline without a cached bert-base-uncased, the default preset fails in the plan, saying why and what to do."""
    import usebench.eval.models as models

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(models, "cached_snapshot", lambda hub_id: None)
    with pytest.raises(BenchError, match=r"'bert-base-uncased' is not in the local Hugging Face cache.*"
                                         r"backbone of tsdae's preset 'paper' \(the default\); `--preset smoke`"):
        plan_run(RunOptions(methods=("tsdae",), tasks="stsb", corpus=(corpus_file,)), ASSETS)
    with pytest.raises(BenchError, match="model directory '/no/such/model' does not exist"):
        plan_run(RunOptions(methods=("tsdae",), tasks="stsb", corpus=(corpus_file,), model="/no/such/model"), ASSETS)


def test_the_default_paper_preset_is_announced_with_its_cost(tiny_bert_dir, corpus_file, monkeypatch):
    import usebench.plan.planner as plan_module
    from usebench.plan.cost import paper_preset_note

    monkeypatch.setattr(plan_module, "_require_model", lambda name: None)  # as with bert-base-uncased cached
    plan = plan_run(RunOptions(methods=("tsdae",), tasks="stsb", corpus=(corpus_file,)), ASSETS)
    note = paper_preset_note(plan, "cpu")
    assert "preset 'paper' (the default)" in note and "bert-base-uncased" in note and "100,000" in note
    assert "--preset smoke" in note and "GFLOP/s fp32 measured" in note  # a CPU times fp32
    assert paper_preset_note(plan_run(RunOptions(methods=("tsdae",), tasks="stsb", corpus=(corpus_file,),
                                                 preset="smoke"), ASSETS), "cpu") is None


def test_a_unit_held_by_a_live_process_is_skipped_and_a_stale_lock_is_taken(tiny_bert_dir, corpus_file,
                                                                           tmp_path):
    opts = RunOptions(methods=("simcse",), tasks="stsb", preset="smoke", model=str(tiny_bert_dir),
                      corpus=(corpus_file,), max_steps=2, overrides=TINY, show_progress=False, device="cpu")
    (unit,) = plan_run(opts, ASSETS).units
    run_dir = tmp_path / unit.run_id
    run_dir.mkdir()
    live = {"host": socket.gethostname(), "pid": os.getppid(), "since": "now"}  # our parent is alive
    (run_dir / LOCK_FILE).write_text(json.dumps(live))
    with one_thread():
        outcome = run_benchmark(opts, ASSETS, tmp_path)
    assert outcome.units[0].state == "locked" and "is being run by pid" in outcome.skipped[0][1]
    assert not (run_dir / "checkpoint").exists() and unit_state(run_dir).state == "running"
    (run_dir / LOCK_FILE).write_text(json.dumps({**live, "pid": 2**22 + 7}))  # no such process
    with one_thread():
        outcome = run_benchmark(opts, ASSETS, tmp_path)
    assert outcome.units[0].state == "done" and not (run_dir / LOCK_FILE).exists()


def test_two_holders_of_one_lock_cannot_coexist(tmp_path):
    with UnitLock(tmp_path / "unit"):
        (tmp_path / "unit" / LOCK_FILE).write_text(json.dumps({"host": "elsewhere", "pid": 1}))
        with pytest.raises(UnitLockedError, match="on elsewhere"):
            UnitLock(tmp_path / "unit").acquire()


def test_a_unit_that_fails_before_training_is_marked(tiny_bert_dir, corpus_file, tmp_path, monkeypatch):
    import usebench.train.loop as loop

    def broken(*args, **kwargs):
        raise ConfigError("simulated failure while building the model")

    monkeypatch.setattr(loop, "train", broken)
    opts = RunOptions(methods=("simcse",), tasks="stsb", preset="smoke", model=str(tiny_bert_dir),
                      corpus=(corpus_file,), max_steps=2, overrides=TINY, show_progress=False, device="cpu")
    with pytest.raises(ConfigError):
        run_benchmark(opts, ASSETS, tmp_path)
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    state = unit_state(run_dir)
    assert state.state == "failed" and "simulated failure" in state.detail
    assert not (run_dir / LOCK_FILE).exists()


def test_deterministic_flag_trains_every_unit_with_deterministic_kernels(tiny_bert_dir, corpus_file, tmp_path,
                                                                           monkeypatch):
    """`bench run --deterministic` is BENCH_DETERMINISTIC=1 set before anything uses CUDA: every train() of the
    run (and a launcher's workers, which get BENCH_* forwarded) runs under deterministic_mode(True)."""
    from usebench.train import loop, runtime

    monkeypatch.delenv(runtime.DETERMINISTIC_ENV, raising=False)
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    seen: list[bool] = []
    real = loop.deterministic_mode

    def recording(on: bool):
        seen.append(on)
        return real(on)

    monkeypatch.setattr(loop, "deterministic_mode", recording)
    with one_thread():
        result = CliRunner().invoke(main, _args(tiny_bert_dir, corpus_file, tmp_path, "--methods", "simcse,tsdae",
                                                "--deterministic"))
    assert result.exit_code == 0, result.output
    assert seen == [True, True]
    assert os.environ[runtime.DETERMINISTIC_ENV] == "1" and os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    import torch

    assert not torch.are_deterministic_algorithms_enabled()  # switched off again after each unit
