"""Whether a stored result still holds: the one rule behind every reuse, re-score, average and comparison.

A stored result of (run, task, split) holds when it is a well-formed record (the shape
:func:`usebench.store.records.make_record` writes, not edited since: its digest), has a finite main score equal to its
main metric, was scored under the task's current protocol (its ``version``) with every metric the task computes now,
on the data in the data root now, with the same scorer configuration and precision, on the full release unless partial
data were allowed, and over the same items: every item of the split, or the same `--limit` subsample (a quick
evaluation's result is never taken for a full one, nor a full one for it). :func:`stale_reason` says which of these
fails, in words, or None.

Every path asks it: the launchers' "already done" (usebench/plan/held_results.py ``finished_unit``, also for units
another process held), a running unit's evaluation, `bench eval` and the baseline rows (usebench/run/evaluation.py),
the Python API (through `bench eval`'s runner) and `bench check`. Reports ask the same of seed repeats among
themselves (:func:`seed_mismatch`): a cell never averages results of two task versions, data, scorers or training step
paths. A stale result is scored again from its finished checkpoint, never retrained.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.registry import TASKS
from usebench.store.records import DIGEST_KEY, config_hash, items_path, record_digest

# What make_record writes and every reader relies on, with the type each must have.
RECORD_SHAPE: dict[str, type | tuple[type, ...]] = {
    "run_id": str, "task": dict, "method": dict, "seed": int, "scores": dict, "main_metric": str,
    "main_score": (int, float), "config": dict, "config_hash": str, "scorer": dict}
# The scorer keys that change a number (a checkpoint's path, the device and batch size do not).
SCORER_KEYS = ("kind", "similarity", "dtype", "pooling", "max_length", "prompt")


@dataclass(frozen=True)
class Expected:
    """What a stored result of ``task``/``split`` must match to still hold."""

    task: str
    split: str
    version: str  # the task's protocol version now (tasks/base.py: bumped when the protocol or data change meaning)
    metrics: tuple[str, ...]  # every metric the task computes now
    data_sha256: str | None  # the data in the data root now; None: not there (nothing to compare with)
    config: Mapping[str, Any] | None = None  # the run's config (its hash is the record's); None: not compared
    precision: str | None = None  # the scorer's dtype ("float32"...); None: no precision to compare (BM25)
    allow_partial: bool = False  # a result on data that is not the release may stand
    limit: Mapping[str, Any] | None = None  # the --limit subsample asked for (n, seed, rule); None: every item


def expected_result(task: str, split: str, data_sha256: str | None, *, config: Mapping[str, Any] | None = None,
                    precision: str | None = None, allow_partial: bool = False,
                    limit: Mapping[str, Any] | None = None) -> Expected:
    """:class:`Expected` of a registered task (its version and metric names read from the registry)."""
    adapter = TASKS.get(task)
    return Expected(task, split, str(adapter.version), tuple(adapter.metric_names), data_sha256, config, precision,
                    allow_partial, limit)


def read_record(path: str | Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the record at ``path``, None) or (None, why it cannot be read)."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "no stored result"
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return None, f"the stored result is not valid JSON ({type(e).__name__})"
    return (record, None) if isinstance(record, dict) else (None, "the stored result is not a JSON object")


def invalid_reason(record: Mapping[str, Any]) -> str | None:
    """Why ``record`` is no valid result whatever it is compared with (shape, digest, main score), or None."""
    for key, kind in RECORD_SHAPE.items():
        value = record.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):  # no field of a record is a bool
            return f"the stored result is malformed ({key!r} missing or not {_kind_name(kind)})"
    for key in ("name", "split"):
        if not isinstance(record["task"].get(key), str):
            return f"the stored result is malformed (task.{key} missing)"
    stored = record.get(DIGEST_KEY)
    if stored is not None and stored != record_digest(record):
        return "the stored result was changed after it was written (its digest does not match)"
    main = record["main_score"]
    if not math.isfinite(main):
        return f"the stored result has a non-finite main score ({main!r})"
    if record["scores"].get(record["main_metric"]) != main:
        return f"the stored result's main score is not its {record['main_metric']} score"
    items = record.get("items")
    if items is not None and not (isinstance(items, dict) and isinstance(items.get("file"), str)
                                  and isinstance(items.get("sha256"), str)):
        return "the stored result is malformed ('items' is not an object naming a file and its sha256)"
    return None


def items_reason(record_path: str | Path, record: Mapping[str, Any]) -> str | None:
    """Why the per-item outcomes file the record at ``record_path`` names does not hold (missing, or not the
    bytes its sha256 says: a crash between writing the items and the record, or an edit), or None. A record that
    names no items file (every result stored before items were) has nothing to check."""
    named = record.get("items")
    if not isinstance(named, dict):
        return None
    path = items_path(record_path)
    if named.get("file") != path.name:
        return f"the stored result names the per-item file {named.get('file')!r}, not {path.name!r} beside it"
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return f"its per-item outcomes file {path.name} is missing"
    if digest != named.get("sha256"):
        return (f"its per-item outcomes file {path.name} is not the one the record names (sha256 {digest[:12]}... "
                f"on disk, {str(named.get('sha256'))[:12]}... recorded)")
    return None


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({"str": "a string", "dict": "an object", "int": "an integer", "float": "a number"}[k.__name__]
                       for k in kinds)


def stale_reason(record: Mapping[str, Any] | None, expected: Expected) -> str | None:
    """Why ``record`` does not hold for ``expected``, in words (None: it holds). None as ``record``: there is
    no stored result."""
    stored = stored_reason(record, expected.task, expected.split, expected.config)
    if stored is not None or record is None:
        return stored
    task = record["task"]
    version = str(task.get("version", "1"))  # records name the version since the first schema; "1" was the first
    if version != expected.version:
        return f"the task's protocol changed (task version {version} when stored, {expected.version} now)"
    lacking = [m for m in expected.metrics if m not in record["scores"]]
    if lacking:
        return f"the stored result lacks {', '.join(lacking)} (task version {expected.version})"
    return _setting_reason(record, expected)


def stored_reason(record: Mapping[str, Any] | None, task: str, split: str,
                  config: Mapping[str, Any] | None = None) -> str | None:
    """The part of :func:`stale_reason` that needs neither the task adapters nor the data root (`bench status`
    reads the store alone, without importing torch): a record is there, well-formed, not edited, of ``task``/
    ``split`` and (``config`` given) of that configuration."""
    if record is None:
        return "no stored result"
    bad = invalid_reason(record)
    if bad:
        return bad
    if (record["task"]["name"], record["task"]["split"]) != (task, split):
        return f"the stored result is of {record['task']['name']}/{record['task']['split']}, not {task}/{split}"
    if config is not None and record["config_hash"] != config_hash(dict(config)):
        return "the stored result was made with another configuration"
    return None


def _setting_reason(record: Mapping[str, Any], expected: Expected) -> str | None:
    """The data, precision and partial-data parts of :func:`stale_reason`."""
    stored_sha = record["task"].get("data_sha256")
    if expected.data_sha256 is not None and stored_sha != expected.data_sha256:
        return (f"the task's data changed (sha256 {str(stored_sha)[:12]}... when stored, "
                f"{expected.data_sha256[:12]}... now)")
    stored_precision = record["scorer"].get("dtype")
    if expected.precision is not None and stored_precision != expected.precision:
        return f"the stored result was computed in {stored_precision}, this run computes in {expected.precision}"
    if record["task"].get("partial") and not expected.allow_partial:
        return "the stored result was made with --allow-partial on data that is not the release"
    return limit_reason(record["task"].get("limit"), expected.limit)


LIMIT_KEYS = ("n", "seed", "rule")  # what makes two --limit subsamples of one split the same items


def limit_text(limit: Mapping[str, Any] | None) -> str:
    """A result's items in words: "every item" or "a --limit subsample (200 per subset, seed 0)"."""
    if not limit:
        return "every item"
    return f"a --limit subsample ({limit.get('n')} per subset, seed {limit.get('seed')})"


