"""One writer per run unit: a lock file in the unit's directory, naming its owner.

The lock holds the owner's host, pid, a random token, and the launcher's job identity: the SLURM job (array
task) id with its restart count, or the Ray task id. It is taken by hard-linking a complete temporary file to the
lock name (atomic, never observed half-written, on local and NFS filesystems), so two processes that start the
same unit never both train it or interleave lines in one ``log.jsonl``.

A lock is taken over at once when its holder is known to be gone: on this host, its pid is not alive; anywhere,
it is an earlier attempt of this process's own job (a SLURM job requeued after a preemption that SIGKILLed it,
which keeps its job id and counts ``SLURM_RESTART_COUNT`` up; a Ray task retried after its worker or node died,
which keeps its task id). Any other holder on another host cannot be checked from here: it touches its lock every
:data:`HEARTBEAT_S` (a thread), and a watcher (:class:`LockWatch`, in the launcher's driver, a long-lived process)
judges it stale when the lock's own content and mtime have not changed for :data:`STALE_AFTER_S` on the
watcher's monotonic clock; no two machines' clocks are compared. A stale lock is removed only if it is still the
one judged stale (:func:`break_lock`).

Taking over renames the old lock aside and checks that what was moved is the lock judged dead; when two
processes take over at once, the one that moved the other's new lock puts it back. Each heartbeat verifies the
lock still carries the holder's token; a holder that finds it gone (frozen past the timeout, its lock taken over)
stops touching it and :meth:`UnitLock.check` raises :class:`UnitLockLostError`, which stops training.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.errors import BenchError

LOCK_FILE = ".lock"
HEARTBEAT_S = 60.0  # how often the holder touches (and checks) its lock
STALE_AFTER_S = 600.0  # a lock unchanged this long on a watcher's clock belongs to a process that is gone
ASIDE_TRIES = 20  # a heartbeat that finds its lock set aside by a taker's check looks again this often,
ASIDE_WAIT_S = 0.05  # this far apart (the taker reads one small file, then puts the lock back)
JOB_ENV = "USEBENCH_JOB_ID"  # set by a launcher in the process running a unit: "ray:<task id>", "local:<pid>"
ATTEMPT_ENV = "USEBENCH_JOB_ATTEMPT"


class UnitLockedError(BenchError):
    """Another live process holds the unit."""

    def __init__(self, message: str, owner: dict[str, Any] | None = None):
        super().__init__(message)
        self.owner = owner


class UnitLockLostError(BenchError):
    """This process held the unit, and another process has taken its lock over."""


def job_identity() -> tuple[str | None, int | None]:
    """(job, attempt) of this process: what a launcher set in :data:`JOB_ENV`, else the SLURM job (array task)
    this process runs in with its restart count, else (None, None)."""
    attempt = os.environ.get(ATTEMPT_ENV) or os.environ.get("SLURM_RESTART_COUNT")
    attempt_n = int(attempt) if attempt and attempt.isdigit() else None
    if attempt_n is None and os.environ.get("SLURM_JOB_ID"):
        # SLURM sets SLURM_RESTART_COUNT only once a job has been restarted (slurm's env.c writes it when the
        # count is non-zero): unset inside a job is its first attempt, which a requeued attempt must take over
        attempt_n = 0
    if os.environ.get(JOB_ENV):
        return os.environ[JOB_ENV], attempt_n
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    if array and task:
        return f"slurm:{array}_{task}", attempt_n
    if os.environ.get("SLURM_JOB_ID"):
        return f"slurm:{os.environ['SLURM_JOB_ID']}", attempt_n
    return None, None


def earlier_attempt(owner: dict[str, Any], job: str | None, attempt: int | None) -> bool:
    """Whether ``owner`` is an earlier attempt of ``job``: SLURM runs one attempt of a job at a time and counts
    restarts; Ray runs one attempt of a task at a time (a retry starts only after the previous attempt died)."""
    if job is None or owner.get("job") != job:
        return False
    if job.startswith("ray:"):
        return True
    held = owner.get("attempt")
    return isinstance(held, int) and attempt is not None and held < attempt


@dataclass
class UnitLock:
    """Context manager: ``with UnitLock(run_dir): ...`` holds the unit for the block. ``on_lost`` is called
    (from the heartbeat thread) when the lock was taken over while held."""

    run_dir: Path
    on_lost: Callable[[], None] | None = None
    token: str | None = field(default=None, init=False)
    _stop: threading.Event | None = field(default=None, init=False, repr=False)
    _lost: threading.Event = field(default_factory=threading.Event, init=False, repr=False)

    @property
    def path(self) -> Path:
        return Path(self.run_dir) / LOCK_FILE

    def __enter__(self) -> UnitLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock, taking it over from a holder that is gone; UnitLockedError if a live one holds it."""
        Path(self.run_dir).mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(8)
        job, attempt = job_identity()
        tmp = self.path.with_name(f"{LOCK_FILE}.{socket.gethostname()}.{os.getpid()}.{token}")
        tmp.write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "token": token, "job": job,
                                   "attempt": attempt, "since": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                   "started": _process_start(os.getpid())}),
                       encoding="utf-8")
        try:
            for _ in range(5):  # a lock that vanished, or a takeover that lost a race, is looked at again
                try:
                    os.link(tmp, self.path)
                except FileExistsError:
                    raw = _read_raw(self.path)
                    if raw is None:
                        continue
                    owner = _parse(raw)
                    if owner is not None and not holder_gone(owner, job, attempt):
                        raise UnitLockedError(_held_message(self.path, owner), owner) from None
                    _take_aside(self.path, raw, token)
                    continue
                self.token, self._lost = token, threading.Event()
                self._start_heartbeat()
                return
            raise UnitLockedError(f"could not take {self.path} (other processes keep taking it)")
        finally:
            tmp.unlink(missing_ok=True)

    def _start_heartbeat(self) -> None:
        self._stop = stop = threading.Event()

        def beat() -> None:
            while not stop.wait(HEARTBEAT_S):
                try:
                    mine = self._touch_if_mine()
                except OSError:
                    continue  # the store did not answer this time (NFS): look again at the next beat
                if not mine:
                    self._lost.set()
                    if self.on_lost is not None:
                        self.on_lost()
                    return

        threading.Thread(target=beat, name=f"lock-heartbeat {Path(self.run_dir).name}", daemon=True).start()

    def _touch_if_mine(self) -> bool:
        """One heartbeat: touch the lock if it is still this holder's; returns whether it is.

        Two windows are closed here. (1) A second taker checking a stale-looking lock renames it aside for a
        moment and puts it back (:func:`_take_aside`): a lock missing while an aside copy carries this holder's
        token is looked at again, not taken for lost. (2) The check and the touch act on one open file, so the
        touch cannot land on a lock that replaced this one after the check; and the lock's name must still lead
        to that file after the touch, else the lock was taken over in between and this holder stops now, not a
        heartbeat later (with two processes training one stage until then)."""
        for _ in range(ASIDE_TRIES):
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                if not self._aside_is_mine():
                    return False
                _pause(ASIDE_WAIT_S)  # a taker is checking it aside: it puts it back at once
                continue
            try:
                owner = _parse(_read_fd(fd))
                if not (owner and self.token and owner.get("token") == self.token):
                    return False
                os.utime(fd)
                return os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                return False  # renamed away between the touch and the look: taken over
            finally:
                os.close(fd)
        return False

    def _aside_is_mine(self) -> bool:
        """Whether a lock set aside by a taker's check (``.lock.aside-*``) carries this holder's token."""
        for aside in Path(self.run_dir).glob(f"{LOCK_FILE}.aside-*"):
            try:
                owner = _parse(aside.read_bytes())
            except OSError:
                continue
            if owner and self.token and owner.get("token") == self.token:
                return True
        return False

    def owned(self) -> bool:
        """Whether the lock file still carries this holder's token (OSError when the store cannot be read)."""
        raw = _read_raw(self.path)
        owner = _parse(raw) if raw is not None else None
        return bool(owner and self.token and owner.get("token") == self.token)

    @property
    def lost(self) -> bool:
        """Whether a heartbeat found the lock taken over."""
        return self._lost.is_set()

    def check(self) -> None:
        """Raise UnitLockLostError when a heartbeat found the lock taken over (called between training steps)."""
        if self._lost.is_set():
            raise UnitLockLostError(f"{Path(self.run_dir).name}: this process's lock {self.path} was taken over "
                                    "(the process was frozen or cut off past the lock's timeout); it stops here "
                                    "and leaves the unit to the new holder")

    def release(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self.token is not None:
            _remove_if(self.path, lambda owner: owner.get("token") == self.token)
        else:
            owner = read_owner(self.path)
            if owner and owner.get("pid") == os.getpid() and owner.get("host") == socket.gethostname():
                self.path.unlink(missing_ok=True)


def holder_gone(owner: dict[str, Any], job: str | None = None, attempt: int | None = None) -> bool:
    """Whether the lock's holder is known to be gone without watching it: a dead pid on this host, or an
    earlier attempt of this process's job."""
    if earlier_attempt(owner, job, attempt):
        return True
    return owner.get("host") == socket.gethostname() and not _holder_alive(owner)


def release_if_mine(run_dir: Path) -> bool:
    """Remove ``run_dir``'s lock if this process holds it (a job about to be preempted and requeued, maybe on
    another host, must not leave a live-looking lock behind); returns whether it did."""
    return _remove_if(Path(run_dir) / LOCK_FILE, lambda owner: owner.get("pid") == os.getpid()
                      and owner.get("host") == socket.gethostname())


def release_job(run_dir: Path, job: str) -> bool:
    """Remove ``run_dir``'s lock if job ``job`` holds it: the driver knows that job is over (it failed, was
    cancelled, or is about to be submitted again); returns whether it did."""
    return _remove_if(Path(run_dir) / LOCK_FILE, lambda owner: owner.get("job") == job)


def break_lock(run_dir: Path, raw: bytes, mtime_ns: int | None = None) -> bool:
    """Remove ``run_dir``'s lock if it is still exactly ``raw`` (the lock a :class:`LockWatch` judged stale) and,
    given ``mtime_ns``, still untouched since it was judged: a holder whose heartbeat touched it in between is
    alive and keeps it."""
    path = Path(run_dir) / LOCK_FILE
    return _take_aside(path, raw, secrets.token_hex(8), mtime_ns)


def read_owner(path: Path) -> dict[str, Any] | None:
    """The lock's owner, or None when the file is gone or unreadable (a half-written lock counts as stale)."""
    try:
        raw = _read_raw(path)
    except OSError:
        return None
    return _parse(raw) if raw is not None else None


class LockWatch:
    """A long-lived observer of one lock (a launcher's driver): ``look()`` says ``gone``, ``alive``, or
    ``stale`` once the lock's bytes and mtime have stayed the same for :data:`STALE_AFTER_S` (or
    ``stale_after``) on this process's monotonic clock; the heartbeat of a live holder changes the mtime."""

    def __init__(self, run_dir: Path, stale_after: float | None = None):
        self.path = Path(run_dir) / LOCK_FILE
        self.stale_after = stale_after
        self.seen: tuple[bytes, int] | None = None
        self.since = 0.0

    def look(self) -> str:
        try:
            raw, mtime = self.path.read_bytes(), self.path.stat().st_mtime_ns
        except FileNotFoundError:
            return "gone"
        except OSError:
            return "alive"  # cannot tell now
        owner = _parse(raw)
        if owner is not None and holder_gone(owner):
            return "stale"
        now = time.monotonic()
        if (raw, mtime) != self.seen:
            self.seen, self.since = (raw, mtime), now
            return "alive"
        limit = STALE_AFTER_S if self.stale_after is None else self.stale_after
        return "stale" if now - self.since >= limit else "alive"

    def break_stale(self) -> bool:
        """Remove the lock judged stale (only if it is still the one watched)."""
        return self.seen is not None and break_lock(self.path.parent, self.seen[0], self.seen[1])


def store_clock(directory: Path) -> float:
    """The current time as the filesystem of ``directory`` stamps files (the file server's clock on NFS), read
    by creating and removing a probe file; this machine's clock when the directory cannot be written."""
    probe = Path(directory) / f".clock-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        probe.write_bytes(b"")
        try:
            return probe.stat().st_mtime
        finally:
            probe.unlink(missing_ok=True)
    except OSError:
        return time.time()


def owner_alive(owner: dict[str, Any], lock: Path | None = None, now: float | None = None) -> bool:
    """Whether the owning process may still run: on this host whether its pid exists; on another host whether
    ``lock`` was touched (heartbeat) in the last :data:`STALE_AFTER_S` seconds, judged on the clock of the
    lock's own filesystem (``now``: from :func:`store_clock`), never this machine's (always True without
    ``lock``). A one-shot reader's view (`bench status`); launchers watch the lock instead (:class:`LockWatch`)."""
    if owner.get("host") != socket.gethostname():
        if lock is None:
            return True
        try:
            mtime = Path(lock).stat().st_mtime
        except OSError:
            return False
        return (store_clock(Path(lock).parent) if now is None else now) - mtime < STALE_AFTER_S
    return _holder_alive(owner)


def _holder_alive(owner: dict[str, Any]) -> bool:
    """Whether the lock's holder on this host still runs: its pid exists and, where the lock recorded it, is the
    same process (its start time): a pid is reused once the kernel wraps around (32768 by default, reached in
    minutes on a busy box), and a killed holder's pid must not keep its lock alive for another process."""
    if not _pid_alive(owner.get("pid")):
        return False
    started = owner.get("started")
    return started is None or _process_start(owner.get("pid")) in (None, started)


def _process_start(pid: Any) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat``, field 22), None where there is
    no /proc (macOS) or no such process."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except (OSError, ValueError, TypeError):
        return None
    fields = stat.rpartition(")")[2].split()  # the command name, in parentheses, may hold spaces
    return fields[19] if len(fields) > 19 else None


