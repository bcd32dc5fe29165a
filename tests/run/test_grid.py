"""`bench run` engine on the tiny test assets: run layout, skip/force, seed table, dev selection, bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from usebench.errors import ConfigError, MissingDataError
from usebench.cli.run import print_run_table
from usebench.plan.specs import RunOptions
from usebench.plan.planner import method_overrides
from usebench.run.grid import run_benchmark
from tests.methods.helpers import one_thread, toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TINY = ("lr=1e-3", "batch_size=8", "max_length=32", "log_every=1", "save_every=0")


@pytest.fixture()
def corpus_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(toy_corpus(40)) + "\n\n   \n", encoding="utf-8")  # blank lines are dropped
    return path


def _opts(tiny_bert_dir, corpus_file, **kw):
    base = dict(methods=("base", "simcse"), tasks="twitterpara", eval_tasks="stsb", seeds=2, preset="smoke",
                model=str(tiny_bert_dir), corpus=(corpus_file,), max_steps=3, overrides=TINY,
                show_progress=False, device="cpu")
    return RunOptions(**{**base, **kw})


def test_run_layout_results_and_table(tiny_bert_dir, corpus_file, tmp_path, capsys):
    results = tmp_path / "results"
    with one_thread():
        outcome = run_benchmark(_opts(tiny_bert_dir, corpus_file), ASSETS, results)
    runs = sorted(p.name for p in results.iterdir())
    simcse_runs = [r for r in runs if r.startswith("simcse__tiny-bert")]
    assert len(simcse_runs) == 2 and {r[-3:] for r in simcse_runs} == {"_s0", "_s1"}
    run = results / simcse_runs[0]
    for name in ("config.json", "env.json", "method.json", "log.jsonl", "checkpoint/method.json",
                 "twitterpara/test.json", "stsb/test.json"):
        assert (run / name).is_file(), name
    record = json.loads((run / "twitterpara" / "test.json").read_text())
    assert record["config_hash"][:8] == run.name.split("__")[2]  # the run id names the config
    assert record["method"]["train_corpus"] == "file:corpus.txt" and record["config"]["corpus"]["sentences"] == 40
    # how the steps ran: on the CPU the reference path (issue 36), recorded in the result as in the checkpoint
    assert record["method"]["step_path"] == [json.loads((run / "checkpoint" / "method.json").read_text())["step_path"]]
    assert record["method"]["step_path"][0]["fast"] is False
    cell = outcome.cells[("simcse (file:corpus.txt)", "stsb")]
    assert sorted(r.record["seed"] for r in cell) == [0, 1]
    print_run_table(outcome)
    out = capsys.readouterr().out
    assert "simcse (file:corpus.txt)" in out and "(2)" in out and "± —" in out  # base: one value, no std


def test_finished_units_are_skipped_and_force_reruns(tiny_bert_dir, corpus_file, tmp_path):
    results = tmp_path / "results"
    opts = _opts(tiny_bert_dir, corpus_file, methods=("simcse",), seeds=1)
    with one_thread():
        run_benchmark(opts, ASSETS, results)
        (run,) = list(results.iterdir())
        stamp = (run / "checkpoint" / "model.safetensors").stat().st_mtime_ns
        again = run_benchmark(opts, ASSETS, results)
        assert (run / "checkpoint" / "model.safetensors").stat().st_mtime_ns == stamp
        assert len(again.cells[("simcse (file:corpus.txt)", "twitterpara")]) == 1
        run_benchmark(RunOptions(**{**opts.__dict__, "force": True}), ASSETS, results)
        assert (run / "checkpoint" / "model.safetensors").stat().st_mtime_ns != stamp


def test_dev_selection_keeps_the_best_checkpoint(tiny_bert_dir, corpus_file, tmp_path):
    opts = _opts(tiny_bert_dir, corpus_file, methods=("simcse",), seeds=1, eval_tasks=None, max_steps=4,
                 overrides=TINY + ("dev_task=stsb", "dev_every=2"))
    with one_thread():
        run_benchmark(opts, ASSETS, tmp_path)
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    meta = json.loads((run / "method.json").read_text())
    assert meta["dev"]["task"] == "stsb" and meta["dev"]["step"] in (2, 4) and meta["steps_trained"] == 4
    assert not (run / "dev_best").exists() and not (run / ".dev_probe").exists()


def test_missing_corpus_is_skipped_or_strict(tiny_bert_dir, tmp_path):
    opts = RunOptions(methods=("simcse",), tasks="twitterpara", preset="smoke", model=str(tiny_bert_dir),
                      show_progress=False)
    outcome = run_benchmark(opts, ASSETS, tmp_path)  # the assets have no data-train/ corpus
    assert outcome.skipped and "bench data download" in outcome.skipped[0][1]
    with pytest.raises(MissingDataError, match="--corpus FILE"):
        run_benchmark(RunOptions(**{**opts.__dict__, "strict": True}), ASSETS, tmp_path)


def test_overrides_per_method_and_unknown_names(tiny_bert_dir, corpus_file, tmp_path):
    from usebench.methods.simcse import SimCSEConfig
    from usebench.methods.tsdae import TSDAEConfig

    items = ["lr=1e-4", "simcse.temperature=0.1", "tsdae.noise_ratio=0.5"]
    assert method_overrides("simcse", SimCSEConfig, items) == {"lr": 1e-4, "temperature": 0.1}
    assert method_overrides("tsdae", TSDAEConfig, items) == {"lr": 1e-4, "noise_ratio": 0.5}
    with pytest.raises(ConfigError, match=r"tsdae: unknown config key 'temperature'.*tsdae.key=value"):
        method_overrides("tsdae", TSDAEConfig, ["temperature=0.1"])
    with pytest.raises(ConfigError, match="did you mean 'simcse'"):
        run_benchmark(_opts(tiny_bert_dir, corpus_file, methods=("simcs",)), ASSETS, tmp_path)


def test_cli_reports_config_errors_in_one_line(tiny_bert_dir, corpus_file, tmp_path):
    from click.testing import CliRunner

    from usebench.cli.main import main

    args = ["run", "--methods", "tsdae", "--tasks", "twitterpara", "--corpus", str(corpus_file), "--model",
            str(tiny_bert_dir), "--set", "lrr=1e-4", "--data-root", str(ASSETS), "--results-dir", str(tmp_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "unknown config key 'lrr'" in result.output and "did you mean 'lr'" in result.output
    result = CliRunner().invoke(main, args[:-6] + ["--preset", "fast", "--data-root", str(ASSETS),
                                                   "--results-dir", str(tmp_path)])
    assert result.exit_code == 2 and "unknown preset 'fast'" in result.output
