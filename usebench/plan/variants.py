"""What a planned unit's table row is named by: the data of the stage trained on its target, and its variant (how
its stages' resolved configs depart from their presets), decided by content, never by the options' names.

A variant lists every resolved key that differs from the preset as the planner resolves it for the same unit, so
``--set``, ``--max-steps`` and ``--preset`` all show ("paper + max_steps=10"), while the values the planner derives
(the backbone, a dev task "target", a supervised stage's inherited pooling, an encoder-decoder's own decoder)
never do: one experiment run on four targets stays one row.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from usebench.errors import ConfigError
from usebench.plan.specs import StageSpec
from usebench.train.config import BOOKKEEPING_KEYS, config_to_dict

TARGET = "target"  # a config's dev_task "target" means the unit's own target task


def target_dev(method: str, task: str, notes: list[str]) -> dict[str, Any]:
    """``dev_task=target``: early stopping on the target task's dev split, or none where it has no dev split."""
    from usebench.registry import TASKS

    if "dev" in TASKS.get(task).splits:
        return {"dev_task": task}
    note = (f"{method} on {task}: the task has no dev split, so no early stopping; the stage trains its whole "
            f"budget and the last checkpoint is evaluated (the preset selects on the target's dev split)")
    if note not in notes:
        notes.append(note)
    return {"dev_task": None, "dev_every": 0}


# Keys that never name a variant: the backbone and the labeled-set size are row fields of their own, and the
# validation file is identified by its content (dev_corpus_sha256), not by its path.
NOT_A_VARIANT = frozenset({"model", "labeled_size", "dev_corpus", *BOOKKEEPING_KEYS})  # bookkeeping: no new result


def stage_variant(method: Any, preset: str, cfg: Any, derived: dict[str, Any], task: str) -> str:
    """How ``cfg`` departs from ``preset`` as the planner resolves it for this unit: "paper + max_steps=10"
    (every resolved key that differs, whatever option changed it), the preset alone when it is not the method's
    default, "" for the default preset as is. Values the planner derives (the backbone, a dev task "target", a
    supervised stage's inherited pooling) are resolved the same way on both sides, so they never show."""
    base_values = dict(derived)
    try:
        base = method.config(preset, base_values)
        if base.dev_task == TARGET and "dev_task" not in base_values:
            base_values.update(target_dev(method.name, task, []))
            base = method.config(preset, base_values)
    except ConfigError:  # the preset is only valid with the user's values: compare with the preset's defaults
        base = method.config(preset, {})
    ours, theirs = config_to_dict(cfg), config_to_dict(base)
    diffs = [f"{k}={_shown_value(ours[k])}" for k in sorted(ours)
             if k not in NOT_A_VARIANT and ours.get(k) != theirs.get(k)]
    if diffs:
        return f"{preset} + {' '.join(diffs)}"
    return "" if preset == method.default_preset else preset


def _shown_value(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def with_eval_pooling(variant: str, pooling: str | None) -> str:
    """A unit's variant when its encoder is scored with another pooling than its method's (``--eval-pooling``):
    "laptop + eval_pooling=cls", so that the row says what it measures."""
    if not pooling:
        return variant
    return f"{variant} eval_pooling={pooling}" if " + " in variant else f"{variant or 'default'} + eval_pooling={pooling}"


def unit_variant(stages: Sequence[StageSpec]) -> str:
    """One label for a unit: the stages' variant when they share it (a chain trained with one preset and the
    same overrides), else each stage's own ("tsdae: smoke; sbert-nli: paper + lr=1e-05")."""
    variants = [s.variant for s in stages]
    if len(set(variants)) == 1:
        return variants[0]
    return "; ".join(f"{s.method}: {s.variant or 'default'}" for s in stages)


def target_corpus(stages: Sequence[StageSpec], task: str) -> str:
    """The data a unit's row is named by: the stage trained on the target's own data (its unlabeled sentences
    or a --corpus file, else its labeled set), never the NLI+STSb stages' data that every target shares."""
    for stage in reversed(stages):
        if stage.data["kind"] == "corpus":
            return str(stage.data["label"])
    for stage in reversed(stages):
        label = str(stage.data["label"])
        if label == task or label.startswith((task + ":", task + "[")):
            return label
    return str(stages[-1].data["label"])
