"""A recipe's whole plan as one JSON-able snapshot, for the planner's identity test (tests/plan/test_plan_identity.py):
every planned run (command, blocked / refused / excluded, run ids), every merged plan's units (every field of every
unit and stage: identity, home, data entry, steps, variant), baselines, skipped lines and notes, which tables each
unit serves, and the dry run's rows (``--plan-out``: what each unit does with each stage now, trained or reused from
where, its state, the split each task is read on). Machine-specific paths are replaced by
placeholders, so a snapshot taken on one machine compares with one taken on another."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

# The options the snapshots are taken with: two seeds (a seed-keyed cache shows), both labeled sizes, one corpus size,
# small batches so the fixtures' few examples fill them (as tests/reproduce/test_reproduce.py's SMALL, with --seeds 2).
SNAPSHOT_OPTIONS = ["--preset", "smoke", "--seeds", "2", "--max-steps", "2", "--set", "batch_size=8",
                    "--set", "max_length=16", "--set", "sbert-nli.batch_size=2", "--set", "sbert-stsb.batch_size=2",
                    "--set", "paser.synonym_ratio=0", "--labeled-sizes", "2,4", "--corpus-sizes", "16", "--allow-merged-runs"]
PAPERS = ("tsdae", "denosent", "paser", "thesis")
# Options added after the golden digests that change what a run does to the store, never the plan: left out of the
# snapshot while they have their default (RunOptions.reevaluate, issue 46).
NOT_PLAN = {"reevaluate": ()}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.name not in ("plan", "recipe") and NOT_PLAN.get(f.name, object()) != getattr(value, f.name)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def plan_snapshot(rp: Any, plan_rows: list[dict[str, Any]], places: dict[str, str]) -> dict[str, Any]:
    """The snapshot of a :class:`usebench.reproduce.build.ReproducePlan` and its dry run's rows (the ``--plan-out``
    JSON); ``places`` maps machine paths to placeholders (longest first)."""
    snap = {"runs": _plain(rp.runs), "plans": _plain(rp.plans), "unit_tables": _plain(rp.unit_tables),
            "inputs": _plain(rp.inputs), "plan_rows": plan_rows}
    text = json.dumps(snap, sort_keys=True, indent=0)
    for path, name in sorted(places.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(path, name)
    return json.loads(text)


def snapshot_digest(snap: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(snap, sort_keys=True).encode()).hexdigest()
