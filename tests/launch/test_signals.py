"""Ray resets the driver's SIGSEGV handler; a JVM in the process (Pyserini) then dies on its first implicit
null check. The Ray session puts the handlers from before it back."""
from __future__ import annotations

import ctypes
import signal

import pytest

from usebench.launch.signals import fault_handlers_kept, save_fault_handlers

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")


def _handler_bytes() -> bytes:
    """The handler's address: the first field of struct sigaction (glibc and BSD layouts alike)."""
    return bytes(save_fault_handlers()[int(signal.SIGSEGV)])[:ctypes.sizeof(ctypes.c_void_p)]


def test_handlers_changed_inside_the_block_are_put_back():
    import faulthandler

    faulthandler.enable()  # some native handler to keep (pytest's, or the JVM's in real use)
    before = _handler_bytes()
    libc = ctypes.CDLL(None)
    with fault_handlers_kept() as put_back:
        libc.signal(int(signal.SIGSEGV), 0)  # SIG_DFL, as ray.shutdown leaves it
        assert _handler_bytes() != before
        put_back()
        assert _handler_bytes() == before
        libc.signal(int(signal.SIGSEGV), 0)
    assert _handler_bytes() == before


def test_a_ray_session_keeps_the_native_fault_handler(tmp_path, monkeypatch):
    import faulthandler

    from usebench.launch import LaunchOptions
    from usebench.launch.ray_launcher import ray_session

    faulthandler.enable()
    before = _handler_bytes()
    monkeypatch.setenv("HOME", str(tmp_path))
    with ray_session(LaunchOptions(launcher="ray"), tmp_path / "results"):
        assert ray.is_initialized() and _handler_bytes() == before
    assert not ray.is_initialized() and _handler_bytes() == before
