"""The state of a run unit, read from its directory alone (so it works from any machine that sees the store):
done, running (a live lock), failed or interrupted (failed.json), stopped (files but no finished export and no
marker: killed hard), or missing (no directory); with steps done, last loss and elapsed time from log.jsonl."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmark.run.lock import LOCK_FILE, owner_alive, read_owner
from benchmark.run.unit import FAILED_FILE, STAGES_DIR


@dataclass(frozen=True)
class UnitState:
    run_id: str
    state: str  # done | running | failed | interrupted | stopped | missing
    stage: str = ""  # "2/2 nli-sts" in a chain
    step: int | None = None
    last_loss: float | None = None
    elapsed_s: float | None = None
    log: Path | None = None
    detail: str = ""  # the error of a failed unit, the owner of a running one


def unit_state(run_dir: Path) -> UnitState:
    """What the files of ``run_dir`` say about its unit."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return UnitState(run_dir.name, "missing")
    log, stage = _current_log(run_dir)
    last = _last_line(log) if log else {}
    progress = dict(stage=stage, step=last.get("step"), last_loss=last.get("loss"), elapsed_s=last.get("elapsed_s"),
                    log=log)
    owner = read_owner(run_dir / LOCK_FILE)
    if owner is not None and owner_alive(owner):
        return UnitState(run_dir.name, "running", detail=f"pid {owner.get('pid')} on {owner.get('host')}", **progress)
    failed = _read(run_dir / FAILED_FILE)
    if failed:
        return UnitState(run_dir.name, failed.get("state", "failed"), detail=failed.get("error", ""), **progress)
    if (run_dir / "method.json").is_file():
        return UnitState(run_dir.name, "done", **progress)
    return UnitState(run_dir.name, "stopped", detail="no finished export and no failure marker", **progress)


def _current_log(run_dir: Path) -> tuple[Path | None, str]:
    """The log of the stage that ran last (a chain's stages in order), and its "k/n method" label."""
    stages = sorted((run_dir / STAGES_DIR).glob("*-*"), key=lambda p: int(p.name.split("-", 1)[0])) \
        if (run_dir / STAGES_DIR).is_dir() else []
    if not stages:
        log = run_dir / "log.jsonl"
        return (log if log.is_file() else None), ""
    current = [s for s in stages if (s / "log.jsonl").is_file()] or stages[:1]
    last = current[-1]
    total = len(_read(run_dir / "config.json").get("chain", stages))
    return (last / "log.jsonl" if (last / "log.jsonl").is_file() else None), \
        f"{last.name.split('-', 1)[0]}/{total} {last.name.split('-', 1)[1]}"


def _last_line(log: Path) -> dict[str, Any]:
    try:
        lines = [ln for ln in log.read_text(encoding="utf-8").splitlines() if ln.strip()]
        return json.loads(lines[-1]) if lines else {}
    except (OSError, json.JSONDecodeError):
        return {}


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
