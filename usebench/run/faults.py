"""Fault injection for the store's crash tests: ``USEBENCH_FAULT=<point>:<n>`` SIGKILLs this process the n-th
time it reaches the named point (1 = the first time), as a preemption, an OOM killer or a node loss would: no
``finally`` block, no lock release, no flush.

The points (each a place where a kill leaves the store half-written in a different way):

- ``unit-locked``: a unit's lock is held, nothing written yet;
- ``stage-locked``: a stage's lock is held, before it trains (or reuses its export);
- ``train-step``: after a training step of a stage (its train state saved every ``save_every`` steps);
- ``exported``: the chain's last stage is exported, the unit's ``method.json`` and results not written yet;
- ``evaluated``: one evaluation result stored, the unit's others not yet.

Unset (always, outside tests), :func:`fault_point` does nothing beyond reading one environment variable.
"""
from __future__ import annotations

import os
import signal

FAULT_ENV = "USEBENCH_FAULT"
POINTS = ("unit-locked", "stage-locked", "train-step", "exported", "evaluated")
_reached: dict[str, int] = {}


def fault_point(name: str) -> None:
    """Count a visit of ``name``; SIGKILL this process if ``USEBENCH_FAULT`` asks for this visit."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    point, _, count = spec.partition(":")
    if point not in POINTS:
        raise ValueError(f"{FAULT_ENV}={spec!r}: unknown point {point!r} (points: {', '.join(POINTS)})")
    if point != name:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] == int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)
