"""What every launcher shares: running one attempt of a unit with its thread budget, turning a failure into a
reported :class:`~benchmark.run.unit.UnitResult`, and progress lines on the driver."""
from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from benchmark.errors import BenchError
from benchmark.run.console import UNIT_LOG
from benchmark.run.plan import UnitSpec
from benchmark.run.unit import FAILED_FILE, UnitResult, say

UnitFn = Callable[[UnitSpec, Path, Path], UnitResult]  # run_unit, or a wrapper of it (tests)


class LaunchError(BenchError):
    """The launcher cannot run the units as asked (missing extra, no resources, unreachable cluster)."""


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch threads (intra-op), restoring the previous number; None: unchanged."""
    if n is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_attempt(unit_fn: UnitFn, spec: UnitSpec, data_root: Path, results_dir: Path,
                threads: int | None) -> UnitResult:
    """One attempt at ``spec`` in this process (a Ray worker, a SLURM job or the driver itself)."""
    with torch_threads(threads):
        return unit_fn(spec, Path(data_root), Path(results_dir))


def failure(spec: UnitSpec, results_dir: Path, error: BaseException | str, attempts: int, since: float,
            launcher_log: Path | None = None) -> UnitResult:
    """A failed unit as reported: the error (the unit's own failure marker, when this launch wrote one, i.e.
    after ``since``, a time.time()), and its log: the unit's console log, or the launcher's log of the job when
    the unit never started."""
    run_dir = Path(results_dir) / spec.run_id
    message = error if isinstance(error, str) else _message(error)
    marker = run_dir / FAILED_FILE
    try:
        if marker.stat().st_mtime >= since - 1:
            message = json.loads(marker.read_text(encoding="utf-8")).get("error") or message
    except (OSError, json.JSONDecodeError):
        pass
    log = run_dir / UNIT_LOG
    return UnitResult(spec.run_id, run_dir, spec.row, state="failed", error=message, attempts=attempts,
                      log=log if log.is_file() else launcher_log)


def _message(error: BaseException) -> str:
    """One line for an exception; a Ray task error is unwrapped to the unit's own exception."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException):
        error = cause
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:500]


def announce(i: int, n: int, spec: UnitSpec, what: str) -> None:
    """A driver progress line about one unit."""
    say(f"[{i}/{n}] {spec.run_id} ({spec.label}, seed {spec.seed}): {what}")

