"""An in-memory model's results into a store without a silent overwrite.

``usebench.evaluate`` runs an in-memory model into a staging store first. With ``reuse=True`` the staging store
starts with the target store's records of the same run (same identity, hence the same run id), so the runner
reuses those whose configuration and data match and encodes nothing for them. Afterwards :func:`publish`
writes the new records, as the runner built them, into the target store, unless one of them would replace a record of the same identity,
task, split and data whose scores differ: then nothing is written and :class:`ResultConflictError` says which
results differ and what to do (``overwrite=True``, ``reuse=True``, another ``name`` or ``revision``).
"""
from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

from usebench.errors import BenchError
from usebench.store import items_path, read_json, result_path, write_bytes_atomic, write_json_atomic

# Two scores closer than this are one result (float noise of another device or batch order); a changed model
# moves scores by far more.
SAME_SCORE_TOL = 1e-6


class ResultConflictError(BenchError):
    """A new result differs from the one stored under the same identity; nothing was written."""


def seed_staging(target: Path, staging: Path, run: str) -> None:
    """Copy the target store's result records of ``run`` (and their per-item files) into ``staging`` (for the
    runner to reuse)."""
    source = target / run
    if source.is_dir():
        for path in source.glob("*/*.json"):
            dest = staging / run / path.parent.name / path.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            if items_path(path).is_file():
                shutil.copyfile(items_path(path), items_path(dest))
            shutil.copyfile(path, dest)


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The scores (top-level and per subset) of ``new`` that differ from ``old`` beyond float noise."""
    def flat(record: dict[str, Any]) -> dict[str, float]:
        out = {m: v for m, v in (record.get("scores") or {}).items()}
        for subset, scores in (record.get("subsets") or {}).items():
            out.update({f"{subset}/{m}": v for m, v in scores.items()})
        return out

    a, b = flat(old), flat(new)
    return [k for k in sorted(set(a) | set(b))
            if k not in a or k not in b or not math.isclose(float(a[k]), float(b[k]), rel_tol=0, abs_tol=SAME_SCORE_TOL)]


def publish(records: list[dict[str, Any]], target: Path, overwrite: bool, staging: Path | None = None) -> list[str]:
    """Write the newly evaluated ``records`` (of one run, as the staging store holds them) into ``target``, each
    with the per-item file it names (read from ``staging``, written before the record); returns the tasks whose
    stored record (of other data) was replaced. A record of the same data with other scores is a conflict:
    :class:`ResultConflictError` unless ``overwrite``, and then nothing is written."""
    conflicts, replaced = [], []
    for new in records:
        run, task, split = new["run_id"], new["task"]["name"], new["task"]["split"]
        old = read_json(result_path(target, run, task, split))  # unreadable: nothing to protect, the new one replaces it
        if old is None:
            continue
        if old.get("task", {}).get("data_sha256") != new["task"].get("data_sha256"):
            replaced.append(task)
        elif differences(old, new):
            conflicts.append(f"{task} ({split}): {new['main_metric']} {old.get('main_score')!r} stored, "
                             f"{new['main_score']!r} now")
    if conflicts and not overwrite:
        raise ResultConflictError(
            f"a different result is already stored under this model's identity (run {run} in {target}): "
            f"{'; '.join(conflicts)}. Nothing was written. Pass overwrite=True to replace it, reuse=True to get the "
            "stored result back without encoding, or another name= / revision= for the other model")
    for record in records:
        where = (record["run_id"], record["task"]["name"], record["task"]["split"])
        dest = result_path(target, *where)
        if record.get("items") and staging is not None:
            write_bytes_atomic(items_path(dest), items_path(result_path(staging, *where)).read_bytes())
        elif not record.get("items"):
            items_path(dest).unlink(missing_ok=True)  # an older result's items: no part of this record
        write_json_atomic(dest, record)
    return replaced
