"""``usebench.evaluate``: what `bench eval` does, from Python, for a model name, a loaded SentenceTransformer
or any function from a list of strings to an array or tensor ``(n, d)``.

A model name goes through `bench eval`'s own runner (usebench/run/evaluation.py ``evaluate_model``): the same
release checks, embedding cache, reuse rules, run ids and result records. An in-memory model is wrapped in an
Encoder (usebench/encoders.py) and handed to the same runner as a pre-built scorer: same protocols, release
checks and records, recorded under ``name`` with a note that its weights are not fingerprinted; such a result
is never reused (the same name may hold other weights the next time), and it has no embedding cache.

Where the records go: ``results_dir`` when given (a store the reports and ``usebench.load_results`` read),
else a temporary store that is deleted when ``evaluate`` returns (the frame is all that is kept).
"""
from __future__ import annotations

import sys
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from usebench.errors import BenchError, NothingDoneError

if TYPE_CHECKING:
    import pandas as pd

    from usebench.run.evaluation import EvalOptions, EvalOutcome, Prebuilt


def evaluate(model: Any, tasks: str | Sequence[str], *, split: str = "test", data_root: str | Path | None = None,
             results_dir: str | Path | None = None, name: str | None = None, device: str | None = None,
             batch_size: int | None = None, pooling: str | None = None, show_progress: bool = True,
             max_length: int | None = None, precision: str = "fp32", cache: bool = False,
             allow_partial: bool = False, strict: bool = False, force: bool = False) -> pd.DataFrame:
    """Evaluate ``model`` on ``tasks`` and return one row per metric (see usebench/frames.py).

    :param model: anything `bench eval --model` accepts (``"minilm"``, an HF id, a checkpoint directory,
        ``"bm25"``, ``"wordvec:PATH"``), a loaded ``SentenceTransformer``, or a callable
        ``fn(list[str]) -> array | tensor (n, d)``.
    :param tasks: task names or groups (``"useb"``, ``"sts"``), comma-separated or as a list.
    :param split: ``"test"`` or ``"dev"``.
    :param data_root: the data root (default ``$BENCH_DATA``).
    :param results_dir: the results store to write (and, for a model name, reuse); None: a temporary store,
        deleted on return.
    :param name: the name an in-memory model is recorded under (required for a callable; a SentenceTransformer
        defaults to its model card's base model, else the path it was loaded from, else its class name).
    :param device: ``cpu``, ``cuda``, ``cuda:N`` (a model name or a SentenceTransformer; default: the GPU if any).
    :param batch_size: texts per batch (default 64); for a callable, texts per call.
    :param pooling: a model name's pooling (``cls``, ``mean``, ...); an in-memory model pools itself.
    :param show_progress: progress bars (tqdm's auto: notebook widgets in Jupyter) and one line per task.
    :param max_length: truncate a model name's inputs to this many tokens.
    :param precision: ``fp32`` (default) or ``bf16`` autocast, for a model name.
    :param cache: cache a model name's embeddings on disk (``$BENCH_CACHE``), as ``bench eval --cache``.
    :param allow_partial: evaluate data that is not the full release (recorded in each result).
    :param strict: a task with missing data is an error instead of a skip (a warning).
    :param force: re-evaluate a model name even if the store holds a result for the same configuration.
    :return: a long DataFrame: task, split, subset ("" for the task's own metrics), metric, value (0-1), main
        (the task's main metric), run_id.
    """
    from usebench.paths import default_cache_dir, default_data_root
    from usebench.run.evaluation import EvalOptions

    spec = tasks if isinstance(tasks, str) else ",".join(tasks)
    root = Path(data_root or default_data_root()).expanduser()
    if not root.is_dir():
        raise NothingDoneError(f"data root {root} does not exist (pass data_root= or set $BENCH_DATA, or fetch the "
                               "data with `bench data download`); nothing was evaluated")
    if isinstance(model, (str, Path)):
        if name is not None:
            raise BenchError("name= names an in-memory model; a model given by name is recorded under that name")
        opts = EvalOptions(model=str(model), pooling=pooling, max_length=max_length, batch_size=batch_size or 64,
                           device=device, cache_dir=default_cache_dir() if cache else None, precision=precision,
                           allow_partial=allow_partial, show_progress=show_progress)
        prebuilt = None
    else:
        opts = EvalOptions(model="<in-memory>", allow_partial=allow_partial)
        prebuilt = in_memory(model, name=name, device=device, batch_size=batch_size, pooling=pooling,
                             show_progress=show_progress, max_length=max_length, precision=precision, cache=cache)
        force = True  # nothing fingerprints its weights: a stored result of the same name may be of other weights
    if results_dir is not None:
        return _run(opts, spec, split, root, Path(results_dir), strict, force, show_progress, prebuilt)
    with tempfile.TemporaryDirectory(prefix="usebench-results-") as tmp:
        return _run(opts, spec, split, root, Path(tmp), strict, force, show_progress, prebuilt)


