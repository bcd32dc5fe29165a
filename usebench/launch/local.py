"""The `local` launcher: every unit in this process, one after the other, in plan order.

Unlike :func:`usebench.run.grid.run_sequentially` (the library default, which raises at the first failure so a
caller sees the exception), a unit that fails here is retried up to ``retries`` times and then reported, and
the next unit runs: a grid is a set of independent units, and one bad unit should not cost the night's other
results. A unit another process holds is waited for after the others (:mod:`usebench.launch.held`). Ctrl-C
(KeyboardInterrupt) still stops the whole run at once; the interrupted unit is marked.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from usebench.launch.common import UnitFn, announce, failure, run_attempt
from usebench.launch.held import HeldUnits
from usebench.launch.options import LaunchOptions
from usebench.plan.specs import UnitSpec
from usebench.run.progress import GridProgress
from usebench.run.unit import run_unit
from usebench.store.unit_state import UnitResult


class LocalLauncher:
    """``execute`` for :func:`usebench.run.grid.run_benchmark`: units in this process, failures isolated."""

    name = "local"

    def __init__(self, opts: LaunchOptions, unit_fn: UnitFn = run_unit):
        self.opts, self.unit_fn = opts, unit_fn

    def __call__(self, units: Sequence[UnitSpec], data_root: Path, results_dir: Path) -> list[UnitResult]:
        out: dict[int, UnitResult] = {}
        held = HeldUnits(data_root, results_dir, len(units))
        progress = GridProgress(units, Path(results_dir))
        todo = list(range(1, len(units) + 1))
        while todo or held:
            for i in todo:
                spec = units[i - 1]
                announce(i, len(units), spec, "running")
                result = self._run(spec, data_root, results_dir, i, len(units))
                if result.state == "locked":
                    held.add(i, spec)
                    continue
                announce(i, len(units), spec, progress.finished(spec, result))
                out[i] = result
            todo, finished = held.due(wait=True) if held else ([], {})
            out.update(finished)
        return [out[i] for i in sorted(out)]

    def _run(self, spec: UnitSpec, data_root: Path, results_dir: Path, i: int, n: int) -> UnitResult:
        since = time.time()
        for attempt in range(1, self.opts.retries + 2):
            try:
                result = run_attempt(self.unit_fn, spec, data_root, results_dir, self.opts.cpus_per_unit)
                result.attempts = attempt
                return result
            except Exception as e:  # noqa: BLE001  (any failure of one unit is that unit's; Ctrl-C is not caught)
                report = failure(spec, results_dir, e, attempt, since)
                if attempt <= self.opts.retries:
                    announce(i, n, spec, f"attempt {attempt} failed ({report.error}); retrying")
        return report
