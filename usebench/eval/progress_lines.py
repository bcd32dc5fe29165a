"""Progress where there is no terminal: a progress bar hides itself when its stream (stderr) is not a terminal, so a
`bench eval ... > log 2>&1` of 333 s said nothing between "evaluating ..." and the score. Where the bar is hidden,
:class:`ProgressLines` writes what it would show as a line now and then instead: ``encode minilm: 8,000/20,344
texts (39%), 61 texts/s, ETA 3m22s``."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

# Seconds between two lines: a log of a minutes-long encode gets a line every half minute, a short one none.
EVERY_S = 30.0


class ProgressLines:
    """``update(n)`` as a bar's, writing a line to ``stream`` (default: stderr, the bar's) once ``every`` seconds
    have passed since the start or the last line."""

    def __init__(self, total: int, what: str, unit: str, every: float | None = None, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.total, self.what, self.unit = total, what, unit
        self.every = EVERY_S if every is None else every
        self.stream, self.clock = stream, clock
        self.done, self.t0 = 0, clock()
        self.last = self.t0

    def update(self, n: int) -> None:
        self.done += n
        now = self.clock()
        if now - self.last >= self.every and self.done < self.total:
            self.last = now
            print(self.line(now), file=self.stream or sys.stderr, flush=True)

    def line(self, now: float) -> str:
        """``encode minilm: 8,000/20,344 texts (39%), 61 texts/s, ETA 3m22s``."""
        elapsed = max(now - self.t0, 1e-9)
        rate = self.done / elapsed
        eta = f", ETA {duration((self.total - self.done) / rate)}" if rate > 0 else ""
        pct = f" ({100 * self.done // self.total}%)" if self.total else ""
        return f"{self.what}: {self.done:,}/{self.total:,} {self.unit}{pct}, {rate:,.0f} {self.unit}/s{eta}"


def duration(seconds: float) -> str:
    """``42s``, ``4m12s``, ``3h05m``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
