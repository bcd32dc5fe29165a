"""Grid progress: the line a launcher prints when a unit finishes, with its main scores, its time, and the grid's
ETA from the measured step times.

The rate is measured, never assumed: the wall time of the units this invocation trained (training and evaluation)
over the optimizer steps of the stages they trained (their planned budgets; a reused stage costs nothing). The ETA is
the planned steps of the stages still to train (each shared stage once) at that rate, divided among the units
running at once; until a unit has trained, there is no ETA.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.store.files import read_json
from usebench.store.unit_state import UnitResult, finished

REUSED = ("reusing", "done earlier")  # training notes of a stage that cost no step (usebench/run/unit.py)


def duration(seconds: float) -> str:
    """``42s``, ``4m12s``, ``3h05m``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def main_scores(result: UnitResult) -> str:
    """``askubuntu map 61.23, stsb spearman 80.10`` from the unit's stored results (x100, as `bench run` prints)."""
    parts = []
    for task, path in result.results:
        try:
            record = read_json(path)
            parts.append(f"{task} {record['main_metric']} {float(record['main_score']) * 100:.2f}")
        except (OSError, ValueError, KeyError, TypeError):
            parts.append(f"{task} (unreadable result)")
    return ", ".join(parts) or "no result stored"


@dataclass
class GridProgress:
    """What the grid has left and how fast its units train, updated as units finish."""

    units: Sequence[Any]  # UnitSpec (a launcher's baseline jobs have no stages and count nothing)
    results_dir: Path | None = None  # where a stage finished by another process shows as done
    seconds: float = 0.0  # wall time of the finished units that trained
    steps: int = 0  # the steps those units trained
    done: set[str] = field(default_factory=set)  # finished units' run ids
    trained: set[str] = field(default_factory=set)  # stage homes known to be finished

    def finished(self, spec: Any, result: UnitResult, running: int = 1, where: str = "") -> str:
        """Record ``result`` and return its line: ``done in 4m12s: askubuntu map 61.23; grid 3/12 done, ETA ...``
        (a failed unit: ``failed: <error> (job 12); grid ...``); ``running``: units in flight now; ``where``: e.g. its job."""
        stages = getattr(spec, "stages", ())
        notes = list(result.training) + [""] * (len(stages) - len(result.training))
        cost = sum(stage.steps or 0 for stage, note in zip(stages, notes) if not note.startswith(REUSED))
        if cost and result.state == "done":
            self.seconds, self.steps = self.seconds + result.seconds, self.steps + cost
            self.trained.update(stage.home for stage in stages)
        self.done.add(spec.run_id)
        at = f" ({where})" if where else ""
        what = f"done in {duration(result.seconds)}{at}: {main_scores(result)}" if result.state == "done" \
            else f"{result.state}: {result.error}{at}"  # ": failed: <error>", as every launcher printed it before
        return f"{what}; {self.eta(running)}"

    def eta(self, running: int = 1) -> str:
        """``grid 3/12 done, ETA 40m (8,000 steps left at 0.300 s/step measured, 2 at once)``."""
        units = [u for u in self.units if getattr(u, "stages", ())]
        head = f"grid {len([u for u in units if u.run_id in self.done])}/{len(units)} done"
        left = {s.home: s.steps or 0 for u in units if u.run_id not in self.done for s in u.stages
                if not self._finished(s.home)}
        if not left:
            return head
        if not self.steps:
            return f"{head}, ETA once a unit has trained ({sum(left.values()):,} steps left)"
        rate, at_once = self.seconds / self.steps, max(1, running)
        eta = sum(left.values()) * rate / at_once
        return (f"{head}, ETA {duration(eta)} ({sum(left.values()):,} steps left at {rate:.3f} s/step measured"
                + (f", {at_once} at once)" if at_once > 1 else ")"))

    def _finished(self, home: str) -> bool:
        if home not in self.trained and self.results_dir is not None and finished(self.results_dir / home):
            self.trained.add(home)  # finished by a unit before it (a shared stage) or another process
        return home in self.trained
