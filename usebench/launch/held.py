"""Units another process holds: a launcher never takes "locked" as a unit's final state.

When an attempt finds its unit's lock held by a live-looking process (another `bench run` on the same store, or a
holder on another host that cannot be checked from there), it returns ``state="locked"``. The driver keeps such
a unit here and watches its lock (:class:`~usebench.store.locks.LockWatch`): when the lock goes away, the unit is
collected if the other process finished it, else handed out again; when the lock stops changing for
``STALE_AFTER_S`` on the driver's own clock (its holder died without releasing it: a node lost, a process
SIGKILLed), it is removed and the unit handed out again (it resumes from its train state). So the command ends
only when every unit has ended, and a unit that stays held keeps it waiting (with a line saying who holds it).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from usebench.launch.common import announce
from usebench.store.locks import LockWatch, read_owner
from usebench.plan.specs import UnitSpec
from usebench.plan.held_results import finished_unit
from usebench.store.unit_state import UnitResult

POLL_S = 30.0  # how often the driver looks at the locks of held units


@dataclass
class _Held:
    spec: UnitSpec
    watch: LockWatch
    number: int


class HeldUnits:
    """The held units of one launch, by their number in the launch (1-based)."""

    def __init__(self, data_root: Path, results_dir: Path, n_units: int):
        self.data_root, self.results_dir, self.n_units = Path(data_root), Path(results_dir), n_units
        self.units: dict[int, _Held] = {}
        self.next_look = 0.0

    def __len__(self) -> int:
        return len(self.units)

    def add(self, i: int, spec: UnitSpec) -> None:
        """Watch unit ``i`` (an attempt returned "locked")."""
        watch = LockWatch(self.results_dir / spec.run_id)
        watch.look()
        self.units[i] = _Held(spec, watch, i)
        owner = read_owner(watch.path) or {}
        announce(i, self.n_units, spec, f"held by pid {owner.get('pid')} on {owner.get('host')}"
                 f"{' (' + owner['job'] + ')' if owner.get('job') else ''}; waiting for it (its lock is watched: "
                 "gone, the unit is collected or run again; unchanged for the stale time, it is taken over)")

    def due(self, wait: bool = False) -> tuple[list[int], dict[int, UnitResult]]:
        """Look at the locks (at most every :data:`POLL_S`; ``wait``: sleep until then): (units to hand out
        again, units the other process finished, with their stored outcome)."""
        if not self.units:
            return [], {}
        now = time.monotonic()
        if now < self.next_look:
            if not wait:
                return [], {}
            time.sleep(self.next_look - now)
        self.next_look = time.monotonic() + POLL_S
        again, finished = [], {}
        for i, held in list(self.units.items()):
            state = held.watch.look()
            if state == "alive":
                continue
            if state == "stale":
                held.watch.break_stale()
                announce(i, self.n_units, held.spec, "its holder stopped touching the lock: lock removed; "
                                                     "running it again (it resumes from its train state)")
            del self.units[i]
            done = finished_unit(held.spec, self.data_root, self.results_dir) if state == "gone" else None
            if done is not None:
                finished[i] = done
                announce(i, self.n_units, held.spec, "finished by the other process; collected")
            else:
                again.append(i)
        return again, finished
