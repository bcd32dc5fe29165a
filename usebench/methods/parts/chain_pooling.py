"""The pooling of a supervised stage in a chain: the pooling of the checkpoint it starts from where that pooling needs
nothing trained (a stateless one), else its stateless part or the sentence-transformers default, with a note saying
so. The planner (usebench.plan.planner) applies it to every labeled stage whose pooling the user did not set, and the
report's pairing (usebench.report.pairing) reads a row's settings by the same rule.
"""
from __future__ import annotations

# Poolings a supervised stage can train and export without a head or prompt of its own.
STATELESS_POOLINGS = ("cls", "mean", "max", "last2avg", "first_last_avg")
# The stateless part of a pooling that carries trained modules (SimCSE's MLP on CLS).
STATELESS_PART = {"cls_mlp": "cls"}


def supervised_pooling(method: str, start_pooling: str | None, default: str, notes: list[str]) -> str:
    """The pooling of a supervised stage starting from a checkpoint with ``start_pooling`` (None: a plain
    backbone, whose sentence-transformers default is ``default``, mean)."""
    if start_pooling is None or start_pooling in STATELESS_POOLINGS:
        return start_pooling or default
    pooling = STATELESS_PART.get(start_pooling, default)
    note = (f"{method} after a checkpoint with {start_pooling} pooling trains and exports {pooling}: "
            f"{start_pooling} needs a head or prompt the supervised stage does not train "
            f"(--set {method}.pooling=... chooses another)")
    if note not in notes:
        notes.append(note)
    return pooling
