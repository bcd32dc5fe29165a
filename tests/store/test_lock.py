"""The unit lock across hosts, simulated on one machine (a second "host" is a lock naming another host name; a
SLURM job or Ray task is its environment variables): an earlier attempt of the same job is taken over at once,
another host's lock is judged stale only by its own mtime standing still on the watcher's clock, two takers of one
stale lock cannot both win, and a holder whose lock was taken over stops training."""
from __future__ import annotations

import json
import os
import socket
import threading
import time

import pytest

from usebench.store import locks as lock_module
from usebench.store.locks import (
    LOCK_FILE, LockWatch, UnitLock, UnitLockedError, UnitLockLostError, break_lock, job_identity, release_job,
)

SLURM_VARS = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_RESTART_COUNT",
              "USEBENCH_JOB_ID", "USEBENCH_JOB_ATTEMPT")


@pytest.fixture(autouse=True)
def no_job(monkeypatch):
    for var in SLURM_VARS:
        monkeypatch.delenv(var, raising=False)


def _foreign(run, **fields) -> bytes:
    """A lock written by a process on another host (node-17), touched just now."""
    run.mkdir(parents=True, exist_ok=True)
    raw = json.dumps({"host": "node-17", "pid": 4242, "token": "theirs", "since": "then", **fields}).encode()
    (run / LOCK_FILE).write_bytes(raw)
    return raw


def _owner(run) -> dict:
    return json.loads((run / LOCK_FILE).read_text())


def test_a_requeued_slurm_job_takes_over_the_lock_its_killed_attempt_left(tmp_path, monkeypatch):
    """Preempted with SIGTERM (submitit ignores it) then SIGKILLed on node-17; SLURM requeues the array task with
    the same id and SLURM_RESTART_COUNT=1 on this host: it takes the unit over at once, no ten-minute wait."""
    run = tmp_path / "unit"
    _foreign(run, job="slurm:4242_3", attempt=0)
    monkeypatch.setenv("SLURM_JOB_ID", "4250")
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "3")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    assert job_identity() == ("slurm:4242_3", 1)
    with UnitLock(run) as lock:
        assert _owner(run)["token"] == lock.token and _owner(run)["job"] == "slurm:4242_3"
        assert _owner(run)["attempt"] == 1 and _owner(run)["host"] == socket.gethostname()


def test_a_first_attempt_records_attempt_zero_where_slurm_sets_no_restart_count(tmp_path, monkeypatch):
    """A job's first attempt has no SLURM_RESTART_COUNT (SLURM sets it only after a restart) and runs under the
    launcher's USEBENCH_JOB_ID: its lock must still say attempt 0, or the requeued attempt (count 1) on another
    node cannot tell it is an earlier attempt and waits ten minutes for it as for a live holder."""
    run = tmp_path / "unit"
    monkeypatch.setenv("SLURM_JOB_ID", "4243")
    monkeypatch.setenv("USEBENCH_JOB_ID", "slurm:4242_3")  # what isolated_attempt sets in a SLURM job
    assert job_identity() == ("slurm:4242_3", 0)
    first = UnitLock(run)
    first.acquire()
    try:
        first._stop.set()  # the first attempt is SIGKILLed: its lock stays behind, no heartbeat, no release
        raw = json.loads((run / LOCK_FILE).read_text())
        assert raw["attempt"] == 0
        raw["host"] = "node-17"  # it ran on another node: no pid check can clear it
        (run / LOCK_FILE).write_text(json.dumps(raw))
        monkeypatch.setenv("SLURM_JOB_ID", "4250")
        monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
        with UnitLock(run) as lock:
            assert _owner(run)["token"] == lock.token and _owner(run)["attempt"] == 1
    finally:
        first._stop.set()


def test_another_job_or_the_same_attempt_does_not_take_a_live_looking_lock(tmp_path, monkeypatch):
    run = tmp_path / "unit"
    monkeypatch.setenv("SLURM_JOB_ID", "4250")  # another job of the same user
    _foreign(run, job="slurm:4242_3", attempt=0)
    with pytest.raises(UnitLockedError, match="on node-17, job slurm:4242_3"):
        UnitLock(run).acquire()
    monkeypatch.setenv("SLURM_JOB_ID", "4242")  # two commands inside one allocation: same job, same attempt
    _foreign(run, job="slurm:4242", attempt=0)
    with pytest.raises(UnitLockedError):
        UnitLock(run).acquire()


