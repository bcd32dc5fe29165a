"""One rule decides whether a stored result still holds (issue 46, usebench/validity.py), for every launcher.

A finished unit whose stored results went stale in three ways (one lacks a metric its task computes now, one was
scored under an older task version, one holds a NaN main score) is handed out again by `bench run` under the local
launcher and a launcher that runs it in a process of its own (submitit's local executor), and exactly those three
tasks are scored again from its finished checkpoint: nothing is retrained, and each is said in one line with its
reason. The launcher matrix runs once per behaviour (issue 57): which results are stale is decided before any
launcher sees the unit, and the unit runs the same `run_unit` in any worker; Ray's dispatch of whole units, killed
and restarted, is tests/store/test_store_faults_launchers.py's. A task without data never resubmits a unit; `--force`
names what it drops; `--reevaluate` scores a finished unit's task again into the same run directory.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from usebench.errors import ConfigError
from usebench.plan.specs import RunOptions
from usebench.run.grid import run_benchmark
from usebench.store import DIGEST_KEY, record_digest
from tests.methods.helpers import one_thread, toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TINY = ("lr=1e-3", "batch_size=8", "max_length=32", "log_every=1", "save_every=0")
EVALS = "stsb,sickr,sts12"  # besides twitterpara, the unit's own task
STALE = {  # task -> how its stored record is made stale, and the reason the run must print
    "twitterpara": ("lacks", "lacks ap_pit (task version 1)"),
    "stsb": ("older version", "task's protocol changed (task version 0 when stored, 1 now)"),
    "sickr": ("nan", "non-finite main score (nan)"),
}


def _opts(tiny_bert_dir, corpus_file, **kw) -> RunOptions:
    base = dict(methods=("simcse",), tasks="twitterpara", eval_tasks=EVALS, seeds=1, preset="smoke",
                model=str(tiny_bert_dir), corpus=(corpus_file,), max_steps=2, overrides=TINY, show_progress=False,
                device="cpu")
    return RunOptions(**{**base, **kw})


def _cli_args(tiny_bert_dir, corpus_file, results: Path) -> list[str]:
    sets = sum((["--set", s] for s in TINY), [])
    return ["run", "--methods", "simcse", "--tasks", "twitterpara", "--eval-tasks", EVALS, "--preset", "smoke",
            "--model", str(tiny_bert_dir), "--corpus", str(corpus_file), "--max-steps", "2", "--device", "cpu",
            "--data-root", str(ASSETS), "--results-dir", str(results), *sets]


def _rewrite(path: Path, change) -> None:
    """Change a stored record and sign it again (so the reason is the change itself, not an edit)."""
    record = json.loads(path.read_text(encoding="utf-8"))
    change(record)
    record[DIGEST_KEY] = record_digest(record)
    path.write_text(json.dumps(record), encoding="utf-8")


def make_stale(run: Path) -> dict[str, float]:
    """Stale the three results of :data:`STALE` in ``run``; returns each result file's mtime before."""
    _rewrite(run / "twitterpara" / "test.json", lambda r: r["scores"].pop("ap_pit"))
    _rewrite(run / "stsb" / "test.json", lambda r: r["task"].update(version="0"))

    def nan(record):
        record["main_score"] = record["scores"][record["main_metric"]] = float("nan")
    _rewrite(run / "sickr" / "test.json", nan)
    return {p.parent.name: p.stat().st_mtime_ns for p in run.glob("*/test.json")}


def weights(results: Path) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(results.rglob("checkpoint/model.safetensors"))
                                   )).hexdigest()


def assert_rescored_exactly_the_stale(run: Path, before: dict[str, float], output: str) -> None:
    after = {p.parent.name: p.stat().st_mtime_ns for p in run.glob("*/test.json")}
    assert {t for t in after if after[t] != before[t]} == set(STALE)  # sts12 held: kept as it was
    for task, (_, reason) in STALE.items():
        assert f"{task}/test: scoring again from the finished checkpoint: " in output, output
        assert reason in output.split(f"{task}/test: scoring again from the finished checkpoint: ", 1)[1].split("\n")[0]
        record = json.loads((run / task / "test.json").read_text(encoding="utf-8"))
        assert record["task"]["version"] == "1" and record["main_score"] == record["main_score"]  # finite again
    assert "ap_pit" in json.loads((run / "twitterpara" / "test.json").read_text())["scores"]
    assert "training" not in output.split("scoring again", 1)[1]  # the stage was reused, never trained


