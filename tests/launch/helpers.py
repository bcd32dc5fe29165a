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

from benchmark.run.console import attempts
from benchmark.run.plan import UnitSpec
from benchmark.run.unit import UnitResult, run_unit

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
    """The most units whose attempts (from their unit.log) ran at the same moment."""
    events = []
    for log in results.glob("*/unit.log"):
        for start, end, _ in attempts(log):
            events += [(start, 1), (end, -1)]
    running = peak = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        running += step
        peak = max(peak, running)
    return peak


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def kill_once_at_step(marker: Path, step: int, spec: UnitSpec, data_root: Path, results_dir: Path) -> UnitResult:
    """``run_unit``, except that the first call (no ``marker`` yet) kills its own process with SIGKILL right
    after training step ``step``, leaving the unit's lock and train state behind as a crash would."""
    import benchmark.train.loop as loop

    if Path(marker).exists():
        return run_unit(spec, data_root, results_dir)
    real = loop.train

    def train(method, cfg, corpus, out_dir, **kw):
        def on_step(s: int) -> None:
            if s == step:
                Path(marker).write_text(str(os.getpid()))
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
    from benchmark.run.grid import RunOptions

    return RunOptions(methods=methods, tasks="stsb", seeds=seeds, preset="smoke", model=str(model),
                      corpus=(Path(corpus).resolve(),), max_steps=steps, overrides=TINY, device="cpu")