def _pid_alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except PermissionError:
        return True  # the process exists but belongs to another user
    except (ProcessLookupError, ValueError, TypeError, OverflowError):
        return False  # gone, or a malformed lock
    return True


def _read_raw(path: Path) -> bytes | None:
    """The lock's bytes; None when there is no lock (other OSErrors are raised: the store did not answer)."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        return None


def _read_fd(fd: int) -> bytes:
    """The whole content of an open lock file (a lock is a few hundred bytes)."""
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _pause(seconds: float) -> None:
    """A short wait (a seam: tests replace it to act as the other process)."""
    time.sleep(seconds)


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        owner = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return owner if isinstance(owner, dict) else None


def _take_aside(path: Path, raw: bytes, token: str, mtime_ns: int | None = None) -> bool:
    """Move the lock ``path`` aside if it is still ``raw``; returns whether it did. Renaming is atomic: when
    two processes take the same stale lock over, the later one moves the earlier one's new lock, sees that it
    is not the lock judged stale, and puts it back (if it cannot, that holder's heartbeat sees its loss)."""
    aside = path.with_name(f"{LOCK_FILE}.aside-{token}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return False
    try:
        if aside.read_bytes() == raw and (mtime_ns is None or aside.stat().st_mtime_ns == mtime_ns):
            return True
        try:
            os.link(aside, path)
        except FileExistsError:
            pass
        return False
    finally:
        aside.unlink(missing_ok=True)


def _remove_if(path: Path, test: Callable[[dict[str, Any]], bool]) -> bool:
    try:
        raw = _read_raw(path)
    except OSError:
        return False
    owner = _parse(raw) if raw is not None else None
    return bool(owner is not None and test(owner) and _take_aside(path, raw, secrets.token_hex(8)))


def _held_message(path: Path, owner: dict[str, Any]) -> str:
    job = f", job {owner['job']}" if owner.get("job") else ""
    return (f"{path.parent.name} is being run by pid {owner.get('pid')} on {owner.get('host')}{job} (since "
            f"{owner.get('since')}); skipped. If that process is gone, delete {path}")