def test_the_local_launcher_rescores_exactly_the_stale_results(tiny_bert_dir, corpus_file, tmp_path, capsys):
    results = tmp_path / "results"
    opts = _opts(tiny_bert_dir, corpus_file)
    with one_thread():
        run_benchmark(opts, ASSETS, results)
        (run,) = [p for p in results.iterdir() if p.name.startswith("simcse")]
        trained = weights(results)
        before = make_stale(run)
        capsys.readouterr()
        outcome = run_benchmark(opts, ASSETS, results)
    err = capsys.readouterr().err
    assert weights(results) == trained
    assert_rescored_exactly_the_stale(run, before, err)
    assert "0 of 1 unit(s) already done (results kept); 1 to run (1 of them trained, only to score again)" in err
    for task in STALE:  # the driver said it too, before handing the unit out
        assert f"{run.name}: trained; scoring again: {task}/test:" in err
    assert len(outcome.cells[("simcse (file:corpus.txt)", "sts12")]) == 1


def test_an_edited_or_malformed_record_is_never_done(tiny_bert_dir, corpus_file, tmp_path, capsys):
    results = tmp_path / "results"
    opts = _opts(tiny_bert_dir, corpus_file, eval_tasks="stsb,sickr")
    with one_thread():
        run_benchmark(opts, ASSETS, results)
        (run,) = [p for p in results.iterdir() if p.name.startswith("simcse")]
        edited = json.loads((run / "stsb" / "test.json").read_text())
        edited["scores"]["pearson"] = 0.99  # by hand: the digest no longer matches
        (run / "stsb" / "test.json").write_text(json.dumps(edited))
        (run / "sickr" / "test.json").write_text(json.dumps({"task": "sickr"}))  # wrong shape
        capsys.readouterr()
        run_benchmark(opts, ASSETS, results)
    err = capsys.readouterr().err
    assert "stsb/test: scoring again from the finished checkpoint: the stored result was changed after it was " \
           "written (its digest does not match)" in err
    assert "sickr/test: scoring again from the finished checkpoint: the stored result is malformed" in err
    assert json.loads((run / "stsb" / "test.json").read_text())["scores"]["pearson"] != 0.99


def _with_extra(module: str):
    missing = importlib.util.find_spec(module) is None
    return pytest.mark.skipif(missing, reason=f"the {module} extra is not installed")


