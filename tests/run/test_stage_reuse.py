"""Each distinct stage trains once: a stage is (method, config, data, seed, the stage it starts from), and every
unit that needs it (in this run, or a later one, on any launcher) reuses it, under the same lock and resume
rules as units. The plan and the log say which stages each unit trains and which it reuses from where."""
from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.plan.specs import RunOptions
from usebench.plan.planner import plan_run
from usebench.run.grid import run_benchmark
from usebench.store.unit_files import STAGE_LOCK_DIR
from tests.methods.helpers import one_thread, toy_corpus

SMALL = ("lr=1e-3", "batch_size=2", "max_length=16", "log_every=1", "save_every=0")


@pytest.fixture()
def corpus_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(toy_corpus(20)) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def trainings(monkeypatch):
    """(method, output dir) of every training the loop runs."""
    import usebench.train.loop as loop

    calls: list[tuple[str, Path]] = []
    real = loop.train

    def counting(method, cfg, corpus, out_dir, **kw):
        calls.append((method.name, Path(out_dir)))
        return real(method, cfg, corpus, out_dir, **kw)

    monkeypatch.setattr(loop, "train", counting)
    return calls


def _args(tiny_bert_dir, corpus_file, root, results, methods, *more):
    return ["run", "--methods", methods, "--tasks", "stsb", "--corpus", str(corpus_file), "--model",
            str(tiny_bert_dir), "--preset", "smoke", "--max-steps", "2", "--device", "cpu", "--data-root", str(root),
            "--results-dir", str(results), *sum((["--set", s] for s in SMALL), []), *more]


def _homes(run_dir: Path) -> list[str]:
    return [e["home"] for e in json.loads((run_dir / "stages.json").read_text())]


def test_each_distinct_stage_trains_once_in_a_run_and_after(tiny_bert_dir, corpus_file, grid_root, tmp_path,
                                                            trainings):
    results = tmp_path / "results"
    methods = "mlm,mlm>simcse,nli-sts>mlm,nli-sts>simcse"
    with one_thread():
        run = CliRunner().invoke(main, _args(tiny_bert_dir, corpus_file, grid_root, results, methods))
    assert run.exit_code == 0, run.output
    # 9 stage slots, 6 distinct stages: mlm alone = mlm of mlm>simcse; the NLI and STSb stages of both chains
    assert sorted(m for m, _ in trainings) == ["mlm", "mlm", "sbert-nli", "sbert-stsb", "simcse", "simcse"]
    assert len({d for _, d in trainings}) == 6
    assert "9 stage slot(s): 6 stage training(s), 3 reused from another unit of this plan" in run.output
    units = {json.loads((p / "config.json").read_text())["method"]: p for p in results.iterdir()
             if (p / "stages.json").is_file()}
    mlm = next(p for m, p in units.items() if m == "mlm")
    assert _homes(units["mlm>simcse"])[0] == mlm.name  # the unit `mlm` and the first stage of mlm>simcse
    assert _homes(units["sbert-nli>sbert-stsb>mlm"])[:2] == _homes(units["sbert-nli>sbert-stsb>simcse"])[:2]
    assert all((p / "stsb" / "test.json").is_file() for p in units.values())
    assert not list(results.glob("*/stages/*/checkpoint"))  # reused stages are referred to, never copied
    status = CliRunner().invoke(main, ["status", "--results-dir", str(results)])
    assert status.exit_code == 0 and "stages (each trained once" in status.output
    assert "6 stage(s): 6 done" in status.output and "2 unit(s)" in status.output

    trainings.clear()  # a later run: its NLI+STSb stages and its mlm stage are in the store already
    dry = CliRunner().invoke(main, _args(tiny_bert_dir, corpus_file, grid_root, results, "nli-sts>tsdae,mlm>tsdae",
                                         "--dry-run"))
    assert dry.exit_code == 0, dry.output
    assert "sbert-nli: done (.stages/sbert-nli__" in dry.output and f"mlm: done ({mlm.name})" in dry.output
    assert "5 stage slot(s): 2 stage training(s), 0 reused from another unit of this plan, 3 reused from the " \
           "store" in dry.output.replace("\n", " ")
    with one_thread():
        again = CliRunner().invoke(main, _args(tiny_bert_dir, corpus_file, grid_root, results, "nli-sts>tsdae,mlm>tsdae"))
    assert again.exit_code == 0, again.output
    assert sorted(m for m, _ in trainings) == ["tsdae", "tsdae"]