def in_memory(model: Any, *, name: str | None, device: str | None, batch_size: int | None, pooling: str | None,
              show_progress: bool, max_length: int | None = None, precision: str = "fp32",
              cache: bool = False) -> Prebuilt:
    """A SentenceTransformer or a callable as the runner's pre-built scorer, method and config."""
    from usebench.eval.scorer import DenseScorer
    from usebench.run.evaluation import Prebuilt
    from usebench.encoders import (NOT_FINGERPRINTED, FunctionEncoder, is_sentence_transformer,
                                   sentence_transformer_encoder, sentence_transformer_name)

    for value, option in ((pooling, "pooling"), (max_length, "max_length"), (cache or None, "cache")):
        if value is not None:
            raise BenchError(f"{option}= applies to a model given by name; an in-memory model "
                             f"({type(model).__name__}) encodes as it is (set it on the model itself)")
    if precision != "fp32":
        raise BenchError(f"precision={precision!r} applies to a model given by name; an in-memory model computes "
                         "in whatever precision it is in")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise BenchError(f"name= must be a non-empty string, got {name!r}")
    if is_sentence_transformer(model):
        label = name or sentence_transformer_name(model)
        encoder = sentence_transformer_encoder(model, label, batch_size=batch_size, device=device,
                                               show_progress=show_progress)
        method = {"name": "base", "base_model": label, "pooling": _st_pooling(model),
                  "max_length": encoder.extra.get("max_length"), "sentence_encoder": True}
        source = "sentence-transformers"
    elif callable(model):
        if name is None:
            raise BenchError("name= is required for a callable model: it is what the results are recorded under "
                             "(e.g. usebench.evaluate(fn, 'useb', name='my-encoder'))")
        if device is not None:
            raise BenchError("device= does not apply to a callable model: it runs wherever it puts its tensors")
        label = name
        encoder = FunctionEncoder(model, label, batch_size=batch_size or 64, show_progress=show_progress)
        method = {"name": label, "base_model": label, "pooling": "", "max_length": None}
        source = "python-callable"
    else:
        raise BenchError(f"model: expected a model name (str), a SentenceTransformer or a callable "
                         f"list[str] -> (n, d), got {type(model).__name__}")
    method.update({"source": source, "weights_fingerprinted": False, "note": NOT_FINGERPRINTED})
    config = {"name": method["name"], "base_model": label, "source": source, "weights_fingerprinted": False}
    return Prebuilt(DenseScorer(encoder), method, config, model=label)


def _st_pooling(model: Any) -> str:
    """The pooling mode of a SentenceTransformer's Pooling module ("" when it has none): ``pooling_mode``
    (sentence-transformers 6) or ``get_pooling_mode_str()`` (earlier versions)."""
    for module in getattr(model, "_modules", {}).values():
        mode = getattr(module, "pooling_mode", None)
        if mode is None and callable(getattr(module, "get_pooling_mode_str", None)):
            mode = module.get_pooling_mode_str()
        if mode:
            return mode if isinstance(mode, str) else "+".join(map(str, mode))
    return ""


def _run(opts: EvalOptions, spec: str, split: str, root: Path, results: Path, strict: bool, force: bool,
         show_progress: bool, prebuilt: Prebuilt | None) -> pd.DataFrame:
    """`bench eval`'s runner, then the stored records of this run (new and reused) as a frame."""
    from usebench.run.evaluation import evaluate_model, raise_unless_done
    from usebench.tasks import expand_tasks

    log = _progress_log() if show_progress else None
    outcome = evaluate_model(opts, spec, split, root, results, strict=strict, force=force, log=log,
                             prebuilt=prebuilt)
    names = expand_tasks(spec)
    raise_unless_done(outcome, len(names), "; ".join(f"{t}: {why}" for t, why in outcome.failed))
    if outcome.skipped:
        warnings.warn(f"usebench.evaluate skipped {len(outcome.skipped)} task(s): "
                      + "; ".join(why if why.startswith(task) else f"{task}: {why}" for task, why in outcome.skipped),
                      stacklevel=3)
    frame = _frame(outcome, results, names)
    frame.attrs.update({"run_id": outcome.run_id, "skipped": list(outcome.skipped), "reused": list(outcome.reused)})
    return frame


def _frame(outcome: EvalOutcome, results: Path, names: list[str]) -> pd.DataFrame:
    """The records of the evaluated and reused tasks, in task order, read back from the store."""
    import json

    from usebench.store import result_path
    from usebench.frames import eval_frame

    done = {ev.task for ev in outcome.evaluations} | set(outcome.reused)
    tasks = [t for t in names if t in done]
    records = [json.loads(result_path(results, outcome.run_id, t, outcome.split).read_text(encoding="utf-8"))
               for t in tasks]
    return eval_frame(records)


def _progress_log() -> Callable[[str], None]:
    """The runner's per-task lines, written through tqdm so they do not break a progress bar."""
    from tqdm.auto import tqdm

    return lambda line: tqdm.write(line, file=sys.stderr)
