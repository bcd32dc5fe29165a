"""The laptop recipe's units as its store holds them: each run directory of the domain-adaptation setting with its
row, seed, stage home (``log.jsonl``, ``checkpoint/method.json``) and ``usage.json``; read by the page's sections
(usebench/report/laptop.py)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.stats.table_rows import METHOD_ORDER, RowKey, row_key
from usebench.errors import BenchError
from usebench.store import StoredResult, read_json, read_json_lines

SETTING = "adapt-nli-first"


@dataclass(frozen=True)
class Unit:
    """A unit of the recipe: its run directory, row, method, seed, and its (last) stage's home."""

    run_dir: Path
    key: RowKey
    method: str
    seed: int
    home: Path

    def log(self) -> list[dict[str, Any]]:
        """The stage's ``log.jsonl`` lines ([] when it has none: a step-0 unit, a reused stage)."""
        return read_json_lines(self.home / "log.jsonl")

    def checkpoint_meta(self) -> dict[str, Any]:
        return read_json(self.home / "checkpoint" / "method.json", {})

    def steps(self) -> int | None:
        """The steps its stage trained (``steps_trained`` where a dev selection kept an earlier checkpoint)."""
        meta = self.checkpoint_meta()
        found = meta.get("steps_trained", meta.get("steps"))
        return int(found) if found is not None else None

    def attempts(self) -> list[dict[str, Any]]:
        """``usage.json``'s attempts ([] without one)."""
        attempts = (read_json(self.run_dir / "usage.json") or {}).get("attempts")
        return attempts if isinstance(attempts, list) else []


def recipe_units(results: Sequence[StoredResult]) -> list[Unit]:
    """Every unit of the recipe in the store (trained, step-0 and second-pooling units alike), in the paper's
    method order."""
    out: dict[Path, Unit] = {}
    for r in results:
        run_dir = r.path.parent.parent
        if run_dir in out or r.record["method"].get("setting") != SETTING:
            continue
        stages = read_json(run_dir / "stages.json")
        if not stages:  # a record without its unit's stages.json is no unit of the recipe's page
            raise BenchError(f"{run_dir / 'stages.json'}: missing or unreadable (expected the unit's stage list)")
        home = run_dir.parent / stages[-1]["home"]
        out[run_dir] = Unit(run_dir, row_key(r.record), str(stages[-1]["method"]), int(r.record["seed"]), home)
    return sorted(out.values(), key=lambda u: (order(u.method), u.key.sort_key(), u.seed))


def order(method: str) -> int:
    return METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER)


def by_row(units: list[Unit]) -> dict[RowKey, list[Unit]]:
    """Units grouped by their table row, in page order."""
    out: dict[RowKey, list[Unit]] = {}
    for u in units:
        out.setdefault(u.key, []).append(u)
    return out
