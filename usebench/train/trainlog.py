"""``log.jsonl``: one line per ``log_every`` steps with the window's mean loss, lr, speed and extras, a line per dev
evaluation, and each line handed to the run's trackers (:mod:`usebench.train.trackers`)."""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from usebench.train.trackers import trackers_for


class TrainLog:
    """log.jsonl writer (main rank only): one line per ``every`` steps with the window's mean loss."""

    def __init__(self, path: Path, every: int, start: int, enabled: bool, device: str | None = None):
        self.path, self.every, self.enabled = path, every, enabled
        self.device = device  # the training device: only a CUDA run reports GPU memory
        self.losses: list[float] = []
        self.extras: dict[str, list[float]] = {}
        self.t0, self.s0 = time.perf_counter(), start
        self.lines: list[dict[str, Any]] = []
        self.counters: dict[str, int] = {}  # running counts every line carries (fp16: skipped_steps)
        self.step = start  # the last step added: a dev evaluation follows it
        if enabled and path.is_file():  # a resumed run drops the lines it will write again
            kept = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()
                    and json.loads(ln).get("step", 0) <= start]
            path.write_text("".join(ln + "\n" for ln in kept), encoding="utf-8")
        self.trackers = trackers_for(path.parent, start) if enabled else None  # None unless `--log-to` asked

    def add(self, step: int, loss: float, extras: dict[str, float], lr: float) -> None:
        self.losses.append(loss)
        self.step = step
        for k, v in extras.items():
            self.extras.setdefault(k, []).append(v)
        if step % self.every == 0:
            self.flush(step, lr)

    def window_loss(self) -> float | None:
        """The loss log.jsonl holds for the window that ends at the last step added: the open window's mean so far,
        or, right after a line, that line's. What the progress bar shows, so that the bar and the log agree (the bar
        once showed the last step's loss: 0.5085 beside the log's 0.304 at step 20)."""
        if self.losses:
            return float(np.mean(self.losses))
        return next((float(ln["loss"]) for ln in reversed(self.lines) if ln.get("loss") is not None), None)

    def flush(self, step: int, lr: float, **more: Any) -> None:
        if not self.losses:
            return
        elapsed = time.perf_counter() - self.t0
        line = {"step": step, "loss": float(np.mean(self.losses)), "lr": lr,
                "steps_per_s": (step - self.s0) / max(elapsed, 1e-9), "elapsed_s": elapsed,
                **{k: float(np.mean(v)) for k, v in self.extras.items()}, **gpu_memory(self.device), **self.counters,
                **more}
        self.losses, self.extras = [], {}
        self.write(line)

    def event(self, step: int, **fields: Any) -> None:
        """A line of its own, written at once (no loss): something that happened at ``step`` (1-based), e.g. a
        fast-path part that fell back (``event: fallback``); readers of losses skip lines without one."""
        self.write({"step": step, **fields})

    def write(self, line: dict[str, Any]) -> None:
        """Keep ``line``, append it to log.jsonl (main rank) and hand it to the trackers."""
        self.lines.append(line)
        if self.enabled:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(line) + "\n")
        if self.trackers is not None:
            self.trackers.log_line(line)

    def watch_dev(self, dev_eval: Callable[[Path], float] | None, metric: str | None,
                  task: str | None) -> Callable[[Path], float] | None:
        """``dev_eval`` that also writes each score as a line ``{"step", "dev_score", "dev_metric", "dev_task"}``
        (after the step it follows; for ``metric`` loss the score is minus the validation loss)."""
        if dev_eval is None:
            return None

        def scored(checkpoint: Path) -> float:
            score = float(dev_eval(checkpoint))
            self.write({"step": self.step, "dev_score": score, "dev_metric": metric or "main score",
                        "dev_task": task})
            return score

        return scored


def gpu_memory(device: str | None) -> dict[str, float]:
    """Peak GPU memory so far on ``device`` (MB, allocated by torch) when the run trains on CUDA: how close a
    preset is to the card's limit, read from log.jsonl; nothing for a CPU run, even on a host where CUDA is in use
    by someone else in the process (a test session, a notebook)."""
    import torch

    if device is None or torch.device(device).type != "cuda":
        return {}
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return {}
    return {"gpu_peak_mb": round(torch.cuda.max_memory_allocated(torch.device(device)) / 2**20, 1)}
