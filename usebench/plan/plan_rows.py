"""A plan as rows: what a dry run shows and writes, built once by the engine and printed by the CLI.

:func:`plan_view` turns a :class:`usebench.plan.specs.Plan` and the results store into one :class:`PlanRow` per unit
(its chain, setting, data, seed, steps, poolings, what happens to each stage now: ``train``, ``reuse`` from an
earlier unit, ``done`` in the store, and the unit's own state) and one per untrained baseline, and folds them
(:func:`group_rows`) into the summary a person reads: one row per group, chain and setting, with its steps' cost. The
view comes whole, so the CLI only prints it. :func:`write_plan_rows` writes every row to a CSV or JSON file for
scripts (``--plan-out``).
"""
from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from usebench.plan.cost import GPU_STEP_SECONDS
from usebench.plan.held_results import unit_gaps
from usebench.plan.stage_usage import ForcePlan, StageUse, force_plan, stage_usage, usage_totals
from usebench.store.unit_state import unit_state

PLAN_FORMATS = (".csv", ".json")  # --plan-out's suffixes


@dataclass(frozen=True)
class PlanStage:
    """One stage of a planned unit and what a run would do with it now."""

    method: str
    action: str  # train | reuse | done
    source: str  # the unit it is reused from (run id), or the store home it is done in; "" to train
    home: str
    steps: int | None
    pooling: str
    trains_on: str
    text: str  # "tsdae: train", "sbert-nli: reuse (unit #3)", "tsdae: done (<home>)"


@dataclass(frozen=True)
class PlanRow:
    """A unit of the plan (``number`` from 1 in plan order) or an untrained baseline (``number`` 0)."""

    number: int
    run_id: str
    chain: str
    setting: str
    seed: int | None
    evaluates: str
    now: str  # the unit's state in the store (missing, done, ...), "forced" when --force starts it over
    variant: str
    split: str
    stages: tuple[PlanStage, ...] = ()
    groups: tuple[str, ...] = ()  # the recipe tables the unit serves (bench reproduce); () for bench run

    @property
    def baseline(self) -> bool:
        return self.number == 0


@dataclass(frozen=True)
class PlanView:
    """A plan's rows and their summary (one :class:`GroupRow` per group, chain and setting, its cost computed), its
    notes and skipped data, what ``--force`` would do, and the stage totals line."""

    rows: list[PlanRow]
    groups: list[GroupRow]
    forced: ForcePlan
    totals: str  # usage_totals: units, stage slots, trainings, reuses within the plan and from the store
    units: int = 0
    baselines: int = 0
    notes: tuple[str, ...] = ()  # the plan's own lines (corpus sizes, ...), said before anything else
    skipped: tuple[tuple[str, str], ...] = ()  # (what, why): data missing here


def plan_view(plan: Any, results_dir: Path, groups: dict[str, Sequence[str]] | None = None,
              data_root: Path | None = None) -> PlanView:
    """The rows of ``plan`` (a :class:`usebench.plan.specs.Plan`) against the store at ``results_dir``; ``groups``
    maps a run id to the tables it serves. With ``data_root`` a trained unit is ``done`` only when every result it
    evaluates holds (:func:`usebench.plan.held_results.unit_gaps`, the run's own rule), else ``rescore``, with a line per
    result to score again."""
    results_dir = Path(results_dir)
    forced = force_plan([u for u in plan.units if u.force], results_dir)  # what --force would reset and keep
    usage = stage_usage(plan.units, results_dir, forced.reset)
    number: dict[str, int] = {}
    for i, u in enumerate(plan.units, 1):
        number.setdefault(u.run_id, i)  # a stage is reused from the first unit that trains it
    gaps: dict[str, list[str]] = {}  # run id -> results to score again
    hashes: dict = {}  # the data's sha256 per (task, split), hashed once for the view
    rows = [_unit_row(i, u, uses, number, results_dir, forced, tuple((groups or {}).get(u.run_id, ())),
                      _gaps(u, data_root, results_dir, hashes, gaps))
            for i, (u, uses) in enumerate(zip(plan.units, usage), 1)]
    rows += [PlanRow(0, f"{b.name} ({b.model})", b.name, "baselines", None, ",".join(b.evals), "-", "-",
                     plan.split, (PlanStage(b.name, "evaluate", "", "", None, b.pooling or "-", "-", "-"),))
             for b in plan.baselines]
    lines = [f"{run}: trained; {line}: running this command without --dry-run scores it from the finished checkpoint "
             "(nothing is retrained)" for run, found in gaps.items() for line in found]
    return PlanView(rows, group_rows(rows), forced, usage_totals(usage), len(plan.units), len(plan.baselines),
                    (*plan.notes, *lines), tuple(plan.skipped))


def _gaps(unit: Any, data_root: Path | None, results_dir: Path, hashes: dict, found: dict[str, list[str]]) -> bool:
    """Whether a trained ``unit`` has results to score again (:func:`usebench.plan.held_results.unit_gaps`, the run's own
    rule), each kept in ``found``; False when not asked (no ``data_root``) or forced."""
    if data_root is None or unit.force or not (results_dir / unit.run_id / "method.json").is_file():
        return False
    _done, lines = unit_gaps(unit, data_root, results_dir, hashes)
    if lines:
        found[unit.run_id] = lines
    return bool(lines)


