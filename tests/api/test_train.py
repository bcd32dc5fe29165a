"""Training from Python (issue 56, item 5): ``usebench.train`` is `bench run` from a notebook, with its planner,
reuse, resume and errors. A tiny unit trained from Python is killed mid-run (its process, SIGKILL), resumed from
Python, and its frame equals what `bench run` stores for the same options in a store of its own."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.methods.helpers import toy_corpus

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "tests" / "assets"
STEPS, EVERY = 60, 5
OPTIONS = {"lr": 1e-3, "batch_size": 8, "max_length": 32, "log_every": EVERY, "save_every": EVERY}
SCRIPT = """
import pickle, sys, usebench
frame = usebench.train("simcse", "stsb", corpus=sys.argv[1], model=sys.argv[2], preset="smoke", overrides={options},
                       max_steps={steps}, seeds=[3], results_dir=sys.argv[3], data_root=sys.argv[4], device="cpu")
pickle.dump(frame, open(sys.argv[5], "wb"))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def _train_script(tmp_path: Path, corpus: Path, model: Path, results: Path, out: Path) -> list[str]:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(options=repr(OPTIONS), steps=STEPS))
    return [sys.executable, str(script), str(corpus), str(model), str(results), str(ASSETS), str(out)]


def _kill_once_a_train_state_is_saved(cmd: list[str], results: Path) -> None:
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not list(results.glob("simcse__*/train_state/state.pt")):
            assert proc.poll() is None, "the run ended before a train state was saved"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)  # mid-run: no clean-up, no end line in its unit.log
    finally:
        proc.wait(timeout=60)


