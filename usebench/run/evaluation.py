"""Evaluate a model on a list of tasks and store the results (the engine behind `bench eval`).

Before a model is loaded: the options are checked, the results directory must be writable, tasks without the
split or the data are set aside, and a stored result is reused only if it still holds (:mod:`usebench.store.validity`:
the task's version and metrics, the same configuration, precision and data, a valid record with a finite main
score); otherwise the line says why and the task is evaluated again.
The model is loaded only when some task is left to evaluate. ``log`` gets one line per task as it starts and
ends (task, split, items, seconds, main score), whether or not stdout is a terminal.

A quick evaluation (``EvalOptions.limit``: a seeded subsample of each subset's items, usebench/eval/subsample.py)
has its own run id (the subsample is part of its configuration, and its model slug says ``-limit<N>``): it never
overwrites a full result, and the validity rule never reuses one for the other.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.errors import MissingDataError
from usebench.eval.evaluate import Evaluation
from usebench.eval.scorer import DenseScorer, Scorer
from usebench.plan.eval_options import EvalOptions, describe_model, eval_run_id
from usebench.run.record_writer import score_and_store
from usebench.store import check_writable, result_path
from usebench.store.validity import expected_result, path_stale_reason

Log = Callable[[str], None]


@dataclass
class EvalOutcome:
    run_id: str
    split: str = "test"
    evaluations: list[Evaluation] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (task, reason)
    reused: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (task, reason): nothing stored for them
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # task -> its new record, as stored


def build_scorer(opts: EvalOptions) -> tuple[Scorer, dict, dict]:
    """The scorer for ``opts.model`` plus its method description and config (for the run id and records)."""
    from usebench.eval.bm25 import MODEL_NAMES, bm25_method

    if opts.model in MODEL_NAMES:
        return bm25_method(opts.model)
    if opts.model.startswith("wordvec:"):  # bag of words: `--model wordvec:PATH` (the paper's Avg. GloVe row)
        from usebench.eval.wordvec import WordVecEncoder

        method, config, _ = describe_model(opts)
        return DenseScorer(WordVecEncoder(opts.model.removeprefix("wordvec:"))), method, config
    from usebench.eval.encoder import load_encoder

    encoder = load_encoder(opts.model, pooling=opts.pooling, max_length=opts.max_length,
                           batch_size=opts.batch_size, device=opts.device,
                           cache_dir=str(opts.cache_dir) if opts.cache_dir else None, precision=opts.precision,
                           show_progress=opts.show_progress)
    method, config, _ = describe_model(opts)
    return DenseScorer(encoder), method, config


@dataclass(frozen=True)
class Prebuilt:
    """A scorer built by the caller (the Python API's in-memory encoders: a SentenceTransformer object or a
    function), with the method description and config its records carry; ``model`` names it in the run id."""

    scorer: Scorer
    method: dict[str, Any]
    config: dict[str, Any]
    model: str
    precision: str | None = None  # None: no stored precision to compare (nothing fingerprinted, never reused)


@dataclass(frozen=True)
class ReuseKey:
    """What a stored result must share with this evaluation to be reused (besides its run id and data hash)."""

    config: dict[str, Any]
    precision: str | None  # None: the scorer has no precision (BM25)
    allow_partial: bool = False
    limit: dict[str, Any] | None = None  # the subsample's config (usebench/eval/subsample.py), None: every item


def evaluate_model(opts: EvalOptions, task_spec: str, split: str, data_root: Path, results_dir: Path,
                   strict: bool = False, force: bool = False, seed: int = 0, log: Log | None = None,
                   prebuilt: Prebuilt | None = None) -> EvalOutcome:
    """Evaluate on every task of ``task_spec``; a task with missing data is skipped (or an error if strict).

    ``prebuilt`` (the Python API, usebench/api/evaluation.py) replaces the model that ``opts.model`` names: its scorer,
    method and config are used as they are; ``opts`` then only carries ``allow_partial`` and the ``limit``.
    """
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.tasks import expand_tasks

    say = log or (lambda _line: None)
    names = expand_tasks(task_spec)
    check_limit(names, opts, prebuilt is not None)
    check_writable(results_dir, "results directory", "--results-dir")
    if prebuilt is not None:
        method, config, precision, model = prebuilt.method, prebuilt.config, prebuilt.precision, prebuilt.model
    else:
        (method, config, precision), model = describe_model(opts), opts.model
    run, config = eval_run_id(method["name"], model, config, seed, opts.subsample)
    outcome = EvalOutcome(run_id=run, split=split)
    limit = None if opts.subsample is None else opts.subsample.config()
    todo = _plan(names, split, data_root, results_dir, outcome, ReuseKey(config, precision, opts.allow_partial, limit),
                 strict, force, say)
    if todo:
        scorer, method, _ = (prebuilt.scorer, method, config) if prebuilt is not None else build_scorer(opts)
        for i, name in enumerate(todo, 1):
            try:
                _evaluate_one(name, f"[{i}/{len(todo)}]", scorer, method, config, opts, split, data_root,
                              results_dir, seed, outcome, say)
            except MissingDataError as e:  # data found missing only at load (an MTEB dataset not in the HF cache)
                if strict:
                    raise
                outcome.skipped.append((name, str(e)))
                say(f"{name} ({split}): skipped: {e}")
    return outcome


def check_limit(names: list[str], opts: EvalOptions, prebuilt: bool = False) -> None:
    """A ``--limit`` on tasks that offer no quick evaluation, or with BM25, is refused before anything is loaded."""
    from usebench.errors import BenchValueError
    from usebench.eval.bm25 import MODEL_NAMES
    from usebench.registry import TASKS

    if opts.subsample is None:
        return
    if not prebuilt and opts.model in MODEL_NAMES:
        raise BenchValueError(f"--limit is not offered for {opts.model}: BM25 takes its statistics from the texts it "
                              "scores, so a subsample would change every item's score (and BM25 needs no quick "
                              "evaluation: it encodes nothing)")
    refused = [n for n in names if TASKS.get(n).limit_unit is None]
    if refused:
        raise BenchValueError(f"--limit is not offered for {', '.join(refused)}: a quick evaluation subsamples the "
                              "items of the pair, re-ranking and retrieval tasks whose per-item outcomes the suite "
                              "stores (not MTEB's own tasks or the BM25 rescoring wrappers); leave those tasks out "
                              "or evaluate them in full")


def _plan(names: list[str], split: str, data_root: Path, results_dir: Path, outcome: EvalOutcome,
          key: ReuseKey, strict: bool, force: bool, say: Log) -> list[str]:
    """The tasks left to evaluate; skips and reuses are recorded in ``outcome`` (and said once per task)."""
    from usebench.registry import TASKS

    todo = []
    for name in names:
        task = TASKS.get(name)
        if split not in task.splits and not strict:  # e.g. `--split dev` over a group that includes TwitterPara
            outcome.skipped.append((name, f"task {name!r} has no {split!r} split (it has: {', '.join(task.splits)})"))
            say(f"{name} ({split}): skipped: {outcome.skipped[-1][1]}")
            continue
        try:
            sha = task.data_sha256(data_root, split)
        except MissingDataError as e:
            if strict:
                raise
            outcome.skipped.append((name, str(e)))
            say(f"{name} ({split}): skipped: {e}")
            continue
        path = result_path(results_dir, outcome.run_id, name, split)
        if path.is_file() and not force:
            expected = expected_result(name, split, sha, config=key.config, precision=key.precision,
                                       allow_partial=key.allow_partial, limit=key.limit)
            reason = path_stale_reason(path, expected)
            if reason is None:
                outcome.reused.append(name)
                say(f"{name} ({split}): reused {path} (same model, configuration and data; --force re-runs)")
                continue
            say(f"{name} ({split}): not reusing {path}: {reason}; evaluating again")
        todo.append(name)
    return todo


def _evaluate_one(name: str, counter: str, scorer: Scorer, method: dict[str, Any], config: dict[str, Any],
                  opts: EvalOptions, split: str, data_root: Path, results_dir: Path, seed: int,
                  outcome: EvalOutcome, say: Log) -> None:
    """Evaluate and store one task (:func:`usebench.run.record_writer.score_and_store`); a non-finite result fails
    the task (nothing stored) and the others go on."""
    from usebench.registry import TASKS

    say(f"{counter} {name} ({split}): evaluating ...")
    t0 = time.perf_counter()
    scored = score_and_store(name, split, scorer, data_root, results_dir, run=outcome.run_id, method=method, seed=seed,
                             config=config, allow_partial=opts.allow_partial, limit=opts.subsample)
    if scored.failed is not None:
        outcome.failed.append((name, scored.failed))
        say(f"{counter} {name} ({split}): FAILED: {scored.failed}")
        return
    ev = scored.evaluation
    outcome.evaluations.append(ev)
    outcome.records[name] = scored.record
    unit = "pairs" if TASKS.get(name).family == "pairs" else "queries"
    partial = "  [partial data: --allow-partial]" if ev.partial else ""
    limited = (f" (--limit {ev.limit['n']} per subset, seed {ev.limit['seed']}: {ev.limit['items']:,} of "
               f"{ev.limit['of']:,} items)") if ev.limit else ""
    say(f"{counter} {name} ({split}): {ev.n_queries} {unit}{limited}, {time.perf_counter() - t0:.1f} s, "
        f"{ev.main_metric} {ev.main_score * 100:.2f}{partial}")


def nothing_evaluated_reason(outcome: EvalOutcome, n_tasks: int) -> str | None:
    """Why a `bench eval` that evaluated and reused nothing did nothing (None when it did something)."""
    if outcome.evaluations or outcome.reused:
        return None
    if outcome.failed:
        return f"all {len(outcome.failed)} evaluated task(s) failed: {outcome.failed[0][1]}"
    return f"nothing was evaluated: all {n_tasks} task(s) were skipped ({outcome.skipped[0][1]})" \
        if outcome.skipped else "nothing was evaluated"


def raise_unless_done(outcome: EvalOutcome, n_tasks: int, failure_detail: str) -> None:
    """The exit rule of `bench eval` and ``usebench.evaluate``: nothing done is a :class:`NothingDoneError` (a
    failure behind it: :class:`BenchError`), and any failed task is a :class:`BenchError` after the others ran.
    ``failure_detail``: what follows the failed tasks' count in that error."""
    from usebench.errors import BenchError, NothingDoneError

    reason = nothing_evaluated_reason(outcome, n_tasks)
    if reason:
        raise NothingDoneError(reason) if not outcome.failed else BenchError(reason)
    if outcome.failed:
        raise BenchError(f"{len(outcome.failed)} task(s) failed and stored nothing: {failure_detail}")


__all__ = ["EvalOutcome", "Prebuilt", "ReuseKey", "build_scorer", "check_limit", "evaluate_model",
           "nothing_evaluated_reason", "raise_unless_done"]