def test_a_retried_ray_task_takes_over_the_lock_of_its_dead_attempt(tmp_path, monkeypatch):
    """Ray retries a task (same task id) after its node died; the dead node's lock names that task."""
    run = tmp_path / "unit"
    _foreign(run, job="ray:c2668a65bda616c1ffffffffffffffffffffffff01000000")
    monkeypatch.setenv("USEBENCH_JOB_ID", "ray:c2668a65bda616c1ffffffffffffffffffffffff01000000")
    with UnitLock(run):
        assert _owner(run)["host"] == socket.gethostname()
    _foreign(run, job="ray:another-task")
    with pytest.raises(UnitLockedError):
        UnitLock(run).acquire()


def test_the_driver_releases_only_the_lock_of_the_job_it_knows_is_over(tmp_path):
    run = tmp_path / "unit"
    _foreign(run, job="slurm:77_0")
    assert not release_job(run, "slurm:77_1") and (run / LOCK_FILE).exists()
    assert release_job(run, "slurm:77_0") and not (run / LOCK_FILE).exists()


def test_staleness_is_the_locks_own_mtime_standing_still_on_the_watchers_clock(tmp_path, monkeypatch):
    """No clock of two machines is compared: an mtime an hour in the future (the file server's clock ahead of
    this one) that keeps changing is alive; an mtime an hour in the past that keeps changing is alive too; any
    lock that stops changing is stale after STALE_AFTER_S of the watcher's monotonic clock."""
    monkeypatch.setattr(lock_module, "STALE_AFTER_S", 0.4)
    run = tmp_path / "unit"
    _foreign(run)
    for offset in (3600, -3600):
        watch = LockWatch(run)
        for k in range(4):  # the holder's heartbeat: the mtime moves between looks
            stamp = time.time() + offset + k
            os.utime(run / LOCK_FILE, (stamp, stamp))
            assert watch.look() == "alive"
            time.sleep(0.15)
    watch = LockWatch(run)
    assert watch.look() == "alive"  # first sight
    time.sleep(0.2)
    assert watch.look() == "alive"
    time.sleep(0.3)
    assert watch.look() == "stale"  # unchanged for 0.5 s > 0.4 s (whatever its mtime says about the time)
    assert watch.break_stale() and not (run / LOCK_FILE).exists()
    assert watch.look() == "gone"


def test_a_stale_lock_that_came_back_to_life_is_not_broken(tmp_path, monkeypatch):
    run = tmp_path / "unit"
    raw = _foreign(run)
    _foreign(run, token="touched-again")  # rewritten after it was judged stale
    assert not break_lock(run, raw) and _owner(run)["token"] == "touched-again"


def test_two_takers_of_one_stale_lock_do_not_delete_each_others_new_lock(tmp_path):
    """A and B both judged the same lock stale. B takes over first; A's takeover then moves B's new lock aside,
    sees it is not the lock it judged, and puts it back: B keeps the unit, A does not get it. (Before: each
    taker deleted whatever lock was there and both went on to train.)"""
    run = tmp_path / "unit"
    stale = _foreign(run, pid=4242)
    assert break_lock(run, stale)  # B
    b = UnitLock(run)
    b.acquire()
    assert not break_lock(run, stale)  # A, a moment later
    assert _owner(run)["token"] == b.token
    with pytest.raises(UnitLockedError):
        UnitLock(run).acquire()  # A's next try sees B, alive on this host
    b.release()
    assert not (run / LOCK_FILE).exists()


def test_same_host_dead_pid_is_taken_over_at_once(tmp_path):
    run = tmp_path / "unit"
    run.mkdir()
    (run / LOCK_FILE).write_text(json.dumps({"host": socket.gethostname(), "pid": 2**22 + 7}))
    with UnitLock(run) as lock:
        assert _owner(run)["token"] == lock.token


def test_a_holder_whose_lock_was_taken_over_stops_and_leaves_the_new_lock_alone(tmp_path, monkeypatch):
    """A process frozen past the timeout (SIGSTOP, a hung NFS mount) resumes after another took its unit over:
    its next heartbeat finds another token, it stops touching the lock, calls on_lost, and check() raises."""
    monkeypatch.setattr(lock_module, "HEARTBEAT_S", 0.05)
    run = tmp_path / "unit"
    lost = threading.Event()
    lock = UnitLock(run, on_lost=lost.set)
    lock.acquire()
    lock.check()  # still ours
    _foreign(run, token="the-new-holder")
    old = time.time() - 3600
    os.utime(run / LOCK_FILE, (old, old))
    assert lost.wait(5) and lock.lost
    with pytest.raises(UnitLockLostError, match="taken over"):
        lock.check()
    time.sleep(0.2)
    assert (run / LOCK_FILE).stat().st_mtime == pytest.approx(old, abs=1)  # no longer touched by the old holder
    lock.release()
    assert _owner(run)["token"] == "the-new-holder"  # release leaves the new holder's lock
