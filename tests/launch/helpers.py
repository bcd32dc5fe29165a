"""The grid the launcher tests run (2 methods x 2 seeds, the tiny random BERT, 3 steps, evaluated on the STSb
test asset), a digest of a store to compare launchers by, and a unit function that kills its own process once
in the middle of training (importable by Ray workers and submitit jobs)."""
from __future__ import annotations

import hashlib
import json
import os
import signal
from pathlib import Path
from typing import Any

from usebench.run.console import attempts
from usebench.plan.specs import UnitSpec
from usebench.run.unit import run_unit
from usebench.store.unit_state import UnitResult

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TINY = ("lr=1e-3", "batch_size=8", "max_length=32", "log_every=1", "save_every=1")


def grid_args(model: Path, corpus: Path, results: Path, *more: str, methods: str = "simcse,mlm",
              seeds: int = 2, steps: int = 3) -> list[str]:
    """`bench run` arguments of the test grid (one torch thread per unit, so every launcher computes alike)."""
    return ["run", "--methods", methods, "--tasks", "stsb", "--seeds", str(seeds), "--corpus", str(corpus),
            "--model", str(model), "--preset", "smoke", "--max-steps", str(steps), "--device", "cpu",
            "--cpus-per-unit", "1", "--data-root", str(ASSETS), "--results-dir", str(results),
            *sum((["--set", t] for t in TINY), []), *more]


def store_digest(results: Path) -> dict[str, dict[str, Any]]:
    """Per run directory: its config hash, every stored score, and the sha256 of the exported weights."""
    out: dict[str, dict[str, Any]] = {}
    for run in sorted(p for p in Path(results).iterdir() if p.is_dir() and not p.name.startswith(".")):
        entry: dict[str, Any] = {"weights": _sha256(run / "checkpoint" / "model.safetensors")}
        for result in sorted(run.glob("*/*.json")):
            if result.parent.name in ("checkpoint", "train_state"):
                continue
            record = json.loads(result.read_text())
            entry[f"{result.parent.name}/{result.name}"] = (record["config_hash"], record["scores"],
                                                            record["task"]["data_sha256"])
        out[run.name] = entry
    return out


def max_overlap(results: Path) -> int:
    """The most units whose attempts (from their unit.log) ran at the same moment; a killed attempt has no end in
    its log and is left out."""
    events = []
    for log in results.glob("*/unit.log"):
        for start, end, _ in attempts(log):
            if end is not None:
                events += [(start, 1), (end, -1)]
    running = peak = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        running += step
        peak = max(peak, running)
    return peak


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def kill_once_at_step(marker: Path, step: int, spec: UnitSpec, data_root: Path, results_dir: Path,
                      as_host: str | None = None) -> UnitResult:
    """``run_unit``, except that the first call (no ``marker`` yet) kills its own process with SIGKILL right
    after training step ``step``, leaving the unit's lock and train state behind as a crash would; with
    ``as_host`` the lock left behind names that host (a node that died: no pid check can clear it)."""
    import usebench.train.loop as loop
    from usebench.store.locks import LOCK_FILE

    if Path(marker).exists():
        return run_unit(spec, data_root, results_dir)
    real = loop.train

    def train(method, cfg, corpus, out_dir, **kw):
        def on_step(s: int) -> None:
            if s == step:
                Path(marker).write_text(str(os.getpid()))
                if as_host:
                    lock = Path(results_dir) / spec.run_id / LOCK_FILE
                    lock.write_text(json.dumps({**json.loads(lock.read_text()), "host": as_host}))
                os.kill(os.getpid(), signal.SIGKILL)

        return real(method, cfg, corpus, out_dir, **{**kw, "on_step": on_step})

    loop.train = train
    try:
        return run_unit(spec, data_root, results_dir)
    finally:
        loop.train = real


def grid_options(model: Path, corpus: Path, methods: tuple[str, ...] = ("simcse", "mlm"), seeds: int = 2,
                 steps: int = 3) -> Any:
    """The RunOptions `bench run` builds from :func:`grid_args` (same units, same run ids)."""
    from usebench.plan.specs import RunOptions

    return RunOptions(methods=methods, tasks="stsb", seeds=seeds, preset="smoke", model=str(model),
                      corpus=(Path(corpus).resolve(),), max_steps=steps, overrides=TINY, device="cpu")


