"""The one writer of result records: `bench eval` (and the API, the baselines and `bench check` through it) and
every run unit score a task and store its result here, under one rule.

:func:`score_and_store` evaluates one task on one split, builds the record, saves it with its per-item file and
calls the hooks that follow a stored result (the checkpoint's model card, the unit's trackers). A result that is
no finite number (a NaN or infinite main score, non-finite embeddings: :class:`~usebench.errors.NonFiniteScoreError`)
fails its task: nothing is stored for it, the caller's other tasks go on, and the command (or the unit) fails once
they have run, naming it. Missing data are the caller's to decide before it asks (skipped, or an error with
``--strict``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.errors import NonFiniteScoreError
from usebench.eval.evaluate import Evaluation, evaluate, items_bytes, to_record
from usebench.eval.scorer import Scorer
from usebench.eval.subsample import Limit
from usebench.run.result_hooks import result_saved
from usebench.store.files import stored_form
from usebench.store.records import save_result


@dataclass(frozen=True)
class Scored:
    """One task scored: its evaluation, record and path as stored; or, with ``failed``, why nothing was stored."""

    task: str
    split: str
    evaluation: Evaluation | None = None
    record: dict[str, Any] | None = None
    path: Path | None = None
    failed: str | None = None  # a non-finite result: the error's message


def score_and_store(task: str, split: str, scorer: Scorer, data_root: Path, results_dir: Path, *, run: str,
                    method: dict[str, Any], seed: int, config: dict[str, Any], allow_partial: bool = False,
                    limit: Limit | None = None) -> Scored:
    """Evaluate ``task``/``split`` with ``scorer`` and store its result in ``results_dir`` under run id ``run``
    (``method``: what the record says of the model; ``config``: the run's configuration, hashed into the record).
    A non-finite result returns :class:`Scored` with ``failed`` and stores nothing."""
    try:
        ev = evaluate(task, scorer, split, data_root, allow_partial=allow_partial, limit=limit)
        items = items_bytes(ev)
        record = stored_form(to_record(ev, run=run, method=method, seed=seed, scorer=scorer, config=config,
                                       items=items))
        path = save_result(results_dir, record, items)
    except NonFiniteScoreError as e:
        return Scored(task, split, failed=str(e))
    result_saved(results_dir, run, task, split, record)  # the checkpoint's model card, the unit's trackers
    return Scored(task, split, ev, record, path)


def failed_tasks_error(failed: list[tuple[str, str]]) -> NonFiniteScoreError:
    """The error a unit fails with once its other tasks ran: each task whose result was not finite, with why."""
    return NonFiniteScoreError(f"{len(failed)} task(s) failed and stored nothing: "
                               + "; ".join(f"{task}: {reason}" for task, reason in failed))
