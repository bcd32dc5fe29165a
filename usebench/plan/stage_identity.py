"""A stage's identity, decided when the plan is built (nothing trained).

A stage's identity is (method, preset + config, training data, seed, the stage it starts from): the dict
:func:`stage_identity` builds, whose hash names it (:func:`usebench.store.stage_ids.stage_id`). A stage that is not
a single-method unit lives in ``.stages/<method>__<id12>__s<seed>/`` (:func:`usebench.store.stage_ids.shared_home`);
how stages are trained once and reused is :mod:`usebench.run.stages`.
"""
from __future__ import annotations

from typing import Any

from usebench.train.config import BOOKKEEPING_KEYS, without_neutral_later_keys


def identity_config(method: Any, preset: str, config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (a stage's resolved config) as its identity holds it: the bookkeeping keys (logging and checkpoint
    cadence, :data:`usebench.train.config.BOOKKEEPING_KEYS`) at ``preset``'s values, whatever the user set, so they
    never change a run id or stage id; with the preset's own values the identity is the one stored before. The keys
    configs gained later (:data:`usebench.train.config.LATER_KEYS`) are left out at their neutral values, for the same
    reason."""
    import dataclasses

    defaults = {f.name: f.default for f in dataclasses.fields(method.Config) if f.name in BOOKKEEPING_KEYS}
    preset_values = {**defaults, **{k: v for k, v in method.presets.get(preset, {}).items() if k in defaults}}
    held = {**config, **{k: v for k, v in preset_values.items() if k in config}}
    return without_neutral_later_keys(held)


def stage_identity(method: str, preset: str, config: dict[str, Any], data: dict[str, Any], seed: int,
                   parent: str | None) -> dict[str, Any]:
    """What makes two stages the same training: ``config["model"]`` names the backbone of a first stage and
    ``stage:<parent id>`` for a stage that starts from another one."""
    config = {**config, "model": f"stage:{parent}"} if parent else config
    return {"method": method, "preset": preset, "config": config, "data": data, "seed": seed}
