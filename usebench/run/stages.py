"""Stages as the unit of training: each distinct stage is trained once and reused by every unit that needs it.

A stage's identity is (method, preset + config, training data, seed, the stage it starts from): the dict
:func:`usebench.plan.stage_identity.stage_identity` builds, whose hash names it. Where it lives (its *home*,
relative to the results dir):

- the first stage of a chain that trains on the target's unlabeled sentences is, by itself, the single-method
  unit ``tsdae`` (same config, data, seed and backbone): its home is that unit's run directory, so
  ``--methods tsdae`` and the first stage of ``tsdae>nli-sts`` are one directory (and a ``tsdae`` unit trained
  by an earlier run is reused as it stands; single-method run ids and layout are unchanged); not so a first
  stage that starts from a published checkpoint (``--nli-sts-model``): no plain unit is that, it lives in
  ``.stages/`` like the rest;
- every other stage lives in ``.stages/<method>__<id12>__s<seed>/`` (hidden: the results store's readers skip
  it), with its own ``config.json``, ``log.jsonl``, ``checkpoint/`` and train state, once.

Sharing is explicit: every unit's ``stages.json`` names the homes it uses, and ``--force`` resets only what the
named units own (:func:`usebench.plan.stage_usage.force_plan`): a home another unit of the store uses is kept, and the plan says so.
A stage that starts from a local checkpoint directory has that checkpoint's content hash in its identity
(``starts``, :func:`usebench.plan.planner.external_starts`).

A stage trains under its own lock, ``UnitLock(<home>/.stage)`` (:mod:`usebench.store.locks`, so every launcher
shares the rule): two processes never train one stage, the second waits and then reuses the finished export;
a stage whose process was killed is taken over and resumes from its train state. A unit's own lock stays on
its run directory, for its evaluations.
"""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from usebench.plan.stage_usage import ForcePlan, force_plan
from usebench.store.locks import LOCK_FILE, STALE_AFTER_S, LockWatch, UnitLock, UnitLockedError
from usebench.store.unit_files import STAGE_LOCK_DIR

STAGE_CONFIG = "config.json"
WAIT_S = 15.0  # how often a unit waiting for a stage another process trains looks again
WAIT_ENV = "USEBENCH_STAGE_WAIT_S"  # overrides WAIT_S (crash tests, whose stages train in a second)
KEEP_ON_FORCE = (LOCK_FILE, STAGE_LOCK_DIR, "unit.log")


@contextmanager
def stage_lock(home: Path, say: Callable[[str], None], enabled: bool = True) -> Iterator[UnitLock | None]:
    """Hold the stage at ``home`` for the block; while another live process holds it, wait (saying so once).

    A holder that is gone (its lock stale by :mod:`usebench.store.locks`' rules) is taken over, so the stage
    resumes. The caller re-checks :func:`usebench.store.unit_state.finished` inside the block: the other process may have finished it.
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
