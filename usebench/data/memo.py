"""What a plan reads and derives from data files, kept for the length of one planning session, so that a plan reads,
parses, hashes and checks each file once however many stages read it (issue 37: AllNLI was parsed once per stage
that read it, and every corpus cleaned once per seed).

A session is :func:`planning`: `bench run` plans inside one, `bench reproduce` plans all of its runs inside one. Outside
a session nothing is kept, so a unit that runs reads its data afresh and re-checks it against the planned hash, and a
long-lived process (a notebook) holds no data it no longer needs. Files are named in keys by :func:`file_stamp`
(path, size and modification time), so a file rewritten during a session is read again. Values are shared between
callers: a memoised function returns what nobody mutates, or a copy.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
PROGRESS_BYTES = 20 * 2**20  # a file this large is announced when a planning session reads it
Stamp = tuple[str, int, int]
_session: dict[Hashable, Any] | None = None
_recorders: list[list[Stamp]] = []  # open recordings (:func:`recording`), innermost last
_on_end: list[Callable[[], None]] = []  # called when the outermost session ends (digests.py writes its file)


@contextmanager
def planning() -> Iterator[None]:
    """A planning session: what :func:`remember` computes inside it is kept until the outermost session ends."""
    global _session
    outer = _session is not None
    if not outer:
        _session = {}
    try:
        yield
    finally:
        if not outer:
            try:
                for end in _on_end:
                    end()
            finally:
                _session = None


def on_session_end(callback: Callable[[], None]) -> None:
    """Call ``callback`` whenever the outermost planning session ends (registered once per callback)."""
    if callback not in _on_end:
        _on_end.append(callback)


@contextmanager
def recording() -> Iterator[list[Stamp]]:
    """The stamps of every file read through :func:`remember_file` inside the block (memo hits too): what a fact
    computed in the block depends on."""
    files: list[Stamp] = []
    _recorders.append(files)
    try:
        yield files
    finally:
        _recorders.pop()  # blocks nest: the innermost closes first (by identity: two recordings may be equal)


def in_session() -> bool:
    """Whether a planning session is open (memoised values are kept)."""
    return _session is not None


def remember(key: Hashable, build: Callable[[], T]) -> T:
    """``build()``, computed once per ``key`` within a planning session (every call outside one). An exception is
    not remembered: the next call raises it again, from its own ``build``. The files ``build`` read count as read
    by every later call too (an open :func:`recording` sees them, whether the value was computed or remembered)."""
    if _session is None:
        return build()
    found = _session.get(key, _MISSING)
    if found is not _MISSING:
        value, files = found
        for recorder in _recorders:
            recorder.extend(files)
        return value
    with recording() as files:
        value = build()
    _session[key] = (value, tuple(files))
    return value


_MISSING = object()


def file_stamp(path: str | Path) -> tuple[str, int, int] | None:
    """(real path, size, mtime in ns) of an existing file, None for anything else (its reader raises the error)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return os.path.realpath(path), st.st_size, st.st_mtime_ns


def remember_file(kind: str, path: str | Path, build: Callable[[], T], *params: Hashable,
                  announce: bool = False) -> T:
    """``build()`` for ``path`` read as ``kind`` with ``params``, once per session while the file is unchanged; a
    missing file is never remembered (its reader raises). ``announce``: a reader of the file's bytes, which names a
    large file on stderr before a session reads it."""
    stamp = file_stamp(path)
    if stamp is None:
        return build()
    for files in _recorders:  # this read (a memo hit too) counts for every fact being computed around it
        files.append(stamp)
    if announce and _session is not None and stamp[1] >= PROGRESS_BYTES and (kind, stamp, params) not in _session:
        # a plan that has to read a large file says so (a dry run otherwise sits silent for seconds)
        sys.stderr.write(f"planning: reading {path} ({stamp[1] / 2**20:,.0f} MB)\n")
        sys.stderr.flush()
    return remember((kind, stamp, params), build)
