"""A stage's id and the home it gets in the store: the names the planner gives, the run trains in and `bench
status` reads (the identity a stage id hashes is :func:`usebench.plan.stage_identity.stage_identity`)."""
from __future__ import annotations

from typing import Any

from usebench.store.records import config_hash

STAGES_HOME = ".stages"


def stage_id(identity: dict[str, Any]) -> str:
    return config_hash(identity)


def shared_home(method: str, identity: dict[str, Any], seed: int) -> str:
    """``.stages/<method>__<id12>__s<seed>``: the home of a stage that is not a single-method unit."""
    return f"{STAGES_HOME}/{method}__{stage_id(identity)[:12]}__s{seed}"
