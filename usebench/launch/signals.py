"""Keep the process's native fault handlers across ``ray.init`` / ``ray.shutdown``.

Ray's core worker installs its own SIGSEGV/SIGBUS/... handlers in the driver (for crash reports) and
``ray.shutdown`` resets them to the default action. A JVM in the same process (Pyserini's Lucene, started by a
`bm25-pyserini` evaluation) relies on its SIGSEGV handler: JIT-compiled code turns null checks into faults the
JVM catches. With the default action back, the next such fault kills the whole process (seen as a segfault in a
JVM `ForkJoinPool` thread). So the handlers in place before Ray are put back right after Ray changes them.

The handlers are saved and restored with ``sigaction`` into an opaque buffer, so the code needs no knowledge of
the platform's ``struct sigaction`` layout; where libc cannot be loaded it does nothing.
"""
from __future__ import annotations

import ctypes
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

FAULT_SIGNALS = tuple(getattr(signal, n) for n in ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL") if hasattr(signal, n))
_BUFFER = 512  # bytes; larger than struct sigaction on every platform (152 on Linux x86-64)


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def save_fault_handlers() -> dict[int, ctypes.Array]:
    """The current native handler of each fault signal (an empty dict where that cannot be read)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "sigaction"):
        return {}
    saved = {}
    for sig in FAULT_SIGNALS:
        buf = ctypes.create_string_buffer(_BUFFER)
        if libc.sigaction(int(sig), None, buf) == 0:
            saved[int(sig)] = buf
    return saved


def restore_fault_handlers(saved: dict[int, ctypes.Array]) -> None:
    libc = _libc()
    if libc is None:
        return
    for sig, buf in saved.items():
        libc.sigaction(sig, buf, None)


@contextmanager
def fault_handlers_kept() -> Iterator[Callable[[], None]]:
    """Yield a function that puts the handlers saved on entry back (call it after ``ray.init``); they are put
    back again on exit (after ``ray.shutdown``)."""
    saved = save_fault_handlers()
    try:
        yield lambda: restore_fault_handlers(saved)
    finally:
        restore_fault_handlers(saved)