def limit_reason(stored: Any, expected: Mapping[str, Any] | None) -> str | None:
    """Why a result over ``stored``'s items does not stand for one over ``expected``'s (None: the same items): a
    quick evaluation's subsample is never a full result, a full result never a subsample, two subsamples differ by
    their size, seed or rule."""
    have = {k: stored.get(k) for k in LIMIT_KEYS} if isinstance(stored, Mapping) else None
    want = {k: expected.get(k) for k in LIMIT_KEYS} if expected else None
    if have == want:
        return None
    return f"the stored result is over {limit_text(have)}, this evaluation is over {limit_text(want)}"


def gap_line(task: str, split: str, reason: str) -> str:
    """One line for a result a unit must score (again): ``missing result: stsb/test`` when none is stored, else
    ``stsb/test: <why it does not hold>`` (the plan, `bench status` and the run say it alike)."""
    return f"missing result: {task}/{split}" if reason == "no stored result" else f"{task}/{split}: {reason}"


def path_stale_reason(path: str | Path, expected: Expected) -> str | None:
    """:func:`stale_reason` of the record stored at ``path`` (absent or unreadable: the reason), and of the per-item
    file it names (:func:`items_reason`)."""
    record, unreadable = read_record(path)
    if record is None:
        return unreadable
    return stale_reason(record, expected) or items_reason(path, record)


