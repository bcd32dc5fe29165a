"""What a unit cost: wall and CPU seconds and peak resident memory of each finished attempt, in ``usage.json``.

The unit's own peak: the kernel's high-water mark of the process' resident memory (VmHWM) is reset when the unit
starts (``/proc/self/clear_refs``, Linux 4.0+), so a unit run after a hungrier one in the same process (the local
launcher runs a grid in one) is not charged with that one's peak, which ``getrusage``'s ``ru_maxrss`` would do.
The reset also resets ``ru_maxrss`` of a live process, so only one of the two is recorded: the unit's own peak, or,
where the reset is not possible, the process' peak so far under its own name.
"""
from __future__ import annotations

import resource
import time
from dataclasses import dataclass, field
from pathlib import Path

from usebench.run.unit_files import USAGE_FILE
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


@dataclass
class UsageClock:
    """Started when a unit starts: its wall and CPU clocks and (where possible) a reset memory peak."""
    wall0: float = field(default_factory=time.perf_counter)
    cpu0: float = field(default_factory=time.process_time)
    own_peak: bool = field(default_factory=reset_peak_rss)

    def record(self, run_dir: Path, training: list[str]) -> None:
        record_usage(run_dir, time.perf_counter() - self.wall0, time.process_time() - self.cpu0, training,
                     peak_rss_mb() if self.own_peak else None)


def record_usage(run_dir: Path, wall_s: float, cpu_s: float, training: list[str],
                 unit_peak_mb: float | None = None) -> None:
    """Append this attempt's wall and CPU seconds (all of the process' threads) and its peak resident memory to
    ``usage.json``: what a unit cost, read by the CPU-scale recipe's page (a resumed unit has one entry per attempt
    that finished). The peak is the unit's own (``unit_peak_rss_mb``) when measured apart from the process, else the
    process' peak so far (``process_peak_rss_mb``), which may be an earlier unit's."""
    import torch

    path = run_dir / USAGE_FILE
    attempts = (read_json(path) or {}).get("attempts") if path.is_file() else []
    if not isinstance(attempts, list):
        attempts = []  # unreadable: start the list again rather than fail a finished unit
    memory = ({"unit_peak_rss_mb": unit_peak_mb} if unit_peak_mb is not None else
              {"process_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)})
    attempts.append({"wall_s": round(wall_s, 3), "cpu_s": round(cpu_s, 3), **memory,
                     "threads": torch.get_num_threads(), "training": list(training), "finished_at": now_iso()})
    write_json_atomic(path, {"attempts": attempts})