def test_train_killed_and_resumed_from_python_equals_bench_run(tiny_bert_dir, tmp_path):
    import pickle

    from click.testing import CliRunner

    from usebench.api.results import load_results
    from usebench.cli.main import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(64)) + "\n")
    results, out = tmp_path / "results", tmp_path / "frame.pkl"
    cmd = _train_script(tmp_path, corpus, tiny_bert_dir, results, out)
    _kill_once_a_train_state_is_saved(cmd, results)
    (run,) = results.glob("simcse__*")
    assert not (run / "checkpoint" / "method.json").exists() and not out.exists()  # killed before the end
    subprocess.run(cmd, env=_env(), check=True, capture_output=True, timeout=600)  # resumed, from Python
    frame = pickle.loads(out.read_bytes())
    assert frame.attrs["units"] == {run.name: {"state": "done", "training": ["resuming from its last train state"]}}
    steps = [json.loads(ln)["step"] for ln in (run / "log.jsonl").read_text().splitlines()]
    assert steps == list(range(EVERY, STEPS + 1, EVERY))  # every window once: the resume went on, not over
    assert "killed" in [a[2] for a in __import__("usebench.run.console", fromlist=["attempts"]).attempts(
        run / "unit.log")]

    fresh = tmp_path / "fresh"  # bench run, the same options, a store of its own
    sets = [f"--set={k}={v}" for k, v in OPTIONS.items()]
    done = subprocess.run([sys.executable, "-m", "usebench.cli", "run", "--methods", "simcse", "--tasks", "stsb",
                           "--corpus", str(corpus), "--model", str(tiny_bert_dir), "--preset", "smoke", *sets,
                           "--max-steps", str(STEPS), "--seeds", "3,", "--device", "cpu", "--results-dir", str(fresh),
                           "--data-root", str(ASSETS)], env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    cli = load_results(fresh)
    keys = ["run_id", "task", "split", "subset", "metric"]
    ours = frame.sort_values(keys).reset_index(drop=True)
    theirs = cli.sort_values(keys).reset_index(drop=True)
    assert len(ours) == 2 and ours[keys].equals(theirs[keys])  # the same unit, the same run id
    assert list(ours["value"]) == list(theirs["value"])  # resumed to the same weights, the same scores
    frame_of_store = load_results(results)
    assert frame_of_store.drop(columns="path").equals(ours.drop(columns="path"))  # the frame is the store's
    again = CliRunner().invoke(main, ["run", "--methods", "simcse", "--tasks", "stsb", "--corpus", str(corpus),
                                      "--model", str(tiny_bert_dir), "--preset", "smoke", *sets, "--max-steps",
                                      str(STEPS), "--seeds", "3,", "--device", "cpu", "--results-dir", str(results),
                                      "--data-root", str(ASSETS)])
    assert again.exit_code == 0 and "1 of 1 unit(s) already done" in again.output  # bench run reuses its unit


def test_usebench_train_is_callable_whatever_was_imported_first():
    code = ("import usebench.train.loop as loop, usebench; from usebench import train; "
            "print(callable(usebench.train), usebench.train.loop is loop, train is usebench.train)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0 and done.stdout.split() == ["True", "True", "True"], done.stderr[-2000:]


def test_arguments_are_checked_in_python_words_before_anything_trains(tmp_path):
    import usebench
    from usebench.api.arguments import UnknownTaskError
    from usebench.errors import ConfigError

    common = {"corpus": toy_corpus(8), "results_dir": tmp_path / "r", "data_root": ASSETS, "device": "cpu"}
    with pytest.raises(ValueError, match="seeds must be a count >= 1"):
        usebench.train("simcse", "stsb", seeds=0, **common)
    with pytest.raises(TypeError, match="seeds must be a count >= 1 or a non-empty list of integer seeds"):
        usebench.train("simcse", "stsb", seeds=["1"], **common)
    with pytest.raises(UnknownTaskError, match="unknown task 'stbs'; did you mean .*'stsb'"):
        usebench.train("simcse", "stbs", **common)
    with pytest.raises(ValueError, match="train_batch_size must be a positive integer"):
        usebench.train("simcse", "stsb", train_batch_size=0, **common)
    with pytest.raises(ConfigError, match="train_batch_size=16 and overrides batch_size=8: give one"):
        usebench.train("simcse", "stsb", train_batch_size=16, overrides={"batch_size": 8}, **common)
    with pytest.raises(ConfigError, match="unknown preset 'smke'.*did you mean 'smoke'"):
        usebench.train("simcse", "stsb", preset="smke", **common)
    with pytest.raises(ValueError, match="corpus: no file at"):
        usebench.train("simcse", "stsb", **{**common, "corpus": tmp_path / "nope.txt"})
    with pytest.raises(ValueError, match=r"corpus\[1\] holds a line break"):
        usebench.train("simcse", "stsb", **{**common, "corpus": ["a b c", "two\nlines"]})
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").glob("simcse__*"))  # nothing trained


def test_sentences_in_memory_become_one_file_named_by_their_content(tmp_path):
    from usebench.api.training_args import corpus_files, override_items

    sentences = toy_corpus(16)
    (a,) = corpus_files(sentences, tmp_path)
    (b,) = corpus_files(list(sentences), tmp_path)
    assert a == b and a.parent == tmp_path / ".corpora" and a.read_text().splitlines() == sentences
    (c,) = corpus_files(sentences[:-1], tmp_path)
    assert c != a  # other sentences, another file
    assert override_items({"lr": 1e-4, "dev_task": None, "amp": "off", "tie_encoder_decoder": False}) == (
        "lr=0.0001", "dev_task=none", "amp=off", "tie_encoder_decoder=false")


def test_a_datasets_dataset_is_a_corpus(tmp_path):
    datasets = pytest.importorskip("datasets")
    from usebench.api.training_args import corpus_files

    sentences = toy_corpus(16)
    (from_dataset,) = corpus_files(datasets.Dataset.from_dict({"id": list(range(16)), "text": sentences}), tmp_path)
    assert from_dataset.read_text().splitlines() == sentences
    (one_column,) = corpus_files(datasets.Dataset.from_dict({"title": sentences}), tmp_path)
    assert one_column.read_text() == from_dataset.read_text()
    with pytest.raises(ValueError, match="name its text column 'text'"):
        corpus_files(datasets.Dataset.from_dict({"a": sentences, "b": sentences}), tmp_path)
