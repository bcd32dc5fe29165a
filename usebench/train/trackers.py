"""Experiment trackers (TensorBoard, MLflow, Weights & Biases) fed with the lines of ``log.jsonl``.

`bench run` and `bench reproduce` take ``--log-to tensorboard,mlflow,wandb`` (default ``$BENCH_LOG_TO``, which the
option sets, so Ray and SLURM workers get it too). Each tracker is an optional extra (``usebench[tensorboard]``,
``[mlflow]``, ``[wandb]``) and works offline; the backends are in :mod:`usebench.train.tracker_backends`.

How it is wired, so that the training loop holds no tracker code: a unit runs inside :func:`tracking` (set up by
:mod:`usebench.run.tracking`), which says which trackers and how to describe a folder (experiment, run name, tags,
resolved config). :class:`usebench.train.trainlog.TrainLog` asks :func:`trackers_for` for its folder's trackers
(main rank only: the log is written there alone) and hands every line it writes to them; a stored result reaches
them through :func:`log_final`. Each folder keeps its tracker runs' ids in ``trackers.json``, so a resumed stage
continues its own runs instead of starting new ones.

A tracker never fails a unit: one that cannot start is named once (per process) and skipped; one that fails while
logging is named and dropped for the rest of the folder's training.
"""
from __future__ import annotations

import difflib
import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.errors import ConfigError
from usebench.store import read_json, write_json_atomic
from usebench.train.tracker_backends import OPENERS, Backend, Opener, TrackContext

TRACKERS = ("tensorboard", "mlflow", "wandb")
LOG_TO_ENV = "BENCH_LOG_TO"
STATE_FILE = "trackers.json"  # per folder: each tracker's run (id, store) and the last step logged
# log.jsonl keys that are no metric: the step is the x axis; elapsed_s restarts at 0 on every resume
NOT_METRICS = frozenset({"step", "elapsed_s"})


def parse_log_to(value: str | None) -> tuple[str, ...]:
    """``"tensorboard,wandb"`` -> the trackers in the order given, each once; ``None``/``""``/``"none"`` -> none. An
    unknown name is a :class:`ConfigError` with the closest known one."""
    names: list[str] = []
    for part in (value or "").split(","):
        name = part.strip().lower()
        if not name or name == "none":
            continue
        if name not in TRACKERS:
            close = difflib.get_close_matches(name, TRACKERS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"--log-to / ${LOG_TO_ENV}: unknown tracker {name!r}{hint}; known: {', '.join(TRACKERS)}")
        if name not in names:
            names.append(name)
    return tuple(names)


def requested() -> tuple[str, ...]:
    """The trackers ``$BENCH_LOG_TO`` names (what ``--log-to`` set)."""
    return parse_log_to(os.environ.get(LOG_TO_ENV))


def say(message: str) -> None:
    """A tracker's notice on stderr (a unit's console log keeps it)."""
    print(message, file=sys.stderr, flush=True)


_NAMED: set[str] = set()  # trackers that could not start in this process: named once, then skipped quietly


def read_state(home: Path) -> dict[str, Any]:
    """The folder's ``trackers.json`` ({} when absent or unreadable: the trackers then start new runs)."""
    data = read_json(Path(home) / STATE_FILE)
    return data if isinstance(data, dict) else {}


