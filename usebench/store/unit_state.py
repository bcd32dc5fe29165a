"""The state of a run unit, read from its directory alone (so it works from any machine that sees the store):
done, running (a live lock), failed or interrupted (failed.json), requeued (a SLURM job preempted or out of
time, queued again: it resumes), stopped (files but no finished export and no marker: killed hard), or missing
(no directory); with steps done, last loss and elapsed time from log.jsonl.

:func:`grid_status` is `bench status`: every unit the store knows of, the planned ones from the grid manifests
(:mod:`usebench.store.manifest`) included; a missing unit that a launcher has handed out is ``submitted``, unless
it was a Ray task whose driver (on this host) is gone: Ray ended it with its driver, so it is ``missing``.
A lock of another host counts as live while its heartbeat is recent on the store's own clock
(:func:`usebench.store.locks.store_clock`), not this machine's.

A unit's outcome as a launcher reports it, :class:`UnitResult`, is here too: the run fills it, and the launchers'
"already done" (:func:`usebench.plan.held_results.finished_unit`) builds it from the store alone.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from usebench.store.files import read_json
from usebench.store.locks import LOCK_FILE, owner_alive, read_owner, store_clock
from usebench.store.manifest import LAUNCH_DIR, planned_units, read_job
from usebench.store.records import result_path
from usebench.store.stage_ids import STAGES_HOME
from usebench.store.unit_files import FAILED_FILE, STAGE_LOCK_DIR, STAGES_DIR, STAGES_FILE, UNIT_LOG


STATES = ("done", "rescore", "running", "failed", "interrupted", "requeued", "stopped", "submitted", "missing")


@dataclass(frozen=True)
class UnitState:
    run_id: str
    state: str  # done | running | failed | interrupted | stopped | missing (| submitted, from grid_status)
    stage: str = ""  # "2/2 nli-sts" in a chain
    step: int | None = None
    last_loss: float | None = None
    elapsed_s: float | None = None
    log: Path | None = None  # the current stage's log.jsonl
    detail: str = ""  # the error of a failed unit, the owner of a running one
    warning: str = ""  # what fell back mid-run on the fast path (log.jsonl's fallback lines), whatever the state
    console: Path | None = None  # unit.log: what the unit printed, every attempt (or the launcher's job log)
    total_steps: int | None = None  # of the current stage, when its config sets max_steps (or stop_at_step)
    label: str = ""  # method or chain
    seed: int | None = None


@dataclass
class UnitResult:
    """What a unit did: its results, skips, how its training went, and how long it took."""

    run_id: str
    run_dir: Path
    row: str
    state: str = "done"  # done | locked (another process holds it) | failed
    results: list[tuple[str, Path]] = field(default_factory=list)  # (task, result file)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    training: list[str] = field(default_factory=list)  # per stage: trained | resumed at N | reused
    seconds: float = 0.0
    error: str | None = None
    log: Path | None = None  # the unit's console log (a launcher's own log when the unit never started)
    attempts: int = 1


def unit_state(run_dir: Path, now: float | None = None) -> UnitState:
    """What the files of ``run_dir`` say about its unit (``now``: the store's clock, read once per listing)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return UnitState(run_dir.name, "missing")
    log, stage = _current_log(run_dir)
    last, warning = _log_summary(log) if log else ({}, "")
    config = _read(run_dir / "config.json")
    console = run_dir / UNIT_LOG
    progress = dict(stage=stage, step=last.get("step"), last_loss=last.get("loss"), elapsed_s=last.get("elapsed_s"),
                    log=log, console=console if console.is_file() else None, total_steps=_total(config, stage),
                    label=str(config.get("method", "")), seed=config.get("seed"), warning=warning)
    for lock in (run_dir / LOCK_FILE, run_dir / STAGE_LOCK_DIR / LOCK_FILE):  # the unit, or its stage trained
        owner = read_owner(lock)  # by another unit (a single method's run dir is that stage's home)
        if owner is not None and owner_alive(owner, lock, now):
            return UnitState(run_dir.name, "running", detail=f"pid {owner.get('pid')} on {owner.get('host')}",
                             **progress)
    failed = _read(run_dir / FAILED_FILE)
    if failed:
        return UnitState(run_dir.name, failed.get("state", "failed"), detail=failed.get("error", ""), **progress)
    if (run_dir / "method.json").is_file():
        return UnitState(run_dir.name, "done", **progress)
    return UnitState(run_dir.name, "stopped", detail="no finished export and no failure marker", **progress)


def grid_status(results_dir: Path) -> list[UnitState]:
    """Every unit of the store: the planned ones (grid manifests, in plan order) then any other run directory
    of a trained unit; a planned unit without a directory is ``submitted`` when a launcher handed it out."""
    results_dir = Path(results_dir)
    out, seen = [], set()
    now = store_clock(results_dir) if results_dir.is_dir() else None
    planned_all = planned_units(results_dir)
    for planned in planned_all:
        seen.add(planned.run_id)
        state = unit_state(results_dir / planned.run_id, now)
        if state.state == "missing":
            state = _submitted(state, read_job(results_dir, planned.run_id))
        elif state.state == "done":
            state = _rescore(state, results_dir / planned.run_id, planned)
        out.append(replace(state, label=state.label or planned.label,
                           seed=planned.seed if state.seed is None else state.seed))
    # a single method's stage lives in the run directory its own unit would have; where no such unit was
    # planned (a chain's first stage alone), that directory is a stage (listed under stages), not a unit
    stage_homes = {entry["home"] for planned in planned_all for entry in _stage_entries(results_dir, planned)}
    others = sorted(p for p in results_dir.iterdir() if p.is_dir() and p.name not in seen
                    and p.name != LAUNCH_DIR and p.name not in stage_homes) if results_dir.is_dir() else []
    out += [unit_state(p, now) for p in others if _read(p / "config.json").get("run_id") == p.name]
    return out


def _rescore(state: UnitState, run_dir: Path, planned: Any) -> UnitState:
    """A trained unit one of whose results is missing or no longer holds (:mod:`usebench.store.validity`, the rule the
    plan and the run ask, in its part that reads the store alone) is ``rescore``: the command that planned it
    scores those again from the finished checkpoint, training nothing."""
    gaps = result_gaps(run_dir, planned.results)
    if not gaps:
        return state
    command = shlex.join(["bench", *planned.argv[1:]]) if planned.argv else "the command that planned it"
    return replace(state, state="rescore", detail=f"{'; '.join(gaps)}: `{command}` scores it again from its "
                                                  "finished checkpoint (nothing is retrained)")


def result_gaps(run_dir: Path, results: tuple[str, ...]) -> list[str]:
    """One line per result of ``results`` ("task/split") stored in ``run_dir`` that does not hold for the unit's
    config (``config.json``): :func:`usebench.store.validity.stored_reason`, the part of the rule that reads the store
    alone (the task's version and data are the plan's and the run's to compare: they need the adapters and the
    data root, and status imports neither)."""
    from usebench.store.validity import gap_line, read_record, stored_reason

    config = {k: v for k, v in _read(run_dir / "config.json").items() if k not in ("seed", "run_id")}
    gaps = []
    for entry in results:
        task, _, split = entry.partition("/")
        record, unreadable = read_record(result_path(run_dir.parent, run_dir.name, task, split))
        reason = unreadable if record is None and unreadable != "no stored result" else \
            stored_reason(record, task, split, config or None)
        if reason is not None:
            gaps.append(gap_line(task, split, reason))
    return gaps


def _submitted(state: UnitState, job: dict[str, Any] | None) -> UnitState:
    """A missing unit a launcher handed out: submitted, unless its Ray driver (on this host) is gone."""
    if not job:
        return state
    log = Path(job["log"]) if job.get("log") else None
    what = f"{job.get('launcher')} job {job.get('job_id')} at {job.get('submitted_at')}"
    driver = job.get("driver") or {}
    if driver and not owner_alive(driver):
        return replace(state, detail=f"{what}: its driver, pid {driver.get('pid')} on {driver.get('host')}, is gone "
                                     "(Ray ended its tasks); run the command again")
    return replace(state, state="submitted", console=log, detail=what)


def _total(config: dict[str, Any], stage: str) -> int | None:
    """Planned steps of the current stage (``stage`` is "k/n method" in a chain, "" for one stage)."""
    if "config" in config:
        entry = config["config"]
    else:
        stages = config.get("stages") or [{}]
        k = int(stage.split("/", 1)[0]) - 1 if stage else 0
        entry = stages[min(k, len(stages) - 1)].get("config", {})
    steps, stop = entry.get("max_steps"), entry.get("stop_at_step")
    if isinstance(stop, int) and (not isinstance(steps, int) or stop < steps):
        return stop  # the run stops there (stop_at_step truncates the budget)
    return steps if isinstance(steps, int) else None


def _current_log(run_dir: Path) -> tuple[Path | None, str]:
    """The log of the stage that ran last (a chain's stages in order), and its "k/n method" label."""
    homes = _read_list(run_dir / STAGES_FILE)
    if homes and [h.get("home") for h in homes] != [run_dir.name]:
        return _homes_log(run_dir.parent, homes)
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


def _homes_log(results_dir: Path, homes: list[dict[str, Any]]) -> tuple[Path | None, str]:
    """stages.json: the first stage without a finished export is the current one (else the last)."""
    k = next((i for i, h in enumerate(homes) if not finished(results_dir / h["home"])), len(homes) - 1)
    log = results_dir / homes[k]["home"] / "log.jsonl"
    return (log if log.is_file() else None), f"{k + 1}/{len(homes)} {homes[k].get('method', '')}"


def finished(home: Path) -> bool:
    """Whether the stage's export is complete (method.json is written last)."""
    return (Path(home) / "checkpoint" / "method.json").is_file()


def store_users(results_dir: Path) -> dict[str, set[str]]:
    """Stage home -> run ids of the store's units whose ``stages.json`` lists it (a unit that ran, or started)."""
    users: dict[str, set[str]] = {}
    root = Path(results_dir)
    if not root.is_dir():
        return users
    for stages_file in root.glob("*/stages.json"):
        try:
            homes = [str(e["home"]) for e in read_json(stages_file)]
        except (KeyError, TypeError):
            continue  # unreadable: its unit is not known to use anything (bench status reports it)
        for home in homes:
            users.setdefault(home, set()).add(stages_file.parent.name)
    return users


@dataclass(frozen=True)
class StageState:
    """One stage home: done (finished export), running (a live stage lock), partial (a log or train state, no
    export, no live lock: it resumes when a unit needs it) or missing; with its progress and its users."""

    home: str
    method: str
    state: str
    step: int | None = None
    used_by: int = 0  # units of the store's grids that need it


def stage_states(results_dir: Path) -> list[StageState]:
    """Every stage the grid manifests name (shared ones once) and every home under ``.stages/``."""
    results_dir = Path(results_dir)
    users: dict[str, set[str]] = {}
    methods: dict[str, str] = {}
    for planned in planned_units(results_dir):
        for entry in _stage_entries(results_dir, planned):
            users.setdefault(entry["home"], set()).add(planned.run_id)
            methods[entry["home"]] = entry.get("method", "")
    hidden = results_dir / STAGES_HOME
    for path in sorted(hidden.iterdir()) if hidden.is_dir() else []:
        home = f"{STAGES_HOME}/{path.name}"
        users.setdefault(home, set())
        methods.setdefault(home, path.name.split("__", 1)[0])
    for home, ids in store_users(results_dir).items():  # units that ran (their stages.json), planned here or not
        if home in users:
            users[home] |= ids
    return [_stage_state(results_dir, home, methods[home], len(ids)) for home, ids in users.items()]


def _stage_entries(results_dir: Path, planned: Any) -> list[dict[str, Any]]:
    """A planned unit's stages as its run wrote them (``stages.json``), else as the manifest planned them."""
    return _read_list(results_dir / planned.run_id / STAGES_FILE) or planned.stages


def _stage_state(results_dir: Path, home: str, method: str, used_by: int) -> StageState:
    path = results_dir / home
    log = path / "log.jsonl"
    step = _last_line(log).get("step") if log.is_file() else None
    lock = path / STAGE_LOCK_DIR / LOCK_FILE
    owner = read_owner(lock)
    if finished(path):
        state = "done"
    elif owner is not None and owner_alive(owner, lock):
        state = "running"
    else:
        state = "partial" if log.is_file() or (path / "train_state").is_dir() else "missing"
    return StageState(home, method, state, step, used_by)


def _read_list(path: Path) -> list[dict[str, Any]]:
    data = read_json(path)
    return data if isinstance(data, list) else []


# A unit's log.jsonl grows by a line per logged step (100,000 steps: ~10 MB): status reads its last bytes only.
TAIL_BYTES = 256 * 1024


def _tail(log: Path, size: int | None = None) -> tuple[list[dict[str, Any]], bool]:
    """The JSON lines of the last ``size`` bytes of ``log`` (a cut first line and a line being written are
    skipped), and whether that was the whole file."""
    size = TAIL_BYTES if size is None else size
    try:
        with log.open("rb") as f:
            end = f.seek(0, 2)
            start = max(0, end - size)
            f.seek(start)
            data = f.read(end - start)
    except OSError:
        return [], True
    if start:
        data = data[data.find(b"\n") + 1:] if b"\n" in data else b""
    lines = []
    for raw in data.decode("utf-8", errors="replace").splitlines():
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(line, dict):
            lines.append(line)
    return lines, start == 0


def _log_summary(log: Path) -> tuple[dict[str, Any], str]:
    """(the last progress line of ``log``: its last with a loss, else its last; the fast path's fallbacks in it,
    "compile eager from step 37 (...)", or ""). Of a log longer than its tail, the fallbacks before the tail come
    from the stage's finished export (method.json records the step path's fallbacks)."""
    lines, whole = _tail(log)
    progress = next((ln for ln in reversed(lines) if "loss" in ln), lines[-1] if lines else {})
    fallbacks = [(ln.get("part"), ln.get("step"), ln.get("error")) for ln in lines if ln.get("event") == "fallback"]
    if not whole:
        recorded = _read(log.parent / "checkpoint" / "method.json").get("step_path") or {}
        earlier = [(f.get("part"), f.get("step"), f.get("error")) for f in recorded.get("fallbacks") or []
                   if isinstance(f, dict)]
        fallbacks = [f for f in earlier if f not in fallbacks] + fallbacks
    return progress, "; ".join(f"{part} eager from step {step} ({error})" for part, step, error in fallbacks)


def _last_line(log: Path) -> dict[str, Any]:
    """The last training line of a log.jsonl (a dev evaluation's line, which has no loss, follows its step's line)."""
    lines, _ = _tail(log)
    return next((ln for ln in reversed(lines) if "loss" in ln), lines[-1] if lines else {})


def _read(path: Path) -> dict[str, Any]:
    data = read_json(path)
    return data if isinstance(data, dict) else {}
