"""The two narrow windows of the unit/stage lock (issue 32), each shown by acting as the other process at the
exact point between two operations of the holder or the watcher."""
from __future__ import annotations

import json
import os
import threading
import time

import usebench.store.locks as lock_mod
from usebench.store.locks import LOCK_FILE, LockWatch, UnitLock


def _wait_for(event: threading.Event, what: str) -> None:
    assert event.wait(10), f"the heartbeat never reached {what}"
    time.sleep(0.3)  # the rest of that beat (a few file operations) runs before the test looks


def test_a_heartbeat_during_a_takers_check_keeps_the_lock(tmp_path, monkeypatch):
    """Window 1: a second taker renames the lock aside to compare it with the one it judged stale, then puts it
    back; a heartbeat that looks in between must not take the lock for lost."""
    monkeypatch.setattr(lock_mod, "HEARTBEAT_S", 0.05)
    holder = UnitLock(tmp_path)
    holder.acquire()
    path = tmp_path / LOCK_FILE
    aside = tmp_path / f"{LOCK_FILE}.aside-taker"
    real_open, real_read = os.open, lock_mod._read_raw
    state = {"calls": 0}
    done = threading.Event()

    def taker_between(*args, **kw):  # the holder's first look at its lock finds it set aside
        if threading.current_thread().name.startswith("lock-heartbeat") and state["calls"] == 0:
            state["calls"] += 1
            os.rename(path, aside)
            try:
                return (real_open if args and isinstance(args[0], os.PathLike) and args[1:] else real_read)(*args, **kw)
            finally:
                monkeypatch.setattr(lock_mod, "HEARTBEAT_S", 1000.0)  # no further beat after this one
                threading.Timer(0.02, _put_back).start()
        return (real_open if args[1:] else real_read)(*args, **kw)

    def _put_back():  # the taker saw a live holder's lock, not the stale one it judged: it puts it back
        os.link(aside, path)
        aside.unlink()
        done.set()

    monkeypatch.setattr(lock_mod, "_read_raw", lambda p: taker_between(p))
    monkeypatch.setattr(lock_mod.os, "open", taker_between)
    try:
        _wait_for(done, "its lock")
        time.sleep(1.5)
        assert not holder.lost, "the holder took a lock set aside for a moment for a lost one"
        assert holder.owned()
    finally:
        monkeypatch.undo()
        holder.release()
    assert not path.exists()


def test_a_lock_taken_over_between_the_check_and_the_touch_is_lost_at_once(tmp_path, monkeypatch):
    """Window 2: the holder checked its lock; before its touch the lock is broken and another process takes it.
    The touch must not land on the new holder's lock, and the old holder must stop now, not a beat later."""
    monkeypatch.setattr(lock_mod, "HEARTBEAT_S", 0.05)
    holder = UnitLock(tmp_path)
    holder.acquire()
    path = tmp_path / LOCK_FILE
    other = json.dumps({"host": "elsewhere", "pid": 1, "token": "other", "job": None, "attempt": None}).encode()
    real_utime = os.utime
    touched = threading.Event()

    def takeover_then_touch(target, *args, **kw):
        if threading.current_thread().name.startswith("lock-heartbeat") and not touched.is_set():
            monkeypatch.setattr(lock_mod, "HEARTBEAT_S", 1000.0)  # this beat is the one that must notice
            path.unlink()  # a watcher broke the lock it judged stale ...
            path.write_bytes(other)  # ... and another process took it
            real_utime(path, ns=(0, 10**9))  # the new holder's lock as it was stamped
            touched.set()
        return real_utime(target, *args, **kw)

    monkeypatch.setattr(lock_mod.os, "utime", takeover_then_touch)
    try:
        _wait_for(touched, "its touch")
        assert holder.lost, "the holder touched a lock that is no longer its own and trains on"
        assert path.stat().st_mtime_ns == 10**9  # the new holder's lock was not touched by the old holder
    finally:
        monkeypatch.undo()
        holder.release()
    assert path.read_bytes() == other  # release leaves the new holder's lock alone


def test_a_watcher_breaks_only_a_lock_untouched_since_it_was_judged(tmp_path):
    """The watcher's side of window 2: a holder that touched its lock after the watcher judged it stale is
    alive; the break compares the lock's mtime as well as its bytes."""
    path = tmp_path / LOCK_FILE
    path.write_text(json.dumps({"host": "elsewhere", "pid": 1, "token": "t"}), encoding="utf-8")
    watch = LockWatch(tmp_path, stale_after=0.0)
    assert watch.look() == "alive"
    assert watch.look() == "stale"
    stamp = path.stat().st_mtime_ns + 10**9
    os.utime(path, ns=(stamp, stamp))  # the holder's heartbeat, between the judgement and the break
    assert not watch.break_stale()
    assert path.is_file()
    assert watch.look() == "alive"  # the touch is seen
    assert watch.look() == "stale" and watch.break_stale() and not path.exists()  # untouched: broken


def test_a_dead_holders_reused_pid_does_not_keep_its_lock(tmp_path):
    """pids wrap around (32768 by default): a lock whose pid now names another process (here: this one, started
    at another time than the lock records) belongs to a holder that is gone, and is taken over at once."""
    path = tmp_path / LOCK_FILE
    path.write_text(json.dumps({"host": lock_mod.socket.gethostname(), "pid": os.getpid(), "token": "dead",
                                "started": "1"}), encoding="utf-8")
    taker = UnitLock(tmp_path)
    taker.acquire()
    try:
        assert json.loads(path.read_text())["token"] == taker.token
    finally:
        taker.release()