def metrics_of(line: dict[str, Any]) -> dict[str, float]:
    """A log.jsonl line as tracker metrics: a dev line's score as ``dev/score``, every other finite number of a
    training line as ``train/<key>`` (loss, lr, grad_norm, steps_per_s, gpu_peak_mb and a method's extras)."""
    if "dev_score" in line:
        return {"dev/score": float(line["dev_score"])}
    return {f"train/{k}": float(v) for k, v in line.items()
            if k not in NOT_METRICS and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


@dataclass
class TrackerSet:
    """The open tracker runs of one folder; every call is guarded (a failing tracker is named and dropped)."""

    home: Path
    backends: dict[str, Backend]
    state: dict[str, Any] = field(default_factory=dict)

    def log_line(self, line: dict[str, Any]) -> None:
        """Hand one log.jsonl line to every tracker."""
        step, metrics = int(line.get("step", 0)), metrics_of(line)
        if metrics:
            self._each("log", lambda b: b.log(step, metrics))
            self.state["last_step"] = max(step, int(self.state.get("last_step", 0)))

    def log_final(self, metrics: dict[str, float]) -> None:
        """A stored evaluation's scores, at the last step trained."""
        step = int(self.state.get("last_step", 0))
        self._each("log", lambda b: b.final(step, metrics))

    def close(self) -> None:
        """Finish every run and record the last step (a later reopening logs final scores there)."""
        self._each("close", lambda b: b.close())
        self.backends.clear()
        if any(name in self.state for name in TRACKERS):  # no file for a folder no tracker ever opened
            self._save()

    def _save(self) -> None:
        try:
            write_json_atomic(self.home / STATE_FILE, {**read_state(self.home), **self.state})
        except OSError as e:
            say(f"trackers: could not write {self.home / STATE_FILE} ({e}); a resumed run starts new tracker runs")

    def _each(self, what: str, call: Callable[[Backend], None]) -> None:
        for name, backend in list(self.backends.items()):
            try:
                call(backend)
            except Exception as e:  # noqa: BLE001  (a tracker never fails a unit)
                say(f"trackers: {name} failed to {what} ({type(e).__name__}: {e}); not logging to it for {self.home}")
                del self.backends[name]


def open_set(names: tuple[str, ...], context: TrackContext, start: int,
             openers: dict[str, Opener] | None = None) -> TrackerSet:
    """Open (or resume, from the folder's ``trackers.json``) each named tracker for ``context.home``; ``start`` is
    the step training resumes after (0 for a new run). A tracker that cannot start is named once and skipped."""
    openers = OPENERS if openers is None else openers
    state = read_state(context.home)
    out = TrackerSet(context.home, {}, {"last_step": int(state.get("last_step", 0))})
    for name in names:
        if name in _NAMED:
            continue
        try:
            backend, record = openers[name](context, state.get(name) or {}, start)
        except ImportError as e:
            _name_once(name, f"not installed ({e.name or e}); install it with pip install 'usebench[{name}]'")
            continue
        except Exception as e:  # noqa: BLE001  (a tracker never fails a unit)
            _name_once(name, f"could not start ({type(e).__name__}: {e})")
            continue
        out.backends[name], out.state[name] = backend, record
    if out.backends:
        out._save()  # the run ids first: a unit killed now resumes these runs
    return out


def _name_once(name: str, why: str) -> None:
    _NAMED.add(name)
    say(f"trackers: {name} {why}; training goes on without it")


@dataclass
class Tracking:
    """One unit's trackers: which, how its folders are described, and the folder whose runs are open."""

    names: tuple[str, ...]
    context_for: Callable[[Path], TrackContext]
    current: TrackerSet | None = None

    def open(self, home: Path, start: int) -> TrackerSet | None:
        """The trackers of ``home``: a new folder (the chain's next stage) closes the previous folder's runs."""
        home = Path(home)
        if self.current is not None and self.current.home == home:
            return self.current
        self.close()
        try:
            context = self.context_for(home)
        except Exception as e:  # noqa: BLE001
            say(f"trackers: cannot describe {home} ({type(e).__name__}: {e}); not logging it")
            return None
        self.current = open_set(self.names, context, start)
        return self.current

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None


_ACTIVE: ContextVar[Tracking | None] = ContextVar("usebench_tracking", default=None)


@contextmanager
def tracking(names: tuple[str, ...], context_for: Callable[[Path], TrackContext]) -> Iterator[Tracking | None]:
    """Track every training log and stored result inside the block with ``names``; the runs are finished on exit
    (however the block ends: a killed unit's runs are resumed by its next attempt)."""
    if not names:
        yield None
        return
    active = Tracking(tuple(names), context_for)
    token = _ACTIVE.set(active)
    try:
        yield active
    finally:
        _ACTIVE.reset(token)
        active.close()


def trackers_for(home: Path, start: int) -> TrackerSet | None:
    """The trackers the training log of ``home`` feeds (None outside :func:`tracking`, or with none asked for)."""
    active = _ACTIVE.get()
    return None if active is None else active.open(home, start)


def log_final(home: Path, metrics: dict[str, float]) -> None:
    """Log a stored evaluation's scores to ``home``'s tracker runs (reopened when that folder's training is not
    the one open: a stage trained earlier, or reused)."""
    active = _ACTIVE.get()
    if active is None or not metrics:
        return
    trackers = active.open(home, 0)
    if trackers is not None:
        trackers.log_final(metrics)
