"""What a unit cost: wall and CPU seconds and peak resident memory of each attempt, in ``usage.json``.

Every attempt is an entry from its start (``state`` running), rewritten every :data:`HEARTBEAT_S` seconds with its
time so far and closed when it ends (finished, failed or interrupted); an entry still ``running`` when the next
attempt starts was killed (``kill -9``, a lost machine): it is marked ``killed`` and keeps the time of its last
heartbeat, so a unit's cost counts its killed attempts too. Each entry also holds what other processes used of the
machine's CPUs meanwhile (``others_cpu_s``: the machine's busy time from ``/proc/stat`` minus this process' CPU
time, Linux): :func:`beside_other_work` flags an attempt whose time is not the unit's own cost.

The unit's own peak: the kernel's high-water mark of the process' resident memory (VmHWM) is reset when the unit
starts (``/proc/self/clear_refs``, Linux 4.0+), so a unit run after a hungrier one in the same process (the local
launcher runs a grid in one) is not charged with that one's peak, which ``getrusage``'s ``ru_maxrss`` would do.
The reset also resets ``ru_maxrss`` of a live process, so only one of the two is recorded: the unit's own peak, or,
where the reset is not possible, the process' peak so far under its own name.
"""
from __future__ import annotations

import os
import resource
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.store.unit_files import USAGE_FILE
from usebench.store import now_iso, read_json, write_json_atomic


def reset_peak_rss() -> bool:
    """Reset this process' resident-memory high-water mark; False where the kernel does not allow it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float | None:
    """The process' resident-memory high-water mark since the last reset (VmHWM), in MiB; None if unreadable."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


HEARTBEAT_S = 30.0  # how often a running attempt's entry is rewritten (a killed one keeps its last)
# Other processes' CPU time, as a share of the machine's cores over the attempt's wall time, above which the attempt
# ran beside other work (its wall time is then no measure of the unit's cost)
BESIDE_SHARE = 0.10


def machine_busy_s() -> float | None:
    """CPU seconds all processes of the machine have spent busy since boot (``/proc/stat``); None off Linux."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def beside_other_work(attempt: dict[str, Any]) -> bool | None:
    """Whether other processes used more than :data:`BESIDE_SHARE` of the machine's cores during ``attempt``;
    None when it was not measured (an entry written before this record existed, or off Linux)."""
    others, wall, cores = attempt.get("others_cpu_s"), attempt.get("wall_s"), attempt.get("machine_cores")
    if others is None or not wall or not cores:
        return None
    return others / (wall * cores) > BESIDE_SHARE


@dataclass
class UsageClock:
    """Started when a unit starts: its wall and CPU clocks, the machine's busy time and (where possible) a reset
    memory peak. :meth:`begin` opens the attempt's entry and keeps it current; :meth:`record` or :meth:`end`
    closes it."""
    wall0: float = field(default_factory=time.perf_counter)
    cpu0: float = field(default_factory=time.process_time)
    own_peak: bool = field(default_factory=reset_peak_rss)
    busy0: float | None = field(default_factory=machine_busy_s)
    attempt: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    _stop: threading.Event = field(default_factory=threading.Event)
    _beat: threading.Thread | None = None

    def numbers(self) -> dict[str, Any]:
        """This attempt so far: wall and CPU seconds, and other processes' CPU seconds on the machine."""
        wall, cpu = time.perf_counter() - self.wall0, time.process_time() - self.cpu0
        out: dict[str, Any] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}
        busy = machine_busy_s()
        if busy is not None and self.busy0 is not None:
            out["others_cpu_s"] = round(max(0.0, busy - self.busy0 - cpu), 3)
            out["machine_cores"] = os.cpu_count()
        return out

    def begin(self, run_dir: Path) -> None:
        """Open this attempt's entry (an earlier one left running was killed) and rewrite it every
        :data:`HEARTBEAT_S` seconds until it is closed."""
        attempts = _attempts(run_dir)
        for a in attempts:
            if a.get("state") == "running":
                a["state"] = "killed"
        attempts.append({"attempt": self.attempt, "state": "running", "started_at": now_iso(), **self.numbers()})
        write_json_atomic(run_dir / USAGE_FILE, {"attempts": attempts})
        self._beat = threading.Thread(target=self._heartbeat, args=(run_dir,), daemon=True, name="usage-heartbeat")
        self._beat.start()

    def _heartbeat(self, run_dir: Path) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            self._write(run_dir, {"state": "running", **self.numbers()})

    def _write(self, run_dir: Path, entry: dict[str, Any]) -> None:
        attempts = _attempts(run_dir)
        mine = [a for a in attempts if a.get("attempt") == self.attempt]
        if mine:
            mine[0].update(entry)
        else:
            attempts.append({"attempt": self.attempt, **entry})
        write_json_atomic(run_dir / USAGE_FILE, {"attempts": attempts})

    def _halt(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()

    def record(self, run_dir: Path, training: list[str]) -> None:
        """Close the attempt as finished: its time, training notes and peak memory."""
        self._halt()
        record_usage(run_dir, 0.0, 0.0, training, peak_rss_mb() if self.own_peak else None, clock=self)

    def end(self, run_dir: Path, state: str) -> None:
        """Close the attempt as ``state`` (failed, interrupted) with its time so far; never raises (the unit's own
        error matters more)."""
        self._halt()
        try:
            if (run_dir / USAGE_FILE).is_file():
                self._write(run_dir, {"state": state, **self.numbers(), "finished_at": now_iso()})
        except OSError:
            pass


def _attempts(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / USAGE_FILE
    attempts = (read_json(path) or {}).get("attempts") if path.is_file() else []
    return attempts if isinstance(attempts, list) else []  # unreadable: start the list again


def record_usage(run_dir: Path, wall_s: float, cpu_s: float, training: list[str],
                 unit_peak_mb: float | None = None, clock: UsageClock | None = None) -> None:
    """Close an attempt as finished in ``usage.json``: its wall and CPU seconds (all of the process' threads; the
    ``clock``'s own when given, with other processes' CPU time), and its peak resident memory: what a unit cost,
    read by the CPU-scale recipe's page (a resumed unit has one entry per attempt, killed ones included). The peak
    is the unit's own (``unit_peak_rss_mb``) when measured apart from the process, else the process' peak so far
    (``process_peak_rss_mb``), which may be an earlier unit's."""
    import torch

    memory = ({"unit_peak_rss_mb": unit_peak_mb} if unit_peak_mb is not None else
              {"process_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)})
    numbers = clock.numbers() if clock is not None else {"wall_s": round(wall_s, 3), "cpu_s": round(cpu_s, 3)}
    entry = {"state": "finished", **numbers, **memory, "threads": torch.get_num_threads(),
             "training": list(training), "finished_at": now_iso()}
    if clock is not None:
        clock._write(run_dir, entry)
        return
    attempts = _attempts(run_dir)
    attempts.append(entry)
    write_json_atomic(run_dir / USAGE_FILE, {"attempts": attempts})
