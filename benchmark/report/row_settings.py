"""Which setting a row of ours was run in, and which of a published row's settings it does not meet.

A published number may stand beside ours only when the run meets every setting the number assumes (DESIGN.md,
"Names are promises"). Each row of ``paper_reference.json`` records them under ``settings``:

- ``preset``: the preset name (or list of names) of our method that is the row's run; null for untrained rows;
- ``model``: the backbone (or, for an untrained row, the evaluated model);
- ``train_data``: ``"none"`` (no training), ``"in-domain"`` (the evaluated task's own training data),
  ``"file:<glob>"`` (a ``--corpus`` file whose name matches the glob, e.g. ``file:paraphrases.tsv`` for DenoSent's
  back-translated pairs), anything else = a corpus the suite cannot reproduce (never met);
- ``config``: config values that define the row (the hyperparameters its table varies), compared with the run's;
- ``precision``: the published run's training precision (``fp32``/``fp16``), compared with the run's ``amp``.

:func:`run_settings` reads what our rows ran with from their results' configs; :func:`unmet` lists, in words, what
a run misses of a published row's settings (empty: the two may be compared).
"""
from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchmark.report.rows import UNTRAINED, ResultIndex, RowKey

AMP_PRECISION = {"off": "fp32", "fp16": "fp16", "bf16": "bf16"}


@dataclass(frozen=True)
class RunSettings:
    """What one row's results were run with (every result of the row: a set per setting)."""

    model: str
    trained: bool
    presets: frozenset[str]
    train_data: frozenset[str]  # "none", "in-domain", or the corpus label ("file:<name>", a task's name)
    precision: frozenset[str]
    configs: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)  # the row method's stage configs


def _stages(config: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The trained stages of a result's config: [{method, preset, config}], one for a single method."""
    if isinstance(config.get("stages"), list):
        return [s for s in config["stages"] if isinstance(s, dict)]
    return [config] if isinstance(config.get("config"), dict) else []


def _row_stages(record: Mapping[str, Any], method: str) -> list[Mapping[str, Any]]:
    """The stages that train the row's method (the last stage for rows named after a supervised stage)."""
    stages = _stages(record.get("config") or {})
    own = [s for s in stages if s.get("method") == method]
    return own or stages[-1:]


def _precision(stage: Mapping[str, Any], record: Mapping[str, Any]) -> str:
    amp = (stage.get("config") or {}).get("amp")
    if amp == "auto":  # results written before presets named their precision: bf16 on a GPU, fp32 on the CPU
        device = str((record.get("scorer") or {}).get("device", ""))
        return "fp32" if device.startswith("cpu") else "bf16 (amp=auto on a GPU)"
    return AMP_PRECISION.get(str(amp), "not recorded")


def _train_data(record: Mapping[str, Any]) -> str:
    label = str(record["method"].get("train_corpus") or "")
    task = str(record["task"]["name"])
    if label and (label == task or label.startswith(task + ":") or label.startswith(task + "[")):
        return "in-domain"
    return label or "not recorded"


def run_settings(index: ResultIndex) -> dict[RowKey, RunSettings]:
    """Every row's settings, read from its results."""
    out = {}
    for key, cells in index.rows.items():
        records = [r.record for results in cells.values() for r in results]
        if key.method in UNTRAINED:
            out[key] = RunSettings(key.model, False, frozenset(), frozenset({"none"}), frozenset())
            continue
        stages = [(s, r) for r in records for s in _row_stages(r, key.method)]
        out[key] = RunSettings(  # a result without stage configs records no preset or precision: never met
            key.model, True, frozenset(str(s.get("preset") or "not recorded") for s, _ in stages) or
            frozenset({"not recorded"}), frozenset(_train_data(r) for r in records),
            frozenset(_precision(s, r) for s, r in stages) or frozenset({"not recorded"}),
            tuple(s.get("config") or {} for s, _ in stages))
    return out


def same_model(ours: str, ref: str | None) -> bool:
    """Our model names the reference's (an HF id, or a local path ending in it)."""
    if not ref or not ours:
        return False
    ours = ours.rstrip("/")
    return ours == ref or ours.endswith("/" + ref) or ours.rsplit("/", 1)[-1] == ref.rsplit("/", 1)[-1]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _shown(values: Iterable[Any]) -> str:
    return "/".join(sorted(str(v) for v in values)) or "none"


def _data_met(want: str, have: frozenset[str]) -> bool:
    if want in ("none", "in-domain"):
        return have == {want}
    if want.startswith("file:"):
        pattern = want[len("file:"):]
        return bool(have) and all(h.startswith("file:") and all(fnmatch.fnmatch(part, pattern) for part in
                                                                h[len("file:"):].split("+")) for h in have)
    return False  # a corpus the suite cannot reproduce


def unmet(settings: Mapping[str, Any] | None, run: RunSettings) -> list[str]:
    """What ``run`` misses of a published row's ``settings``, one phrase each (empty: it meets them all)."""
    if not settings:
        return ["the published row records no settings"]
    gaps = []
    if settings.get("model") and not same_model(run.model, settings["model"]):
        gaps.append(f"backbone {settings['model']} (ours: {run.model})")
    want_data = settings.get("train_data")
    if want_data and not _data_met(str(want_data), run.train_data):
        gaps.append(f"training data {want_data} (ours: {_shown(run.train_data)})")
    presets = settings.get("preset")
    allowed = {presets} if isinstance(presets, str) else set(presets or ())
    if allowed and not run.presets <= allowed:
        gaps.append(f"preset {'/'.join(sorted(allowed))} (ours: {_shown(run.presets)})")
    for name, want in (settings.get("config") or {}).items():
        have = [c.get(name, "not recorded") for c in run.configs] or ["not recorded"]
        if not all(_same(h, want) for h in have):
            gaps.append(f"{name}={want} (ours: {_shown(set(map(str, have)))})")
    precision = settings.get("precision")
    if precision and run.trained and run.precision != {precision}:
        gaps.append(f"precision {precision} (ours: {_shown(run.precision)})")
    return gaps