def _unit_row(i: int, u: Any, uses: list[StageUse], number: dict[str, int], results_dir: Path, forced: ForcePlan,
              groups: tuple[str, ...], rescore: bool = False) -> PlanRow:
    stages = tuple(PlanStage(x.method, x.action, x.source, x.home, s.steps, s.pooling, str(s.data["label"]),
                             x.text(number)) for s, x in zip(u.stages, uses))
    now = "forced" if u.run_id in forced.reset else unit_state(results_dir / u.run_id).state
    if now == "done" and rescore:
        now = "rescore"  # trained; some result missing or stale: scored again from the checkpoint, not retrained
    return PlanRow(i, u.run_id, u.label, str(u.config.get("setting", "unsupervised")), u.seed, evaluated_splits(u),
                   now, u.variant or "-", u.split, stages, groups)


def evaluated_splits(unit: Any) -> str:
    """``twitterpara (test), askubuntu (dev)``: the split each task is read on, as the unit will read it (a task
    without a dev split is read on test where dev was only the default)."""
    from usebench.registry import TASKS
    from usebench.plan.specs import task_split

    splits = [(t, task_split(unit, TASKS.get(t))) for t in unit.evals]
    if len({s for _, s in splits}) == 1:
        return f"{','.join(t for t, _ in splits)} ({splits[0][1]})"
    return ", ".join(f"{t} ({s})" for t, s in splits)


@dataclass
class GroupRow:
    """The summary of the units of one (group, chain, setting): how many, their seeds, what their stages do now,
    the steps they would train, and those steps' cost."""

    group: str
    chain: str
    setting: str
    units: int = 0
    seeds: set[int] = field(default_factory=set)
    train: int = 0
    reuse: int = 0
    done: int = 0
    steps: int = 0  # optimizer steps of the stages this group trains (a stage reused elsewhere counts once)
    states: dict[str, int] = field(default_factory=dict)  # units per state in the store
    evaluates: str = ""

    @property
    def gpu_hours(self) -> float:
        """The steps' cost at the docs' rough A100 floor (:data:`usebench.plan.cost.GPU_STEP_SECONDS` a step)."""
        return self.steps * GPU_STEP_SECONDS / 3600


def group_rows(rows: Sequence[PlanRow], group: Callable[[PlanRow], Sequence[str]] = lambda r: r.groups or ("",)
               ) -> list[GroupRow]:
    """One :class:`GroupRow` per (group, chain, setting), a group's rows together, in order of first appearance; a
    unit of several groups (a unit two tables share) counts in each. Baselines are one row each, under their own
    setting."""
    out: dict[tuple[str, str, str], GroupRow] = {}
    for row in rows:
        for g in group(row):
            key = (g, row.chain, row.setting)
            summary = out.setdefault(key, GroupRow(*key, evaluates=row.evaluates))
            _add(summary, row)
    first = {g: i for i, g in reversed(list(enumerate(k[0] for k in out)))}  # each group's rows together
    return sorted(out.values(), key=lambda g: first[g.group])


def _add(summary: GroupRow, row: PlanRow) -> None:
    if row.baseline:
        return
    summary.units += 1
    if row.seed is not None:
        summary.seeds.add(row.seed)
    summary.states[row.now] = summary.states.get(row.now, 0) + 1
    for s in row.stages:
        setattr(summary, s.action, getattr(summary, s.action) + 1)
        summary.steps += (s.steps or 0) if s.action == "train" else 0
    if summary.evaluates != row.evaluates:  # units of one chain on several tasks: name the tasks once
        tasks = dict.fromkeys(_tasks(summary.evaluates) + _tasks(row.evaluates))
        summary.evaluates = ",".join(tasks)


def _tasks(evaluates: str) -> list[str]:
    """The task names of an ``evaluates`` cell (``"a,b (test)"``, ``"a (test), b (dev)"``), splits dropped."""
    names = []
    for part in evaluates.replace(", ", ",").split(","):
        names.append(part.split(" (", 1)[0].strip())
    return [n for n in names if n]


def plan_records(rows: Sequence[PlanRow]) -> list[dict[str, Any]]:
    """Every row as a JSON-able dict (the stages as a list of dicts)."""
    return [asdict(r) for r in rows]


CSV_COLUMNS = ("number", "run_id", "chain", "setting", "seed", "split", "tables", "trains_on", "steps", "pooling",
               "stages", "evaluates", "now", "variant")


def _csv_row(r: PlanRow) -> dict[str, Any]:
    """A row for the CSV: a unit's stages joined with " > " (in chain order), as the dry run's unit table."""
    return {"number": r.number or "", "run_id": r.run_id, "chain": r.chain, "setting": r.setting,
            "seed": "" if r.seed is None else r.seed, "split": r.split, "tables": ",".join(r.groups),
            "trains_on": " > ".join(s.trains_on for s in r.stages),
            "steps": " > ".join("?" if s.steps is None else str(s.steps) for s in r.stages),
            "pooling": " > ".join(s.pooling for s in r.stages),
            "stages": "; ".join(s.text for s in r.stages if s.action != "evaluate"),
            "evaluates": r.evaluates, "now": r.now, "variant": r.variant}


def write_plan_rows(path: Path, rows: Sequence[PlanRow]) -> None:
    """``--plan-out``: every row to ``path``, CSV or JSON by its suffix (checked by :func:`check_plan_out`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".json":
        path.write_text(json.dumps(plan_records(rows), indent=1) + "\n", encoding="utf-8")
        return
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(_csv_row(r) for r in rows)


def check_plan_out(path: Path | None) -> None:
    """A ``--plan-out`` path must end in .csv or .json (said before any planning)."""
    from usebench.errors import ConfigError

    if path is not None and Path(path).suffix.lower() not in PLAN_FORMATS:
        raise ConfigError(f"--plan-out {path}: expected a .csv or .json file (the format is chosen by the suffix)")
