"""What the results store knows about planned and submitted units, so `bench status` can show the whole grid
(units not started yet included) from the store alone.

Launcher state lives in the hidden folder ``<results>/.launch/`` (the store's readers skip hidden folders):

- ``grid-<id>.json``: written atomically by `bench run` when it starts, one per distinct grid (``<id>`` hashes the
  sorted run ids, so re-running the same command rewrites the same file): the command line, the launcher, and
  per unit its run id, chain, seed, target task, evaluations and stages (method and home); from `bench reproduce`
  also the recipe and, per unit, the tables it serves (the trackers group units by them: usebench/run/tracking.py);
  :mod:`usebench.plan.manifest` builds the entries.
- ``jobs/<run_id>.json``: written by the Ray and SLURM launchers when they hand a unit out: the launcher, its
  job id, where the launcher's own log of the job is, and when (the latest submission of that unit); for a Ray
  task also its driver's host and pid (a Ray task ends with its driver). A rerun of `bench run --launcher slurm`
  reattaches to the jobs these name that are still pending or running.
- ``ray/`` (a local Ray's logs, copied from its temp dir) and ``slurm/`` (submitit's folder: job scripts, pickles,
  stdout/stderr); ``baselines/`` (the log of a baseline evaluated as a Ray task or SLURM job).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.store.files import now_iso, read_json, write_json_atomic

LAUNCH_DIR = ".launch"
SCHEMA = "usebench-grid/1"


@dataclass(frozen=True)
class PlannedUnit:
    """One unit as a grid manifest lists it."""

    run_id: str
    label: str
    seed: int
    task: str
    grid: str  # the manifest it comes from
    stages: tuple[dict[str, Any], ...] = ()  # {"method", "home"} per stage
    results: tuple[str, ...] = ()  # "task/split" of each result the unit writes (() in manifests written before)
    argv: tuple[str, ...] = ()  # the command that planned it


def launch_dir(results_dir: str | Path) -> Path:
    """``<results>/.launch``: the launchers' state and files."""
    return Path(results_dir) / LAUNCH_DIR


def grid_id(run_ids: list[str]) -> str:
    """A short name for a set of units (the same run ids give the same name)."""
    return hashlib.sha256("\n".join(sorted(run_ids)).encode()).hexdigest()[:10]


def write_grid(results_dir: str | Path, units: list[dict[str, Any]], launcher: str, argv: list[str] | None = None,
               recipe: str | None = None) -> Path:
    """Record the planned units of this invocation (atomically), one entry per unit as
    :func:`usebench.plan.manifest.unit_entry` writes it; returns the manifest's path."""
    path = launch_dir(results_dir) / f"grid-{grid_id([u['run_id'] for u in units])}.json"
    write_json_atomic(path, {
        "schema": SCHEMA, "written_at": now_iso(), "argv": list(sys.argv if argv is None else argv), "cwd": os.getcwd(),
        "launcher": launcher, "units": units, **({"recipe": recipe} if recipe else {}),
    })
    return path


def unit_grid(results_dir: str | Path, run_id: str) -> dict[str, Any]:
    """The newest grid manifest that lists ``run_id``: ``{"grid": "grid-<id>", "recipe", "tables", "argv", "cwd"}`` (the
    recipe and tables when `bench reproduce` wrote it); {} when none does (a unit run through the API)."""
    found: tuple[str, dict[str, Any]] | None = None
    for path in launch_dir(results_dir).glob("grid-*.json"):
        data = _manifest(path)
        entry = next((u for u in data.get("units", []) if u.get("run_id") == run_id), None) \
            if isinstance(data, dict) else None
        if entry is not None and (found is None or str(data.get("written_at", "")) > found[0]):
            found = (str(data.get("written_at", "")), {"grid": path.stem, "recipe": data.get("recipe"),
                                                        "tables": entry.get("tables", []), "argv": data.get("argv"),
                                                        "cwd": data.get("cwd")})
    return found[1] if found else {}


def planned_units(results_dir: str | Path) -> list[PlannedUnit]:
    """Every unit of every grid manifest in the store, oldest manifest first, each run id once."""
    manifests = []
    for path in launch_dir(results_dir).glob("grid-*.json"):
        data = read_json(path)  # a manifest is a convenience for status; run directories remain the truth
        if isinstance(data, dict) and data.get("schema") == SCHEMA:
            manifests.append((str(data.get("written_at", "")), path.stem, data))
    out: dict[str, PlannedUnit] = {}
    for _, name, data in sorted(manifests):
        for u in data.get("units", []):
            out.setdefault(u["run_id"], PlannedUnit(u["run_id"], u.get("label", ""), int(u.get("seed", 0)),
                                                    u.get("task", ""), name, tuple(u.get("stages", ())),
                                                    tuple(u.get("results", ())), tuple(data.get("argv") or ())))
    return list(out.values())


def record_job(results_dir: str | Path, run_id: str, launcher: str, job_id: str, log: str | Path | None,
               driver: dict[str, Any] | None = None) -> None:
    """Note that ``run_id`` was handed to a launcher as ``job_id`` (its own log of the job at ``log``; ``driver``:
    the host and pid of the process the job depends on, for Ray tasks, which end with their driver)."""
    entry = {"launcher": launcher, "job_id": job_id, "log": None if log is None else str(log),
             "submitted_at": now_iso()}
    if driver:
        entry["driver"] = driver
    write_json_atomic(launch_dir(results_dir) / "jobs" / f"{run_id}.json", entry)


def read_job(results_dir: str | Path, run_id: str) -> dict[str, Any] | None:
    """The latest submission of ``run_id`` (see :func:`record_job`), or None."""
    return read_json(launch_dir(results_dir) / "jobs" / f"{run_id}.json")


_PARSED: dict[Path, tuple[tuple[int, int], Any]] = {}  # a grid of 2,000 units reads its manifest once per change


def _manifest(path: Path) -> Any:
    """A manifest's JSON (None when unreadable), parsed again only when the file changed."""
    try:
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        if path not in _PARSED or _PARSED[path][0] != key:
            _PARSED[path] = (key, json.loads(path.read_text(encoding="utf-8")))
        return _PARSED[path][1]
    except (OSError, json.JSONDecodeError):
        return None
