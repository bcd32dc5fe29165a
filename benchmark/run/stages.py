"""Stages as the unit of training: each distinct stage is trained once and reused by every unit that needs it.

A stage's identity is (method, preset + config, training data, seed, the stage it starts from): the dict
:func:`stage_identity` builds, whose hash names it. Where it lives (its *home*, relative to the results dir):

- the first stage of a chain that trains on the target's unlabeled sentences is, by itself, the single-method
  unit ``tsdae`` (same config, data, seed and backbone): its home is that unit's run directory, so
  ``--methods tsdae`` and the first stage of ``tsdae>nli-sts`` are one directory (and a ``tsdae`` unit trained
  by an earlier run is reused as it stands; single-method run ids and layout are unchanged);
- every other stage lives in ``.stages/<method>__<id12>__s<seed>/`` (hidden: the results store's readers skip
  it), with its own ``config.json``, ``log.jsonl``, ``checkpoint/`` and train state, once.

A stage trains under its own lock, ``UnitLock(<home>/.stage)`` (:mod:`benchmark.run.lock`, so every launcher
shares the rule): two processes never train one stage, the second waits and then reuses the finished export;
a stage whose process was killed is taken over and resumes from its train state. A unit's own lock stays on
its run directory, for its evaluations.
"""
from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmark.results import config_hash
from benchmark.run.lock import LOCK_FILE, STALE_AFTER_S, LockWatch, UnitLock, UnitLockedError

STAGES_HOME = ".stages"
STAGE_LOCK_DIR = ".stage"  # a stage's lock: <home>/.stage/.lock (the unit lock of a run dir is <run_dir>/.lock)
STAGE_CONFIG = "config.json"
WAIT_S = 15.0  # how often a unit waiting for a stage another process trains looks again
KEEP_ON_FORCE = (LOCK_FILE, STAGE_LOCK_DIR, "unit.log")


def stage_identity(method: str, preset: str, config: dict[str, Any], data: dict[str, Any], seed: int,
                   parent: str | None) -> dict[str, Any]:
    """What makes two stages the same training: ``config["model"]`` names the backbone of a first stage and
    ``stage:<parent id>`` for a stage that starts from another one."""
    config = {**config, "model": f"stage:{parent}"} if parent else config
    return {"method": method, "preset": preset, "config": config, "data": data, "seed": seed}


def stage_id(identity: dict[str, Any]) -> str:
    return config_hash(identity)


def shared_home(method: str, identity: dict[str, Any], seed: int) -> str:
    """``.stages/<method>__<id12>__s<seed>``: the home of a stage that is not a single-method unit."""
    return f"{STAGES_HOME}/{method}__{stage_id(identity)[:12]}__s{seed}"


def finished(home: Path) -> bool:
    """Whether the stage's export is complete (method.json is written last)."""
    return (Path(home) / "checkpoint" / "method.json").is_file()


@contextmanager
def stage_lock(home: Path, say: Callable[[str], None], enabled: bool = True) -> Iterator[UnitLock | None]:
    """Hold the stage at ``home`` for the block; while another live process holds it, wait (saying so once).

    A holder that is gone (its lock stale by :mod:`benchmark.run.lock`'s rules) is taken over, so the stage
    resumes. The caller re-checks :func:`finished` inside the block: the other process may have finished it.
    """
    if not enabled:  # torchrun: every rank trains together; rank 0 alone may not lock (as for units)
        yield None
        return
    lock, told = UnitLock(Path(home) / STAGE_LOCK_DIR), False
    watch = LockWatch(Path(home) / STAGE_LOCK_DIR)  # this process waits long enough to judge a holder gone
    while True:
        try:
            lock.acquire()
            break
        except UnitLockedError as e:
            if not told:
                say(f"  waiting for stage {Path(home).name}: {e}")
                told = True
            if watch.look() == "stale" and watch.break_stale():
                say(f"  stage {Path(home).name}: its holder's lock stood still for {STALE_AFTER_S:.0f} s; taken over")
                continue
            time.sleep(WAIT_S)
    try:
        yield lock
    finally:
        lock.release()


@dataclass(frozen=True)
class StageUse:
    """What one unit does with one of its stages: ``train``, ``reuse`` (trained by an earlier unit of this
    plan, ``source`` = that unit's run id) or ``done`` (finished in the store, ``source`` = its home)."""

    k: int
    method: str
    home: str
    action: str
    source: str = ""

    def text(self, number: dict[str, int] | None = None) -> str:
        """``tsdae: train``, ``sbert-nli: reuse (unit #3)`` / ``(unit <run id>)``, ``tsdae: done (<home>)``."""
        if self.action == "train":
            return f"{self.method}: train"
        if self.action == "done":
            return f"{self.method}: done ({self.source})"
        unit = f"#{number[self.source]}" if number and self.source in number else self.source
        return f"{self.method}: reuse (unit {unit})"


def stage_usage(units: Sequence[Any], results_dir: Path) -> list[list[StageUse]]:
    """Per unit (:class:`benchmark.run.plan.UnitSpec`), in plan order, what happens to each of its stages if
    the plan runs now."""
    first: dict[str, str] = {}  # home -> run id of the first unit that trains it
    out = []
    for unit in units:
        uses = []
        for k, stage in enumerate(unit.stages):
            if finished(Path(results_dir) / stage.home):
                uses.append(StageUse(k, stage.method, stage.home, "done", stage.home))
            elif stage.home in first:
                uses.append(StageUse(k, stage.method, stage.home, "reuse", first[stage.home]))
            else:
                first[stage.home] = unit.run_id
                uses.append(StageUse(k, stage.method, stage.home, "train"))
        out.append(uses)
    return out


def usage_totals(usage: list[list[StageUse]]) -> str:
    """One line: units, stage trainings, reuses within the plan, stages already in the store."""
    flat = [u for uses in usage for u in uses]
    count = {a: sum(u.action == a for u in flat) for a in ("train", "reuse", "done")}
    done_homes = len({u.home for u in flat if u.action == "done"})
    return (f"{len(usage)} unit(s), {len(flat)} stage slot(s): {count['train']} stage training(s), "
            f"{count['reuse']} reused from another unit of this plan, {count['done']} reused from the store "
            f"({done_homes} distinct finished stage(s))")


def force_reset(units: Sequence[Any], results_dir: Path, say: Callable[[str], None]) -> None:
    """``--force``: every run directory and stage home of ``units`` starts over, each once (a stage shared by
    many units is not wiped, and retrained, once per unit). Applied by the driver before anything is
    dispatched, so a retried or requeued unit resumes instead of starting over again. A directory another
    live process holds is left alone (said)."""
    dirs = dict.fromkeys(Path(results_dir) / p for u in units for p in (u.run_id, *(s.home for s in u.stages)))
    for path in dirs:
        if not path.is_dir():
            continue
        try:
            with UnitLock(path), UnitLock(path / STAGE_LOCK_DIR):
                for child in path.iterdir():
                    if child.name in KEEP_ON_FORCE:
                        continue
                    shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        except UnitLockedError as e:
            say(f"--force: {path.name} left as it is: {e}")
