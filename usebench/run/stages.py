"""Stages as the unit of training: each distinct stage is trained once and reused by every unit that needs it.

A stage's identity is (method, preset + config, training data, seed, the stage it starts from): the dict
:func:`usebench.plan.stage_ids.stage_identity` builds, whose hash names it. Where it lives (its *home*, relative to the results dir):

- the first stage of a chain that trains on the target's unlabeled sentences is, by itself, the single-method
  unit ``tsdae`` (same config, data, seed and backbone): its home is that unit's run directory, so
  ``--methods tsdae`` and the first stage of ``tsdae>nli-sts`` are one directory (and a ``tsdae`` unit trained
  by an earlier run is reused as it stands; single-method run ids and layout are unchanged); not so a first
  stage that starts from a published checkpoint (``--nli-sts-model``): no plain unit is that, it lives in
  ``.stages/`` like the rest;
- every other stage lives in ``.stages/<method>__<id12>__s<seed>/`` (hidden: the results store's readers skip
  it), with its own ``config.json``, ``log.jsonl``, ``checkpoint/`` and train state, once.

Sharing is explicit: every unit's ``stages.json`` names the homes it uses, and ``--force`` resets only what the
named units own (:func:`force_plan`): a home another unit of the store uses is kept, and the plan says so.
A stage that starts from a local checkpoint directory has that checkpoint's content hash in its identity
(``starts``, :func:`usebench.plan.planner.external_starts`).

A stage trains under its own lock, ``UnitLock(<home>/.stage)`` (:mod:`usebench.run.lock`, so every launcher
shares the rule): two processes never train one stage, the second waits and then reuses the finished export;
a stage whose process was killed is taken over and resumes from its train state. A unit's own lock stays on
its run directory, for its evaluations.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.plan.stage_ids import STAGES_HOME
from usebench.run.lock import LOCK_FILE, STALE_AFTER_S, LockWatch, UnitLock, UnitLockedError

STAGE_LOCK_DIR = ".stage"  # a stage's lock: <home>/.stage/.lock (the unit lock of a run dir is <run_dir>/.lock)
STAGE_CONFIG = "config.json"
WAIT_S = 15.0  # how often a unit waiting for a stage another process trains looks again
WAIT_ENV = "USEBENCH_STAGE_WAIT_S"  # overrides WAIT_S (crash tests, whose stages train in a second)
KEEP_ON_FORCE = (LOCK_FILE, STAGE_LOCK_DIR, "unit.log")


def finished(home: Path) -> bool:
    """Whether the stage's export is complete (method.json is written last)."""
    return (Path(home) / "checkpoint" / "method.json").is_file()


@contextmanager
def stage_lock(home: Path, say: Callable[[str], None], enabled: bool = True) -> Iterator[UnitLock | None]:
    """Hold the stage at ``home`` for the block; while another live process holds it, wait (saying so once).

    A holder that is gone (its lock stale by :mod:`usebench.run.lock`'s rules) is taken over, so the stage
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
            time.sleep(float(os.environ.get(WAIT_ENV) or WAIT_S))
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


def stage_usage(units: Sequence[Any], results_dir: Path,
                reset: Sequence[str] = ()) -> list[list[StageUse]]:
    """Per unit (:class:`usebench.plan.specs.UnitSpec`), in plan order, what happens to each of its stages if
    the plan runs now (``reset``: homes ``--force`` starts over, so they train whatever they hold)."""
    first: dict[str, str] = {}  # home -> run id of the first unit that trains it
    wiped = set(reset)
    out = []
    for unit in units:
        uses = []
        for k, stage in enumerate(unit.stages):
            if stage.home not in wiped and finished(Path(results_dir) / stage.home):
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


@dataclass(frozen=True)
class ForcePlan:
    """What ``--force`` does to the store (:func:`force_plan`): ``reset`` (paths relative to the results dir:
    the named units' run directories and the stage homes only they use) start over; ``kept`` maps each stage
    home that a unit outside the run also uses to those units' run ids, and is left as it is (reused)."""

    reset: tuple[str, ...]
    kept: dict[str, tuple[str, ...]]

    def notes(self) -> list[str]:
        """One line per kept home: the plan and the run say why it is not retrained."""
        return [f"--force: stage home {home} is kept (also used by {', '.join(users)}, outside this run; name "
                f"those units too to retrain it)" for home, users in self.kept.items()]


def store_users(results_dir: Path) -> dict[str, set[str]]:
    """Stage home -> run ids of the store's units whose ``stages.json`` lists it (a unit that ran, or started)."""
    users: dict[str, set[str]] = {}
    root = Path(results_dir)
    if not root.is_dir():
        return users
    for stages_file in root.glob("*/stages.json"):
        try:
            entries = json.loads(stages_file.read_text(encoding="utf-8"))
            homes = [str(e["home"]) for e in entries]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # unreadable: its unit is not known to use anything (bench status reports it)
        for home in homes:
            users.setdefault(home, set()).add(stages_file.parent.name)
    return users


def force_plan(units: Sequence[Any], results_dir: Path) -> ForcePlan:
    """Ownership under ``--force``: a unit owns its run directory, and a stage home that no unit outside the run
    uses. A home another unit uses (the plain ``tsdae`` unit whose run directory is ``tsdae>nli-sts``'s first
    stage, or a ``.stages`` home a unit outside the run was trained on) is kept: resetting it would delete that
    unit's results or leave them scored on weights that no longer exist."""
    named = {u.run_id for u in units}
    users = store_users(results_dir)
    homes = dict.fromkeys(p for u in units for p in (u.run_id, *(s.home for s in u.stages)))
    reset: list[str] = []
    kept: dict[str, tuple[str, ...]] = {}
    for home in homes:
        outside = users.get(home, set()) - named
        if home not in named and not home.startswith(STAGES_HOME) \
                and (Path(results_dir) / home / "method.json").is_file():
            outside.add(home)  # a finished unit lives there (one stored before stages.json was written)
        if outside:
            kept[home] = tuple(sorted(outside))
        else:
            reset.append(home)
    return ForcePlan(tuple(reset), kept)


def force_reset(units: Sequence[Any], results_dir: Path, say: Callable[[str], None]) -> ForcePlan:
    """``--force``: every run directory of ``units`` and every stage home only they use starts over, each once
    (:func:`force_plan`; a stage shared by many units is not wiped, and retrained, once per unit). A home a unit
    outside the run uses is kept (said). Applied by the driver before anything is dispatched, so a retried or
    requeued unit resumes instead of starting over again. A directory another live process holds is left
    alone (said)."""
    plan = force_plan(units, results_dir)
    for note in plan.notes():
        say(note)
    from usebench.run.reevaluate import say_force_drops

    evaluated = {t for u in units for t in u.evals}
    for rel in plan.reset:
        path = Path(results_dir) / rel
        if not path.is_dir():
            continue
        say_force_drops(path, evaluated, say)
        try:
            with UnitLock(path), UnitLock(path / STAGE_LOCK_DIR):
                for child in path.iterdir():
                    if child.name in KEEP_ON_FORCE:
                        continue
                    shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        except UnitLockedError as e:
            say(f"--force: {path.name} left as it is: {e}")
    return plan
