"""``usebench.train``: what `bench run` does, from Python: train methods (or chains) on each task's corpus or on a
corpus of the caller's, evaluate, and return the results as :func:`usebench.load_results`' frame.

It goes through `bench run`'s own steps (usebench/cli/run.py ``launch_prelude``, usebench/cli/grid_steps.py): the
same checks before anything trains, the same planner and run ids, the same reuse of finished units and resume of
interrupted ones (a kernel restarted mid-run resumes from the last train state), the same local launcher. So a unit
trained here is the unit `bench run` trains with the same options, and either one reuses the other's. Progress:
the training and encoding bars (widgets in Jupyter with the `notebook` extra) and the run's lines.

Every argument is checked at the call in Python's words (usebench/api/arguments.py); a unit that fails is raised as
:class:`UnitsFailedError` after the others ran, as `bench run` exits 1 after them.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from usebench.errors import BenchError

if TYPE_CHECKING:
    import pandas as pd

    from usebench.run.grid import RunOutcome


class UnitsFailedError(BenchError):
    """Some unit failed (or another process holds it); the others ran. ``failed``: (run id, error, log) each."""

    def __init__(self, message: str, failed: list[tuple[str, str, str]]):
        super().__init__(message)
        self.failed = failed


def train(methods: str | Iterable[str], tasks: str | Iterable[str], *, corpus: Any = None, model: str | None = None,
          preset: str | None = None, overrides: Mapping[str, Any] | Iterable[str] | None = None,
          seeds: int | Iterable[int] = 1, eval_tasks: str | Iterable[str] | None = None,
          results_dir: str | Path | None = None, data_root: str | Path | None = None, device: str | None = None,
          max_steps: int | None = None, corpus_size: int | None = None, setting: str | None = None,
          split: str | None = None, train_batch_size: int | None = None, eval_batch_size: int | None = None,
          force: bool = False, strict: bool = False, show_progress: bool = True) -> pd.DataFrame:
    """Train ``methods`` on the corpus of each of ``tasks`` (or on ``corpus``), evaluate, return the results.

    :param methods: method names or chains (``"tsdae"``, ``"mlm>simcse"``, ``["tsdae", "ct"]``), plus the
        untrained baselines ``base`` and ``bm25`` (`bench methods` lists them).
    :param tasks: tasks or groups whose corpora are trained on and which are evaluated (``"useb"``, ``"stsb"``).
    :param corpus: train on this instead of each task's corpus: a file (one sentence per line), a list of files
        (``Path`` objects, concatenated), ``"allnli"``, a list of sentences, or a Hugging Face ``datasets.Dataset``
        (its text column). Sentences in memory are written once, named by their content, to
        ``<results_dir>/.corpora/`` (the file a `bench run --corpus` reads to train the same units).
    :param model: the base model (an HF id, a directory, or ``"minilm"``, packaged and offline).
    :param preset: ``paper`` (the default: the papers' full budget), ``official``, ``smoke``, ...
    :param overrides: config values, as `--set`: ``{"lr": 1e-4, "simcse.temperature": 0.1}`` or
        ``["lr=1e-4"]``; typed and checked before anything trains.
    :param seeds: a count (seeds 0..N-1) or the seeds themselves (``[1, 7, 42]``).
    :param eval_tasks: more tasks to evaluate each trained model on (``"stsb"``).
    :param results_dir: the store (default ``results/``, as `bench run`); finished units in it are reused and
        interrupted ones resumed.
    :param data_root: the data root (default ``$BENCH_DATA``).
    :param device: ``cpu``, ``cuda``, ``cuda:N`` (default: the GPU if any).
    :param max_steps: cap every stage's optimizer steps.
    :param corpus_size: train on a fixed subsample of this many sentences.
    :param setting: the TSDAE paper's setups (``unsupervised``, ``adapt-nli-first``, ..., ``all``).
    :param split: the evaluation split (default ``test``).
    :param train_batch_size: examples per optimizer step of every stage (as ``overrides={"batch_size": N}``).
    :param eval_batch_size: texts per evaluation batch (default 64).
    :param force: train and evaluate finished units again.
    :param strict: missing data is an error instead of a skip.
    :param show_progress: the progress bars (training, encoding).
    :return: one row per stored metric of the results this run made or reused (:func:`usebench.load_results`'
        columns); ``frame.attrs``: ``skipped`` (what, why) and ``units`` (run id -> state and what each stage did:
        ``training``, ``resuming from its last train state``, ``reusing its finished checkpoint``, ...).
    """
    from usebench.api.arguments import reword
    from usebench.api.training_args import TrainCall

    try:
        return _train(TrainCall(methods, tasks, corpus, model, preset, overrides, seeds, eval_tasks, results_dir,
                                data_root, device, max_steps, corpus_size, setting, split, train_batch_size,
                                eval_batch_size, force, strict, show_progress))
    except BenchError as e:  # raised here, at the call, in Python's words
        raise reword(e).with_traceback(None) from e.__cause__


def _train(call: Any) -> pd.DataFrame:
    from usebench.api.evaluation import _quiet_tqdm
    from usebench.api.training_args import check_call, run_options
    from usebench.cli.grid_steps import nothing_done, plan_grid, run_planned, unfinished
    from usebench.cli.run import launch_prelude

    grid = check_call(call)
    launch = launch_prelude(grid, here=True)  # bench run's checks: batch sizes, device, the launcher
    opts = run_options(call, launch, grid)
    with _quiet_tqdm():
        outcome = run_planned(plan_grid(opts, launch, None), opts, launch)
    failed = unfinished(outcome)
    if failed:
        detail = [(u.run_id, str(u.error), str(u.log or u.run_dir)) for u in failed]
        raise UnitsFailedError(f"{len(failed)} unit(s) failed (the others ran; calling train again runs only the "
                               "failed and missing units): " + "; ".join(f"{r}: {e} (log: {g})" for r, e, g in detail),
                               detail)
    error = nothing_done(outcome)
    if error is not None:
        raise error
    return outcome_frame(outcome)


def outcome_frame(outcome: RunOutcome) -> pd.DataFrame:
    """The results of ``outcome`` (each once) as :func:`usebench.load_results`' frame, with its skips and units."""
    from usebench.api.results import results_frame

    seen = {r.path: r for results in outcome.cells.values() for r in results}
    frame = results_frame(seen[p] for p in sorted(seen)).reset_index(drop=True)
    frame.attrs["skipped"] = list(dict.fromkeys(outcome.skipped))
    frame.attrs["units"] = {u.run_id: {"state": u.state, "training": list(u.training)} for u in outcome.units}
    return frame


__all__ = ["UnitsFailedError", "train"]
