"""Exceptions with messages a researcher can act on (file, line, what was expected)."""
from __future__ import annotations

from pathlib import Path


class BenchError(Exception):
    """Base class: the CLI prints these as one clean line instead of a traceback, and exits ``exit_code``."""

    exit_code: int = 2  # bad input or configuration


class NothingDoneError(BenchError):
    """A command ran but did nothing it was asked for (every task skipped, no data root): not a success."""

    exit_code = 1


class BenchValueError(BenchError, ValueError):
    """A bad argument value, raised by the Python API at the call (``except ValueError`` catches it too)."""


class BenchTypeError(BenchError, TypeError):
    """An argument of the wrong kind, raised by the Python API at the call (``except TypeError`` catches it too)."""


class EncoderError(BenchError, RuntimeError):
    """A model's own code raised while encoding; the message names the task and the batch, ``__cause__`` is the
    model's exception."""


class NonFiniteScoreError(BenchError):
    """A metric came out NaN or infinite; such a result is never stored (nor reused)."""


class DataFormatError(BenchError):
    """A data file does not have the format of its original release."""

    def __init__(self, path: str | Path, line: int | None, expected: str, got: str | None = None):
        where = f"{path}:{line}" if line is not None else str(path)
        msg = f"{where}: expected {expected}"
        if got is not None:
            shown = got if len(got) <= 120 else got[:117] + "..."
            msg += f", got {shown!r}"
        super().__init__(msg)
        self.path, self.line, self.expected = Path(path), line, expected


class ReleaseMismatchError(BenchError):
    """A data file parses, but does not hold what its release publishes (truncated, edited, another version)."""


class MissingDataError(BenchError):
    """A dataset is not in the data root; the message names the command that fetches it."""

    def __init__(self, what: str, path: str | Path, fetch: str):
        super().__init__(f"{what} not found at {path}; fetch it with `{fetch}`")
        self.path, self.fetch = Path(path), fetch


class ConfigError(BenchError):
    """An unknown or invalid configuration key or value."""
