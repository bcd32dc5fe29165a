"""Evaluate one scorer on one task split: load -> check the release -> (a `--limit` subsample) -> prepare (encode
unique texts once) -> score -> metrics. ``load_split`` and ``score_split`` are the two halves, for callers that score one split many
times (the sentence-transformers evaluator, usebench/st.py; the MTEB tasks, usebench/mteb/)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.errors import BenchError
from usebench.registry import TASKS
from usebench.store import ITEMS_SUFFIX, make_record
from usebench.eval.items import ItemTable, check_reproduces, items_sha256
from usebench.eval.scorer import Scorer
from usebench.eval.subsample import Limit, ids_sha256


@dataclass
class Evaluation:
    task: str
    split: str
    scores: dict[str, float]
    main_metric: str
    subsets: dict[str, dict[str, float]]
    n_queries: int
    data_sha256: str
    timings: dict[str, float] = field(default_factory=dict)
    release: dict[str, Any] = field(default_factory=dict)  # counts/checksums checked (usebench/tasks/release.py)
    items: ItemTable | None = None  # the per-item outcomes (usebench/eval/items.py); None: the task stores none
    limit: dict[str, Any] | None = None  # a --limit subsample (usebench/eval/subsample.py); None: every item

    @property
    def partial(self) -> bool:
        """Evaluated with --allow-partial on data that is not the full release."""
        return bool(self.release.get("partial"))

    @property
    def main_score(self) -> float:
        return self.scores[self.main_metric]


@dataclass(frozen=True, eq=False)
class LoadedSplit:
    """One task split read and checked once (``load_split``), ready to be scored by any number of scorers
    (``score_split``): a training run's evaluator scores the same split at every evaluation step."""

    task: Any  # the task adapter (usebench.tasks.base.Task; the engine sits below the adapters)
    split: str
    data: Any
    data_sha256: str
    release: dict[str, Any]
    load_s: float
    limit: dict[str, Any] | None = None  # the subsample the data was cut to, with the whole split's item count


def load_split(task_name: str, split: str, data_root: str | Path, allow_partial: bool = False,
               limit: Limit | None = None) -> LoadedSplit:
    """Read ``split`` of the task and refuse data that is not its release (unless ``allow_partial``: then the
    split records what differed), before anything is encoded; ``limit``: then cut it to that seeded subsample
    (the release is checked on the whole split first)."""
    task = TASKS.get(task_name)
    t0 = time.perf_counter()
    sha, per_file = task.data_digests(data_root, split)
    data = task.load(split, data_root)
    release = task.check_release(split, data, data_root, per_file, allow_partial)
    block = None
    if limit is not None:
        block = {**limit.config(), "unit": task.limit_unit, "of": task.n_items(data)}
        data = task.limited(data, limit)
    return LoadedSplit(task, split, data, sha, release, time.perf_counter() - t0, block)


def score_split(loaded: LoadedSplit, scorer: Scorer) -> Evaluation:
    """The task's protocol on a loaded split: encode its unique texts once, score, compute the metrics."""
    task, data = loaded.task, loaded.data
    t1 = time.perf_counter()
    scorer.prepare(task.texts(data))
    t2 = time.perf_counter()
    raw = task.score(data, scorer)
    try:
        out = task.outcomes(data, raw)
    except BenchError as e:
        if loaded.limit is None:
            raise
        raise BenchError(f"{task.name} ({loaded.split}): {e} on the --limit {loaded.limit['n']} subsample; a larger "
                         "--limit gives each subset enough items for its metrics") from e
    t3 = time.perf_counter()
    return Evaluation(
        task=task.name, split=loaded.split, scores=out.metrics, main_metric=task.main_metric,
        subsets=out.subsets, n_queries=task.n_queries(data), data_sha256=loaded.data_sha256,
        timings={"load_s": loaded.load_s, "encode_s": t2 - t1, "score_s": t3 - t2}, release=loaded.release,
        items=out.items, limit=_limit_block(loaded.limit, out.items),
    )


def _limit_block(limit: dict[str, Any] | None, items: ItemTable | None) -> dict[str, Any] | None:
    """The subsample's record block with the sha256 of its item ids (which items it holds)."""
    if limit is None:
        return None
    if items is None:  # every task that offers --limit stores its items: the ids are what the block promises
        raise BenchError(f"a --limit evaluation needs per-item outcomes to name its items ({limit})")
    return {**limit, "items": len(items), "ids_sha256": ids_sha256(items.keys())}


def evaluate(task_name: str, scorer: Scorer, split: str, data_root: str | Path,
             allow_partial: bool = False, limit: Limit | None = None) -> Evaluation:
    """Run the task's protocol with ``scorer`` on ``split`` of the data under ``data_root``.

    Data that is not the task's release (counts or recorded checksums differ) is refused before anything is
    encoded, unless ``allow_partial``; then the evaluation (and its result) records what differed. ``limit``:
    only that seeded subsample of the items is scored (and recorded as such).
    """
    return score_split(load_split(task_name, split, data_root, allow_partial, limit), scorer)


def items_bytes(ev: Evaluation) -> bytes | None:
    """The evaluation's items file (None: the task stores no per-item outcomes), checked to reproduce every metric
    it gives exactly as the task computed it before anything is stored."""
    if ev.items is None:
        return None
    check_reproduces(ev.items, ev.scores, f"{ev.task} ({ev.split})")
    return ev.items.to_bytes()


def to_record(ev: Evaluation, *, run: str, method: dict[str, Any], seed: int, scorer: Scorer,
              config: dict[str, Any], items: bytes | None = None) -> dict[str, Any]:
    """The result record of ``ev``; ``items``: its items file (:func:`items_bytes`), named with its sha256 in the
    record (so in its digest) and written beside it by :func:`usebench.store.save_result`."""
    task = TASKS.get(ev.task)
    return make_record(
        run=run,
        task={"name": ev.task, "split": ev.split, "group": task.group, "version": task.version,
              "data_sha256": ev.data_sha256, "n_queries": ev.n_queries, "release": ev.release,
              "partial": ev.partial, **({"limit": ev.limit} if ev.limit is not None else {})},
        method=method, seed=seed, scores=ev.scores, main_metric=ev.main_metric, subsets=ev.subsets,
        scorer=scorer.describe(), timings=ev.timings, config=config,
        items=None if items is None else {"file": f"{ev.split}{ITEMS_SUFFIX}", "sha256": items_sha256(items),
                                          "n": len(ev.items), "bytes": len(items)},
    )
