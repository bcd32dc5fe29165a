"""Fault injection for the store's crash tests: ``USEBENCH_FAULT=<point>:<n>`` SIGKILLs this process the n-th
time it reaches the named point (1 = the first time), as a preemption, an OOM killer or a node loss would: no
``finally`` block, no lock release, no flush.

The points (each a place where a kill leaves the store half-written in a different way):

- ``unit-locked``: a unit's lock is held, nothing written yet;
- ``stage-locked``: a stage's lock is held, before it trains (or reuses its export);
- ``train-step``: after a training step of a stage (its train state saved every ``save_every`` steps);
- ``exported``: the chain's last stage is exported, the unit's ``method.json`` and results not written yet;
- ``evaluated``: one evaluation result stored, the unit's others not yet.

Visits are counted per process. Under a launcher that runs each unit in a process of its own (a Ray worker, a
submitit job), every one of them would count its own first visit and die: ``USEBENCH_FAULT_SHARED=<folder>``
counts the visits of every process given that folder together instead (each visit claims the next numbered
file ``<point>.<k>`` there, created exclusively, so two processes never count the same visit), and ``point:n``
kills the one process that makes the n-th visit of the whole run. The claimed files name the host and pid of
each visit.

Unset (always, outside tests), :func:`fault_point` does nothing beyond reading one environment variable.
"""
from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

FAULT_ENV = "USEBENCH_FAULT"
SHARED_ENV = "USEBENCH_FAULT_SHARED"  # a folder: visits counted across the processes that share it
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
    if _visit(name) == int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)


def _visit(name: str) -> int:
    """Count one visit of ``name``; returns its number: in this process, or (``USEBENCH_FAULT_SHARED``) among
    every process that shares the folder."""
    shared = os.environ.get(SHARED_ENV)
    if not shared:
        _reached[name] = _reached.get(name, 0) + 1
        return _reached[name]
    folder = Path(shared)
    folder.mkdir(parents=True, exist_ok=True)
    k = 1
    while True:  # the first free number is this visit's (O_EXCL: one creator per name, across processes)
        try:
            fd = os.open(folder / f"{name}.{k}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            k += 1
            continue
        try:
            os.write(fd, f"{socket.gethostname()} {os.getpid()}\n".encode())
        finally:
            os.close(fd)
        return k
