"""What a plan does with its stages, read against the store before anything trains: per unit, each stage is
trained, reused from an earlier unit of the plan, or done in the store (:func:`stage_usage`); and what ``--force``
would reset and keep (:func:`force_plan`). The dry run shows both; the run applies them (usebench/run/stages.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.store.stage_ids import STAGES_HOME
from usebench.store.unit_state import finished, store_users


@dataclass(frozen=True)
class StageUse:
    """What one unit does with one of its stages: ``train``, ``reuse`` (trained by an earlier unit of this
    plan, ``source`` = that unit's run id) or ``done`` (finished in the store, ``source`` = its home)."""

    k: int
    method: str
    home: str
    action: str
    source: str = ""

    def text(self, number: dict[str, int] | None = None) -> str:
        """``tsdae: train``, ``sbert-nli: reuse (unit #3)`` / ``(unit <run id>)``, ``tsdae: done (<home>)``."""
        if self.action == "train":
            return f"{self.method}: train"
        if self.action == "done":
            return f"{self.method}: done ({self.source})"
        unit = f"#{number[self.source]}" if number and self.source in number else self.source
        return f"{self.method}: reuse (unit {unit})"


def stage_usage(units: Sequence[Any], results_dir: Path,
                reset: Sequence[str] = ()) -> list[list[StageUse]]:
    """Per unit (:class:`usebench.plan.specs.UnitSpec`), in plan order, what happens to each of its stages if
    the plan runs now (``reset``: homes ``--force`` starts over, so they train whatever they hold)."""
    first: dict[str, str] = {}  # home -> run id of the first unit that trains it
    wiped = set(reset)
    out = []
    for unit in units:
        uses = []
        for k, stage in enumerate(unit.stages):
            if stage.home not in wiped and finished(Path(results_dir) / stage.home):
                uses.append(StageUse(k, stage.method, stage.home, "done", stage.home))
            elif stage.home in first:
                uses.append(StageUse(k, stage.method, stage.home, "reuse", first[stage.home]))
            else:
                first[stage.home] = unit.run_id
                uses.append(StageUse(k, stage.method, stage.home, "train"))
        out.append(uses)
    return out


def usage_totals(usage: list[list[StageUse]]) -> str:
    """One line: units, stage trainings, reuses within the plan, stages already in the store."""
    flat = [u for uses in usage for u in uses]
    count = {a: sum(u.action == a for u in flat) for a in ("train", "reuse", "done")}
    done_homes = len({u.home for u in flat if u.action == "done"})
    return (f"{len(usage)} unit(s), {len(flat)} stage slot(s): {count['train']} stage training(s), "
            f"{count['reuse']} reused from another unit of this plan, {count['done']} reused from the store "
            f"({done_homes} distinct finished stage(s))")


@dataclass(frozen=True)
class ForcePlan:
    """What ``--force`` does to the store (:func:`force_plan`): ``reset`` (paths relative to the results dir:
    the named units' run directories and the stage homes only they use) start over; ``kept`` maps each stage
    home that a unit outside the run also uses to those units' run ids, and is left as it is (reused)."""

    reset: tuple[str, ...]
    kept: dict[str, tuple[str, ...]]

    def notes(self) -> list[str]:
        """One line per kept home: the plan and the run say why it is not retrained."""
        return [f"--force: stage home {home} is kept (also used by {', '.join(users)}, outside this run; name "
                f"those units too to retrain it)" for home, users in self.kept.items()]


def force_plan(units: Sequence[Any], results_dir: Path) -> ForcePlan:
    """Ownership under ``--force``: a unit owns its run directory, and a stage home that no unit outside the run
    uses. A home another unit uses (the plain ``tsdae`` unit whose run directory is ``tsdae>nli-sts``'s first
    stage, or a ``.stages`` home a unit outside the run was trained on) is kept: resetting it would delete that
    unit's results or leave them scored on weights that no longer exist."""
    named = {u.run_id for u in units}
    users = store_users(results_dir)
    homes = dict.fromkeys(p for u in units for p in (u.run_id, *(s.home for s in u.stages)))
    reset: list[str] = []
    kept: dict[str, tuple[str, ...]] = {}
    for home in homes:
        outside = users.get(home, set()) - named
        if home not in named and not home.startswith(STAGES_HOME) \
                and (Path(results_dir) / home / "method.json").is_file():
            outside.add(home)  # a finished unit lives there (one stored before stages.json was written)
        if outside:
            kept[home] = tuple(sorted(outside))
        else:
            reset.append(home)
    return ForcePlan(tuple(reset), kept)