LAUNCHER_ENV = {"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}


def _bench(tiny_bert_dir: Path, corpus: Path, results: Path, *extra: str) -> str:
    """`bench run` of the unit as a process of its own (``extra``: a launcher's options); its output."""
    done = subprocess.run([sys.executable, "-m", "usebench.cli", *_cli_args(tiny_bert_dir, corpus, results), *extra],
                          env={**os.environ, **LAUNCHER_ENV}, capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def locally_trained(tiny_bert_dir, tmp_path_factory) -> tuple[Path, Path]:
    """(corpus, store): the unit trained once by the local launcher, for the launcher below to copy: the launcher
    under test only finds the copy's results stale, so the training it would repeat is the same one."""
    home = tmp_path_factory.mktemp("stale-launchers")
    corpus = home / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    _bench(tiny_bert_dir, corpus, home / "results")
    return corpus, home / "results"


SUBMITIT_LOCAL = ("--launcher", "slurm", "--slurm-executor", "local", "--max-parallel", "1", "--cpus-per-unit", "1")


@_with_extra("submitit")
def test_a_launcher_rescores_exactly_the_stale_results(tiny_bert_dir, locally_trained, tmp_path):
    launcher = SUBMITIT_LOCAL
    corpus, trained_store = locally_trained
    results = tmp_path / "results"
    shutil.copytree(trained_store, results)  # trained by the local launcher; the launcher under test finds it stale
    (run,) = [p for p in results.iterdir() if p.name.startswith("simcse")]
    trained = weights(results)
    before = make_stale(run)
    out = _bench(tiny_bert_dir, corpus, results, *launcher)
    assert weights(results) == trained
    unit_log = (run / "unit.log").read_text(encoding="utf-8")  # what the unit printed in its worker
    assert_rescored_exactly_the_stale(run, before, unit_log)
    for task in STALE:
        assert f"{run.name}: trained; scoring again: {task}/test:" in out


def test_a_task_without_data_does_not_resubmit_a_finished_unit(tiny_bert_dir, corpus_file, tmp_path, capsys):
    results = tmp_path / "results"
    opts = _opts(tiny_bert_dir, corpus_file, eval_tasks="stsb,quora")  # no Quora in the test assets
    handed_out: list[str] = []

    def recording(units, data_root, results_dir):
        handed_out.extend(u.run_id for u in units)
        from usebench.run.grid import run_sequentially

        return run_sequentially(units, data_root, results_dir)

    with one_thread():
        first = run_benchmark(opts, ASSETS, results, execute=recording)
        assert len(handed_out) == 1 and any(t == "quora" and "bench data download" in why for t, why in first.skipped)
        capsys.readouterr()
        again = run_benchmark(opts, ASSETS, results, execute=recording)
    assert len(handed_out) == 1  # not handed out again: a job each time under Ray or SLURM
    assert "1 of 1 unit(s) already done (results kept); 0 to run" in capsys.readouterr().err
    assert any(t == "quora" for t, _ in again.skipped)  # still said, with its fetch command
    assert again.cells[("simcse (file:corpus.txt)", "stsb")]


def test_force_on_a_subset_of_tasks_names_every_result_it_drops(tiny_bert_dir, corpus_file, tmp_path, capsys):
    results = tmp_path / "results"
    with one_thread():
        run_benchmark(_opts(tiny_bert_dir, corpus_file), ASSETS, results)
        (run,) = [p for p in results.iterdir() if p.name.startswith("simcse")]
        capsys.readouterr()
        narrow = _opts(tiny_bert_dir, corpus_file, eval_tasks="stsb", force=True)  # the same unit, fewer tasks
        assert run_benchmark(narrow, ASSETS, results).units[0].run_id == run.name
    err = capsys.readouterr().err
    assert (f"--force: {run.name}: retraining drops its 4 stored result(s) sickr/test, sts12/test, stsb/test, "
            "twitterpara/test (new weights change every score: none is kept); not evaluated by this command, so "
            "gone: sickr/test, sts12/test") in err
    assert sorted(p.parent.name for p in run.glob("*/test.json")) == ["stsb", "twitterpara"]


def test_reevaluate_scores_a_finished_unit_again_into_its_own_directory(tiny_bert_dir, corpus_file, tmp_path,
                                                                       capsys):
    results = tmp_path / "results"
    opts = _opts(tiny_bert_dir, corpus_file, eval_tasks="stsb")
    with one_thread():
        run_benchmark(opts, ASSETS, results)
        (run,) = [p for p in results.iterdir() if p.name.startswith("simcse")]
        trained, kept = weights(results), (run / "twitterpara" / "test.json").stat().st_mtime_ns
        stamp = (run / "stsb" / "test.json").stat().st_mtime_ns
        capsys.readouterr()
        run_benchmark(RunOptions(**{**opts.__dict__, "reevaluate": ("stsb",)}), ASSETS, results)
    err = capsys.readouterr().err
    assert f"--reevaluate: {run.name}: stsb/test removed; it is scored again from the checkpoint" in err
    assert weights(results) == trained and sorted(p.name for p in results.iterdir()) == [run.name]
    assert (run / "stsb" / "test.json").stat().st_mtime_ns != stamp
    assert (run / "twitterpara" / "test.json").stat().st_mtime_ns == kept
    with pytest.raises(ConfigError, match="--reevaluate sickr: no unit of this run evaluates it"):
        run_benchmark(RunOptions(**{**opts.__dict__, "reevaluate": ("sickr",)}), ASSETS, results)
    with pytest.raises(ConfigError, match="give one of the two"):
        run_benchmark(RunOptions(**{**opts.__dict__, "reevaluate": ("stsb",), "force": True}), ASSETS, results)