def test_force_retrains_a_shared_stage_once(tiny_bert_dir, corpus_file, grid_root, tmp_path, trainings):
    opts = RunOptions(methods=("mlm", "mlm>simcse"), tasks="stsb", preset="smoke", model=str(tiny_bert_dir),
                      corpus=(corpus_file,), max_steps=2, overrides=SMALL, show_progress=False, device="cpu")
    with one_thread():
        run_benchmark(opts, grid_root, tmp_path)
        trainings.clear()
        outcome = run_benchmark(RunOptions(**{**opts.__dict__, "force": True}), grid_root, tmp_path)
    assert sorted(m for m, _ in trainings) == ["mlm", "simcse"]  # not mlm twice (once per unit)
    assert all(u.state == "done" for u in outcome.units)


def _first_stage_held(tiny_bert_dir, corpus_file, root, results, owner: dict):
    """(options, unit, lock file) of a run of `mlm>simcse` whose mlm stage is held by ``owner``'s lock."""
    opts = RunOptions(methods=("mlm>simcse",), tasks="stsb", preset="smoke", model=str(tiny_bert_dir),
                      corpus=(corpus_file,), max_steps=2, overrides=SMALL, show_progress=False, device="cpu")
    (unit,) = plan_run(opts, root).units
    lock = results / unit.stages[0].home / STAGE_LOCK_DIR / ".lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps(owner))
    return opts, unit, lock


def test_a_unit_waits_for_a_stage_another_process_trains(tiny_bert_dir, corpus_file, grid_root, tmp_path,
                                                         monkeypatch, capsys):
    import usebench.run.stages as stages

    monkeypatch.setattr(stages, "WAIT_S", 0.2)
    opts, unit, lock = _first_stage_held(tiny_bert_dir, corpus_file, grid_root, tmp_path,
                                         {"host": socket.gethostname(), "pid": os.getppid(), "since": "now"})  # alive
    released = threading.Timer(1.5, lock.unlink)
    released.start()
    try:
        with one_thread():
            outcome = run_benchmark(opts, grid_root, tmp_path)
    finally:
        released.cancel()
    assert f"waiting for stage {unit.stages[0].home}" in capsys.readouterr().err
    assert outcome.units[0].state == "done" and not lock.exists()


def test_a_chains_first_stage_is_a_stage_in_bench_status_not_a_stopped_unit(tiny_bert_dir, corpus_file, grid_root,
                                                                             tmp_path):
    """`mlm>simcse` alone: its mlm stage lives in the run directory a unit `mlm` would have, but no such unit was
    planned; bench status lists it among the stages, not as a unit "stopped" (it was, before)."""
    results = tmp_path / "results"
    with one_thread():
        run = CliRunner().invoke(main, _args(tiny_bert_dir, corpus_file, grid_root, results, "mlm>simcse"))
    assert run.exit_code == 0, run.output
    status = CliRunner().invoke(main, ["status", "--results-dir", str(results)])
    assert status.exit_code == 0, status.output
    assert "1 unit(s): 1 done" in status.output and "stopped" not in status.output
    assert "2 stage(s): 2 done" in status.output


def test_the_plan_points_a_reused_stage_at_the_first_unit_that_trains_it(tiny_bert_dir, corpus_file, grid_root,
                                                                         tmp_path):
    """With one --corpus for two tasks, the unit `mlm` is planned once per task under one run id: the chain's
    reuse must name the first of them (#1), not the last."""
    dry = CliRunner().invoke(main, _args(tiny_bert_dir, corpus_file, grid_root, tmp_path / "r", "mlm,mlm>simcse",
                                         "--dry-run") + ["--tasks", "stsb,sickr"])
    assert dry.exit_code == 0, dry.output
    assert "mlm: reuse (unit #1)" in dry.output and "reuse (unit #3)" not in dry.output, dry.output


def test_a_stage_whose_holder_died_on_another_host_is_taken_over(tiny_bert_dir, corpus_file, grid_root, tmp_path,
                                                                  monkeypatch, capsys, trainings):
    """A node died while training a shared stage: its lock names that host (no pid check can clear it) and its
    mtime stands still. The waiting unit's watcher judges it stale after STALE_AFTER_S (shortened here) on its
    own clock, takes the stage over, and trains it."""
    import usebench.store.locks as lock_module
    import usebench.run.stages as stages

    monkeypatch.setattr(stages, "WAIT_S", 0.1)
    monkeypatch.setattr(lock_module, "STALE_AFTER_S", 1.0)
    opts, unit, lock = _first_stage_held(tiny_bert_dir, corpus_file, grid_root, tmp_path,
                                         {"host": "node-17", "pid": 4242, "token": "theirs", "since": "then"})
    with one_thread():
        outcome = run_benchmark(opts, grid_root, tmp_path)
    err = capsys.readouterr().err
    assert f"waiting for stage {unit.stages[0].home}" in err and "taken over" in err, err
    assert outcome.units[0].state == "done" and [m for m, _ in trainings] == ["mlm", "simcse"]
    assert not lock.exists()
