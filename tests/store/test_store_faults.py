"""The store under faults (issue 32): processes run one grid on one store while a harness SIGKILLs them at named
points (:mod:`usebench.run.faults`) and restarts them; at the end the store equals a clean run's.

The grid: ``tsdae`` and ``nli-sts>tsdae`` on TwitterPara and AskUbuntu (tiny BERT, one seed, 2 steps, a train
state after step 1): 4 units, 6 distinct stages (the two NLI+STSb stages shared by both chains, a TSDAE stage
per chain and one per plain unit, whose home is its run directory).
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from usebench.run.faults import FAULT_ENV, POINTS, SHARED_ENV
from usebench.plan.specs import RunOptions
from usebench.plan.planner import plan_run
from usebench.store.stage_ids import STAGES_HOME
from usebench.plan.stage_usage import stage_usage
from usebench.run.stages import WAIT_ENV
from usebench.store.unit_state import grid_status
from usebench.plan.held_results import finished_unit
from tests.launch.helpers import store_digest
from tests.grid_roots import root_with_train_corpora

TASKS = ("twitterpara", "askubuntu")
METHODS = "tsdae,nli-sts>tsdae"
SMALL = ("lr=1e-3", "batch_size=2", "max_length=16", "log_every=1", "save_every=1")
SEED = 32  # the fault schedule's


@pytest.fixture(scope="module")
def two_task_root(grid_root, tmp_path_factory) -> Path:
    """The grid fixtures plus a small unlabeled train.txt for each of the two target tasks."""
    return root_with_train_corpora(grid_root, tmp_path_factory.mktemp("faults-root"), TASKS)


def _command(model: Path, root: Path, results: Path, reverse: bool = False, extra: Sequence[str] = ()) -> list[str]:
    tasks = ",".join(reversed(TASKS) if reverse else TASKS)  # the same units, planned in another order
    return [sys.executable, "-m", "usebench.cli", "run", "--methods", METHODS, "--tasks", tasks,
            "--model", str(model), "--preset", "smoke", "--max-steps", "2", "--device", "cpu", "--data-root",
            str(root), "--results-dir", str(results), *sum((["--set", s] for s in SMALL), []), *extra]


def _start(model: Path, root: Path, results: Path, fault: str | None, log: Path, reverse: bool = False,
           extra: Sequence[str] = (), env: Mapping[str, str] | None = None) -> subprocess.Popen:
    """`bench run` of the grid as a process of its own (``extra``: more options, e.g. a launcher's; ``env``: more
    variables), with ``USEBENCH_FAULT=fault`` when given, its output appended to ``log``."""
    environ = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
               WAIT_ENV: "0.2", "HF_HUB_OFFLINE": "1", **(env or {})}
    environ.pop(FAULT_ENV, None)
    if fault:
        environ[FAULT_ENV] = fault
    return subprocess.Popen(_command(model, root, results, reverse, extra), env=environ, stdout=log.open("ab"),
                            stderr=subprocess.STDOUT, cwd=Path(__file__).resolve().parents[2])


def _reap(procs: list[subprocess.Popen], timeout: float = 300) -> list[int]:
    """Exit codes of ``procs``, each collected as soon as it exits: a killed process not yet waited for is a
    zombie whose pid still answers, so the others would wait on its lock (no shell or SLURM leaves one)."""
    deadline = time.monotonic() + timeout
    while [p.poll() for p in procs].count(None):  # poll every one each time (any() would stop at the first alive)
        if time.monotonic() > deadline:
            for p in procs:
                p.kill()
            pytest.fail("a process of the wave did not finish in time")
        time.sleep(0.1)
    return [int(p.returncode) for p in procs]


def _weights(results: Path) -> dict[str, str]:
    """sha256 of every exported weight file in the store, run directories and stage homes alike."""
    return {str(p.relative_to(results)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(results.rglob("checkpoint/model.safetensors"))}


def _schedule(seed: int) -> list[list[str]]:
    """Waves of concurrent processes, each with one fault: every point once, then one more, at a seeded visit."""
    rng = random.Random(seed)
    points = list(POINTS) + [rng.choice(POINTS)]
    rng.shuffle(points)
    faults = [f"{p}:{rng.randint(1, 2)}" for p in points]
    return [faults[0:2], faults[2:4], faults[4:6]]


@pytest.mark.slow
def test_a_grid_killed_at_every_point_and_restarted_equals_a_clean_run(tiny_bert_dir, two_task_root, tmp_path):
    clean, faulty = tmp_path / "clean", tmp_path / "faulty"
    log = tmp_path / "processes.log"
    t0 = time.monotonic()
    first = _start(tiny_bert_dir, two_task_root, clean, None, tmp_path / "clean.log")
    assert first.wait(300) == 0, (tmp_path / "clean.log").read_text()

    kills = restarts = processes = 0
    outcome: dict[str, int] = {}
    for wave in _schedule(SEED):  # concurrent processes on one store, each killed at its point
        # two orders of the same plan: the processes start on different units and meet on the shared stages
        procs = [_start(tiny_bert_dir, two_task_root, faulty, fault, log, reverse=bool(i % 2))
                 for i, fault in enumerate(wave)]
        processes += len(procs)
        codes = _reap(procs)
        outcome.update(zip(wave, codes))
        kills += sum(code == -signal.SIGKILL for code in codes)
        assert all(code in (0, 1, -signal.SIGKILL) for code in codes), (codes, log.read_text()[-4000:])
    for _ in range(3):  # restarts without faults until the grid is done
        processes += 1
        restarts += 1
        if _start(tiny_bert_dir, two_task_root, faulty, None, log).wait(300) == 0:
            break
    else:
        pytest.fail("the grid did not finish after 3 restarts:\n" + log.read_text()[-4000:])
    seconds = time.monotonic() - t0
    print(f"fault matrix: {processes} processes, {kills} killed, {restarts} restart(s) to finish, {seconds:.0f} s; "
          f"exit codes per fault: {outcome}")
    assert kills >= 4  # most faults fired (a process may find its point's work done by another)

    assert_same_as_clean(faulty, clean, tiny_bert_dir, two_task_root, log.read_text())


def assert_same_as_clean(faulty: Path, clean: Path, model: Path, root: Path, output: str) -> None:
    """The store the faulty processes left equals the clean one: the same units, every score, the same weights,
    no lock left, all done, nothing left to plan, and (from ``output``, everything the processes of the faulty
    store printed) no stage trained from scratch twice."""
    assert store_digest(faulty) == store_digest(clean)
    assert len(store_digest(clean)) == 4
    assert _weights(faulty) == _weights(clean)
    assert len([k for k in _weights(clean) if k.startswith(STAGES_HOME)]) == 4  # NLI, STSb, 2 TSDAE after them
    assert not [p for p in faulty.rglob(".lock*")], "orphan lock"
    assert {u.state for u in grid_status(faulty)} == {"done"}
    opts = RunOptions(methods=tuple(METHODS.split(",")), tasks=",".join(TASKS), preset="smoke",
                      model=str(model), max_steps=2, overrides=SMALL, device="cpu")
    plan = plan_run(opts, root)
    assert all(finished_unit(u, root, faulty) is not None for u in plan.units)
    assert {use.action for uses in stage_usage(plan.units, faulty) for use in uses} == {"done"}
    # no stage trained twice: each of the 6 started from scratch once (a killed attempt was resumed, said so)
    fresh = fresh_trainings(output)
    assert len(fresh) == 6 and Counter(home for _, home in fresh if home) == \
        Counter(k.split("/checkpoint")[0] for k in _weights(clean) if k.startswith(STAGES_HOME)), fresh
    for unit in plan.units:  # every unit records the same stage homes as in the clean store
        assert json.loads((faulty / unit.run_id / "stages.json").read_text()) == \
            json.loads((clean / unit.run_id / "stages.json").read_text())


def fresh_trainings(output: str) -> list[tuple[str, str]]:
    """(method, home; empty for a unit's own run directory) of every stage a unit started from scratch, from its
    ``stage k/n <method>: training [<home>]`` line (a resumed or reused stage says so instead)."""
    return re.findall(r"^ +(?:stage \d/\d )?(\S+): training(?: \[(\S+)\])?$", output, re.M)


def test_a_fault_point_kills_only_at_the_visit_asked_for(monkeypatch):
    """``USEBENCH_FAULT=point:n``: the n-th visit of that point, no other; an unknown point is an error."""
    import usebench.run.faults as faults

    kills: list[int] = []
    monkeypatch.setattr(faults.os, "kill", lambda pid, sig: kills.append(sig))
    monkeypatch.setattr(faults, "_reached", {})
    monkeypatch.setenv(FAULT_ENV, "train-step:2")
    for point in ("train-step", "evaluated", "train-step", "train-step"):
        faults.fault_point(point)
    assert kills == [signal.SIGKILL]
    monkeypatch.setenv(FAULT_ENV, "nowhere:1")
    with pytest.raises(ValueError, match="unknown point 'nowhere'"):
        faults.fault_point("train-step")


def test_shared_visits_kill_one_process_of_the_whole_run(tmp_path):
    """``USEBENCH_FAULT_SHARED``: processes that each visit the point once count together, so ``point:2`` kills the
    second of three, not every one (each unit of a Ray or submitit run is a process of its own)."""
    env = {**os.environ, FAULT_ENV: "train-step:2", SHARED_ENV: str(tmp_path / "visits")}
    visit = [sys.executable, "-c", "from usebench.run.faults import fault_point; fault_point('train-step')"]
    codes = [subprocess.run(visit, env=env, cwd=Path(__file__).resolve().parents[2]).returncode for _ in range(3)]
    assert codes == [0, -signal.SIGKILL, 0]
    assert sorted(p.name for p in (tmp_path / "visits").iterdir()) == [f"train-step.{k}" for k in (1, 2, 3)]
