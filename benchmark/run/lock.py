"""One writer per run unit: a lock file in the unit's directory, holding the owner's host and pid.

Taken by hard-linking a complete temporary file to the lock name (atomic, and never observed half-written,
on local and NFS filesystems), so two processes that start the
same unit (two `bench run` commands, a launcher retry while the first attempt still runs) never both train it
or interleave lines in one ``log.jsonl``. A lock whose process is gone (same host, pid not alive) is stale and
is taken over. The pid of another host cannot be checked from here, so the holder touches its lock every
minute (a heartbeat thread) and a lock of another host untouched for ten minutes is stale too: a SLURM job
preempted on one node and requeued on another, or a Ray task retried after its node died, takes its unit over.
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.errors import BenchError

LOCK_FILE = ".lock"
HEARTBEAT_S = 60.0  # how often the holder touches its lock
STALE_AFTER_S = 600.0  # a lock of another host untouched this long belongs to a process that is gone


class UnitLockedError(BenchError):
    """Another live process holds the unit."""


@dataclass
class UnitLock:
    """Context manager: ``with UnitLock(run_dir): ...`` holds the unit for the block."""

    run_dir: Path
    _stop: threading.Event | None = field(default=None, init=False, repr=False)

    @property
    def path(self) -> Path:
        return Path(self.run_dir) / LOCK_FILE

    def __enter__(self) -> UnitLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def acquire(self) -> None:
        Path(self.run_dir).mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{LOCK_FILE}.{socket.gethostname()}.{os.getpid()}")
        tmp.write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                   "since": time.strftime("%Y-%m-%dT%H:%M:%S")}), encoding="utf-8")
        try:
            for _ in range(3):  # a stale lock removed by us (or by another taker) is retried
                try:
                    os.link(tmp, self.path)
                    self._start_heartbeat()
                    return
                except FileExistsError:
                    owner = read_owner(self.path)
                    if owner is not None and owner_alive(owner, self.path):
                        raise UnitLockedError(
                            f"{self.run_dir.name} is being run by pid {owner.get('pid')} on {owner.get('host')} "
                            f"(since {owner.get('since')}); skipped. If that process is gone, delete {self.path}"
                        ) from None
                    self.path.unlink(missing_ok=True)
            raise UnitLockedError(f"could not take {self.path} (it keeps reappearing)")
        finally:
            tmp.unlink(missing_ok=True)

    def _start_heartbeat(self) -> None:
        self._stop = stop = threading.Event()

        def beat() -> None:
            while not stop.wait(HEARTBEAT_S):
                try:
                    os.utime(self.path)
                except OSError:
                    pass  # released or taken over: nothing to keep alive

        threading.Thread(target=beat, name=f"lock-heartbeat {self.run_dir.name}", daemon=True).start()

    def release(self) -> None:
        if self._stop is not None:
            self._stop.set()
        owner = read_owner(self.path)
        if owner and owner.get("pid") == os.getpid() and owner.get("host") == socket.gethostname():
            self.path.unlink(missing_ok=True)


def release_if_mine(run_dir: Path) -> bool:
    """Remove ``run_dir``'s lock if this process holds it (a job about to be preempted and requeued, maybe on
    another host, must not leave a live-looking lock behind); returns whether it did."""
    path = Path(run_dir) / LOCK_FILE
    owner = read_owner(path)
    if owner and owner.get("pid") == os.getpid() and owner.get("host") == socket.gethostname():
        path.unlink(missing_ok=True)
        return True
    return False


def read_owner(path: Path) -> dict[str, Any] | None:
    """The lock's owner, or None when the file is gone or unreadable (a half-written lock counts as stale)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def owner_alive(owner: dict[str, Any], lock: Path | None = None) -> bool:
    """Whether the owning process may still run: on this host whether its pid exists; on another host whether
    ``lock`` was touched (heartbeat) in the last :data:`STALE_AFTER_S` seconds (always, without ``lock``)."""
    if owner.get("host") != socket.gethostname():
        if lock is None:
            return True
        try:
            return time.time() - Path(lock).stat().st_mtime < STALE_AFTER_S
        except OSError:
            return False
    try:
        os.kill(int(owner["pid"]), 0)
    except PermissionError:
        return True  # the process exists but belongs to another user
    except (ProcessLookupError, KeyError, ValueError, TypeError):
        return False  # gone, or a malformed lock
    return True