def fake_spec(run_id: str, device: str | None = None) -> UnitSpec:
    """A unit for launcher mechanics tests whose unit function does not train (see :func:`record_unit`)."""
    return UnitSpec(run_id=run_id, chain=("simcse",), stages=(), seed=0, task="stsb", corpus_files=(),
                    corpus_size=None, evals=(), config={}, row="simcse", device=device)


def record_unit(seconds: float, spec: UnitSpec, data_root: Path, results_dir: Path) -> UnitResult:
    """A unit function that only records, in ``<results>/<run_id>/seen.json``, what its process was given: pid,
    CUDA_VISIBLE_DEVICES, the job identity its lock would record, torch threads, start and end; it holds the
    unit's lock for ``seconds`` as a real unit would while training."""
    import time

    import torch

    from usebench.store.locks import UnitLock, job_identity

    run_dir = Path(results_dir) / spec.run_id
    with UnitLock(run_dir):
        start = time.time()
        time.sleep(seconds)
        seen = {"pid": os.getpid(), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "job": job_identity()[0], "threads": torch.get_num_threads(), "start": start, "end": time.time()}
    (run_dir / "seen.json").write_text(json.dumps(seen))
    return UnitResult(spec.run_id, run_dir, spec.row)


def hold_as_another_host(seconds: float, spec: UnitSpec, data_root: Path, results_dir: Path) -> UnitResult:
    """A unit function that takes the unit's lock, makes it look like another host's (so no pid check can clear
    it: only its job id can), and sleeps ``seconds``."""
    import time

    from usebench.store.locks import LOCK_FILE, UnitLock

    run_dir = Path(results_dir) / spec.run_id
    lock = UnitLock(run_dir)
    lock.acquire()
    owner = json.loads((run_dir / LOCK_FILE).read_text())
    (run_dir / LOCK_FILE).write_text(json.dumps({**owner, "host": "far-node"}))
    time.sleep(seconds)
    return UnitResult(spec.run_id, run_dir, spec.row)


def segfault_unit(spec: UnitSpec, data_root: Path, results_dir: Path) -> UnitResult:
    """A unit function whose process dies of a native crash (a NULL read), as a CUDA or tokenizer bug would."""
    import ctypes

    from usebench.run.console import unit_console

    with unit_console(Path(results_dir) / spec.run_id):
        print("about to crash", flush=True)
        ctypes.string_at(0)
    raise AssertionError("unreachable")


class Flaky(Exception):
    """A failure a retry gets past."""


def fail_once_at_step(monkeypatch: Any, step: int = 2) -> list[Path]:
    """Patch the training loop so the first training call dies after ``step`` (a unit the launcher retries); the
    calls' output folders are recorded in the returned list."""
    import usebench.train.loop as loop

    real, calls = loop.train, []

    def train(method, cfg, corpus, out_dir, **kw):
        calls.append(out_dir)

        def on_step(k: int) -> None:
            if k == step and len(calls) == 1:
                raise Flaky(f"first attempt dies after step {step}")
        return real(method, cfg, corpus, out_dir, **{**kw, "on_step": on_step})

    monkeypatch.setattr(loop, "train", train)
    return calls


def rendezvous_unit(meeting: Path, spec: UnitSpec, data_root: Path, results_dir: Path) -> UnitResult:
    """``run_unit``, entered through a meeting room: the unit marks itself present, waits (up to two minutes) for
    another unit to be present at the same moment, records how many it saw, and leaves after running. Units that
    a launcher runs one after another never see each other, whatever the machine's load."""
    import time

    meeting = Path(meeting)
    me = meeting / spec.run_id
    me.touch()
    deadline, seen = time.monotonic() + 120, 1
    while time.monotonic() < deadline:
        seen = sum(1 for p in meeting.iterdir() if not p.name.endswith(".seen"))
        if seen >= 2:
            break
        time.sleep(0.2)
    (meeting / f"{spec.run_id}.seen").write_text(str(seen))
    try:
        return run_unit(spec, data_root, results_dir)
    finally:
        me.unlink()
