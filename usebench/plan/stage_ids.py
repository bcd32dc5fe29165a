"""A stage's identity and the home it gets in the store, decided when the plan is built (nothing trained).

A stage's identity is (method, preset + config, training data, seed, the stage it starts from): the dict
:func:`stage_identity` builds, whose hash names it. A stage that is not a single-method unit lives in
``.stages/<method>__<id12>__s<seed>/`` (:func:`shared_home`); how stages are trained once and reused is
:mod:`usebench.run.stages`.
"""
from __future__ import annotations

from typing import Any

from usebench.store import config_hash

STAGES_HOME = ".stages"


def stage_identity(method: str, preset: str, config: dict[str, Any], data: dict[str, Any], seed: int,
                   parent: str | None) -> dict[str, Any]:
    """What makes two stages the same training: ``config["model"]`` names the backbone of a first stage and
    ``stage:<parent id>`` for a stage that starts from another one."""
    config = {**config, "model": f"stage:{parent}"} if parent else config
    return {"method": method, "preset": preset, "config": config, "data": data, "seed": seed}


def stage_id(identity: dict[str, Any]) -> str:
    return config_hash(identity)


def shared_home(method: str, identity: dict[str, Any], seed: int) -> str:
    """``.stages/<method>__<id12>__s<seed>``: the home of a stage that is not a single-method unit."""
    return f"{STAGES_HOME}/{method}__{stage_id(identity)[:12]}__s{seed}"
