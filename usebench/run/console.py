"""A unit's console log: what a unit prints while it runs, kept in ``<run_dir>/unit.log`` as well.

Whichever launcher runs a unit (this process, a Ray worker, a SLURM job), its progress lines, warnings and, when
it fails, the full traceback land in one file inside its own run directory, every attempt appended between a
``=== start <time> on <host> pid <pid>`` and an ``=== end <time> ok|<error type>`` line (no end line: the
process was killed). `bench run` names this file when it reports a failed unit and `bench status` shows it. Progress
bars redraw with carriage returns; the file keeps only each line's final state.
"""
from __future__ import annotations

import os
import socket
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, TextIO

from usebench.store.unit_files import UNIT_LOG


class _LineFile:
    """Writes complete lines to ``f``, each reduced to the text after its last carriage return; once closed,
    writes are dropped (a logging handler created during the unit keeps its stream after the unit ends)."""

    def __init__(self, f: IO[str]):
        self.f, self.partial, self.closed = f, "", False

    def write(self, text: str) -> None:
        if self.closed:
            return
        *lines, self.partial = (self.partial + text).split("\n")
        for line in lines:
            self.f.write(line.rsplit("\r", 1)[-1] + "\n")
        if lines:
            self.f.flush()

    def close(self) -> None:
        if self.closed:
            return
        rest = self.partial.rsplit("\r", 1)[-1]
        if rest.strip():
            self.f.write(rest + "\n")
        self.partial, self.closed = "", True
        self.f.flush()


class Tee:
    """``sys.<name>`` while a unit runs: writes to the stream it replaced and to the unit's log. Afterwards (a
    logging handler created during the unit keeps it) it writes to whatever ``sys.<name>`` is then, so the
    next unit in the same worker process logs that handler's output too. Everything else is ``stream``'s."""

    def __init__(self, stream: TextIO, log: _LineFile, name: str):
        self._stream, self._log, self._name = stream, log, name

    def write(self, text: str) -> int:
        if self._log.closed:
            current = getattr(sys, self._name)
            return (self._stream if current is self else current).write(text)
        self._log.write(text)
        return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ... as the real stream
        return getattr(self._stream, name)


@contextmanager
def unit_console(run_dir: Path, enabled: bool = True) -> Iterator[Path | None]:
    """Copy ``sys.stdout`` and ``sys.stderr`` into ``<run_dir>/unit.log`` for the block (appending, with a header
    naming the host, pid and time); an exception leaving the block is logged with its full traceback."""
    if not enabled:
        yield None
        return
    path = Path(run_dir) / UNIT_LOG
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"=== start {_now()} on {socket.gethostname()} pid {os.getpid()}\n")
        f.flush()
        log = _LineFile(f)
        out, err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = Tee(out, log, "stdout"), Tee(err, log, "stderr")
        try:
            yield path
        except BaseException as e:
            log.close()
            f.write("".join(traceback.format_exception(type(e), e, e.__traceback__)))
            f.write(f"=== end {_now()} {type(e).__name__}\n")
            raise
        else:
            log.close()
            f.write(f"=== end {_now()} ok\n")
        finally:
            sys.stdout, sys.stderr = out, err
            log.close()


def attempts(log: Path) -> list[tuple[datetime, datetime | None, str]]:
    """(start, end, how it ended) of every attempt recorded in a unit log; end is None for an attempt that
    never finished (its process was killed)."""
    out: list[tuple[datetime, datetime | None, str]] = []
    for line in Path(log).read_text(encoding="utf-8").splitlines():
        parts = line.split(" ")
        if line.startswith("=== start "):
            out.append((datetime.fromisoformat(parts[2]), None, "killed"))
        elif line.startswith("=== end ") and out and out[-1][1] is None:
            out[-1] = (out[-1][0], datetime.fromisoformat(parts[2]), parts[3] if len(parts) > 3 else "")
    return out


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")