# --- seed repeats among themselves (reports) ---------------------------------------------------------------------

def scorer_identity(record: Mapping[str, Any]) -> dict[str, Any]:
    """The scorer keys that change a number (:data:`SCORER_KEYS`)."""
    scorer = record.get("scorer") or {}
    return {k: scorer.get(k) for k in SCORER_KEYS if k in scorer}


def training_path(record: Mapping[str, Any]) -> tuple[tuple[bool, str], ...] | None:
    """Per trained stage: (fast path, precision: fp32, tf32, bf16 or fp16); None when the result records no step path
    (untrained, or written before the record existed). A stage exported before its checkpoint recorded one ran the
    reference path in fp32 (the fast path came later); one recorded before ``precision`` was says TF32 by its flag."""
    paths = (record.get("method") or {}).get("step_path")
    if paths is None:
        return None
    return tuple((bool((p or {}).get("fast")), _precision(p or {})) for p in paths)


def _precision(stage: Mapping[str, Any]) -> str:
    return str(stage.get("precision") or ("tf32" if stage.get("tf32") else "fp32"))


def seed_mismatch(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """Why two results are not repeats of one measurement beyond their configuration (task version, data,
    scorer, training step path and precision), in words naming both values, or None."""
    found = seed_mismatches(a, b)
    return f"the {found[0][0]} differ ({found[0][1]} vs {found[0][2]})" if found else None


def seed_mismatches(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Every (what, value in ``a``, value in ``b``) that differs, in the order :func:`seed_mismatch` checks."""
    ta, tb = a["task"], b["task"]
    checks: Sequence[tuple[str, Any, Any]] = (
        ("task versions", str(ta.get("version", "1")), str(tb.get("version", "1"))),
        ("data", f"sha256 {str(ta.get('data_sha256'))[:12]}", f"sha256 {str(tb.get('data_sha256'))[:12]}"),
        ("scorers", scorer_identity(a), scorer_identity(b)),
        ("training step paths", path_text(training_path(a)), path_text(training_path(b))),
        ("evaluated items", limit_text(ta.get("limit")), limit_text(tb.get("limit"))),
    )
    out = []
    for what, x, y in checks:
        if what == "training step paths" and "not recorded" in (x, y):
            continue  # a result from before step paths were recorded: nothing to compare
        if x != y:
            out.append((what, json.dumps(x) if isinstance(x, dict) else x, json.dumps(y) if isinstance(y, dict) else y))
    return out


def path_text(stages: tuple[tuple[bool, str], ...] | None) -> str:
    """A training step path in words, per stage ("reference path", "fast path under TF32", "reference path in
    bf16")."""
    if stages is None:
        return "not recorded"
    return ", ".join(("fast path" if fast else "reference path") + _PRECISION_WORDS.get(precision, f" in {precision}")
                     for fast, precision in stages) or "no trained stage"


_PRECISION_WORDS = {"fp32": "", "tf32": " under TF32"}
