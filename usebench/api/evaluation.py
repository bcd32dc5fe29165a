"""``usebench.evaluate``: what `bench eval` does, from Python, for a model name, a loaded SentenceTransformer,
any object with ``.encode(list[str])`` or any function from a list of strings to an array or tensor ``(n, d)``.

A model name goes through `bench eval`'s own runner (usebench/run/evaluation.py ``evaluate_model``): the same
release checks, embedding cache, reuse rules, run ids and result records. An in-memory model is wrapped in an
Encoder (usebench/eval/encoder_adapter.py) and handed to the same runner as a pre-built scorer, one task at a time (so an
error names its task), filed under its identity (usebench/api/identity.py). Its records are written to a staging
store and then into ``results_dir`` without a silent overwrite (usebench/api/staging.py); ``reuse=True`` returns its
stored results without encoding.

Every argument is checked at the call (usebench/api/arguments.py); errors are raised from ``evaluate`` itself, in
Python's words, with the model's own exception as the cause where it raised.
"""
from __future__ import annotations

import sys
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from usebench.errors import BenchError, BenchTypeError, BenchValueError, NothingDoneError

if TYPE_CHECKING:
    import pandas as pd

    from usebench.plan.eval_options import EvalOptions

    from usebench.run.evaluation import EvalOutcome, Prebuilt

PRECISIONS = ("fp32", "bf16")


class DataRootError(NothingDoneError, FileNotFoundError):
    """The data root does not exist (also a ``FileNotFoundError``)."""


def evaluate(model: Any, tasks: Any, *, split: str = "test", data_root: str | Path | None = None,
             results_dir: str | Path | None = None, name: str | None = None, revision: str | None = None,
             device: str | None = None, batch_size: int | None = None, pooling: str | None = None,
             show_progress: bool = True, max_length: int | None = None, precision: str = "fp32",
             cache: bool = False, reuse: bool | None = None, overwrite: bool = False, allow_partial: bool = False,
             strict: bool = False, force: bool = False, limit: int | None = None,
             limit_seed: int = 0) -> pd.DataFrame:
    """Evaluate ``model`` on ``tasks`` and return one row per metric (see usebench/api/frames.py).

    :param model: anything `bench eval --model` accepts (``"minilm"``, an HF id, a checkpoint directory,
        ``"bm25"``, ``"wordvec:PATH"``), a loaded ``SentenceTransformer``, any object with
        ``.encode(list[str]) -> array`` (sentence-transformers' and MTEB's protocol), or a callable
        ``fn(list[str]) -> array | tensor (n, d)``. A bare ``transformers`` model is refused (pass its name).
    :param tasks: task names or groups (``"useb"``, ``"sts"``), comma-separated or as a list
        (``usebench.list_tasks()`` lists them).
    :param split: ``"test"`` or ``"dev"``.
    :param data_root: the data root (default ``$BENCH_DATA``).
    :param results_dir: the results store to write (and reuse from); None: a temporary store, deleted on return.
    :param name: the name an in-memory model is recorded under (required for a callable; a SentenceTransformer
        defaults to its model card's base model, else the path it was loaded from).
    :param revision: an in-memory model's version label: part of its identity (another revision is another
        model) and shown in the frame's ``revision`` column.
    :param device: ``cpu``, ``cuda``, ``cuda:N`` (a model name or a SentenceTransformer; default: the GPU if any).
    :param batch_size: texts per batch (default 64); for a callable, texts per call.
    :param pooling: a model name's pooling (``cls``, ``mean``, ...); an in-memory model pools itself.
    :param show_progress: progress bars (widgets in Jupyter with the `notebook` extra) and one line per task.
    :param max_length: truncate a model name's inputs to this many tokens.
    :param precision: ``fp32`` (default) or ``bf16`` autocast, for a model name.
    :param cache: cache embeddings on disk (``$BENCH_CACHE``), keyed by the model's identity and the text.
    :param reuse: return stored results of the same identity, configuration and data without encoding
        (default: True for a model name, as `bench eval`; False for an in-memory model). Needs ``results_dir``.
    :param overwrite: let an in-memory model's result replace a different one stored under the same identity
        (otherwise :class:`usebench.api.staging.ResultConflictError`, and nothing is written).
    :param allow_partial: evaluate data that is not the full release (recorded in each result).
    :param strict: a task with missing data is an error instead of a skip (a warning).
    :param force: the earlier spelling of ``reuse=False``.
    :param limit: a quick evaluation (`bench eval --limit`): a fixed, seeded subsample of at most this many items
        per subset (pairs, or queries with their candidates), filed apart and never reused as or paired with a full
        result; the frame gets ``ci_low``/``ci_high`` (95% bootstrap over the subsample) and ``attrs["limit"]``.
    :param limit_seed: which seeded subsample ``limit`` takes.
    :return: a long DataFrame: model, revision, task, split, subset ("" for the task's own metrics), metric,
        value (0-1), main (the task's main metric), run_id.
    """
    options = EvaluateOptions(split=split, data_root=data_root, results_dir=results_dir, name=name,
                              revision=revision, device=device, batch_size=batch_size, pooling=pooling,
                              show_progress=show_progress, max_length=max_length, precision=precision, cache=cache,
                              reuse=reuse, overwrite=overwrite, allow_partial=allow_partial, strict=strict, force=force,
                              limit=limit, limit_seed=limit_seed)
    try:
        frame = _evaluate(model, tasks, options)
    except BenchError as e:  # raised here, at the call: the engine's frames say nothing to the caller
        from usebench.api.arguments import reword

        raise reword(e).with_traceback(None) from e.__cause__
    if frame.attrs["skipped"]:
        warnings.warn(f"usebench.evaluate skipped {len(frame.attrs['skipped'])} task(s): " + "; ".join(
            why if why.startswith(task) else f"{task}: {why}" for task, why in frame.attrs["skipped"]), stacklevel=2)
    if frame.attrs["replaced"]:
        warnings.warn(f"usebench.evaluate replaced the stored results of {', '.join(frame.attrs['replaced'])}: they "
                      "were made on other data (another sha256)", stacklevel=2)
    return frame


@dataclass(frozen=True)
class EvaluateOptions:
    """:func:`evaluate`'s keywords as the caller gave them (see its docstring), in one object that the steps of an
    evaluation share; :meth:`checked` is the same with each value checked and normalised."""

    split: str = "test"
    data_root: str | Path | None = None
    results_dir: str | Path | None = None
    name: str | None = None
    revision: str | None = None
    device: str | None = None
    batch_size: int | None = None
    pooling: str | None = None
    show_progress: bool = True
    max_length: int | None = None
    precision: str = "fp32"
    cache: bool = False
    reuse: bool | None = None
    overwrite: bool = False
    allow_partial: bool = False
    strict: bool = False
    force: bool = False
    limit: int | None = None
    limit_seed: int = 0

    def checked(self, names: list[str]) -> EvaluateOptions:
        """The options checked for the tasks ``names``: a wrong type or value is a BenchError naming the keyword."""
        from usebench.api.arguments import check_count, check_device, check_limit, check_split, check_text

        split = check_split(self.split, names)
        batch_size, max_length = check_count(self.batch_size, "batch_size"), check_count(self.max_length, "max_length")
        name, revision = check_text(self.name, "name"), check_text(self.revision, "revision")
        if self.precision not in PRECISIONS:
            raise BenchValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, "
                                  f"got {self.precision!r}")
        if self.reuse and self.results_dir is None:
            raise BenchValueError("reuse=True reads stored results: pass the store as results_dir=")
        limit = check_limit(self.limit, self.limit_seed)
        root = _data_root(self.data_root)  # in this order: the first wrong keyword is the one reported
        return replace(self, split=split, batch_size=batch_size, max_length=max_length, name=name, revision=revision,
                       data_root=root, device=check_device(self.device), limit=limit)

    @property
    def results(self) -> Path | None:
        """The results store, None for a temporary one."""
        return None if self.results_dir is None else Path(self.results_dir).expanduser()


def _evaluate(model: Any, tasks: Any, options: EvaluateOptions) -> pd.DataFrame:
    from usebench.api.arguments import task_names
    from usebench.paths import default_cache_dir

    names = task_names(tasks)
    o = options.checked(names)
    if isinstance(model, (str, Path)):
        from usebench.plan.eval_options import EvalOptions

        if o.name is not None or o.revision is not None:
            raise BenchValueError("name= and revision= name an in-memory model; a model given by name is recorded "
                                  "under that name and its weights' fingerprint")
        opts = EvalOptions(model=str(model), pooling=o.pooling, max_length=o.max_length, batch_size=o.batch_size or 64,
                           device=o.device, cache_dir=default_cache_dir() if o.cache else None, precision=o.precision,
                           allow_partial=o.allow_partial, show_progress=o.show_progress, limit=o.limit,
                           limit_seed=o.limit_seed)
        keep = (o.reuse is not False) and not o.force
        return _stored(lambda store: _run_name(opts, names, o.split, o.data_root, store, o.strict, not keep,
                                               o.show_progress), o.results)
    prebuilt = in_memory(model, name=o.name, revision=o.revision, device=o.device, batch_size=o.batch_size,
                         pooling=o.pooling, show_progress=o.show_progress, max_length=o.max_length,
                         precision=o.precision, cache=o.cache)
    return _run_in_memory(prebuilt, names, o)


def _data_root(data_root: Any) -> Path:
    from usebench.paths import default_data_root

    if data_root is not None and not isinstance(data_root, (str, Path)):
        raise BenchTypeError(f"data_root must be a path, got {type(data_root).__name__} {data_root!r}")
    root = Path(data_root or default_data_root()).expanduser()
    if not root.is_dir():
        raise DataRootError(f"data root {root} does not exist (pass data_root= or set $BENCH_DATA; "
                            "`bench data download` fetches the data); nothing was evaluated")
    return root


def _stored(run: Callable[[Path], pd.DataFrame], results: Path | None) -> pd.DataFrame:
    """``run(store)`` on ``results``, or on a temporary store deleted on return."""
    if results is not None:
        return run(results)
    with tempfile.TemporaryDirectory(prefix="usebench-results-") as tmp:
        return run(Path(tmp))


def in_memory(model: Any, *, name: str | None, device: str | None, batch_size: int | None, pooling: str | None,
              show_progress: bool, max_length: int | None = None, precision: str = "fp32", cache: bool = False,
              revision: str | None = None) -> Prebuilt:
    """A SentenceTransformer, an ``.encode`` object or a callable as the runner's pre-built scorer, with the
    method and config (its identity) that its records carry."""
    from usebench.eval.scorer import DenseScorer
    from usebench.run.evaluation import Prebuilt

    for value, option in ((pooling, "pooling"), (max_length, "max_length")):
        if value is not None:
            raise BenchValueError(f"{option}= applies to a model given by name; an in-memory model "
                                  f"({type(model).__name__}) encodes as it is (set it on the model itself)")
    if precision != "fp32":
        raise BenchValueError(f"precision={precision!r} applies to a model given by name; an in-memory model "
                              "computes in whatever precision it is in")
    encoder, method, identity = _encoder(model, name, revision, device, batch_size, show_progress)
    if cache:
        from usebench.eval.cache import EmbeddingCache
        from usebench.paths import default_cache_dir

        encoder.cache = EmbeddingCache(default_cache_dir(), f"in-memory-{identity['hash'][:32]}")
    label, source = method["base_model"], encoder.kind
    fingerprinted = "weights" in identity
    shown = revision or (identity["hash"][:8] if identity["kind"] == "sentence-transformers" else "")
    method.update({"source": source, "weights_fingerprinted": fingerprinted, "revision": shown,
                   "note": _note(identity)})
    config = {"name": method["name"], "base_model": label, "source": source, "identity": identity["hash"][:16],
              "revision": shown, "weights": identity.get("weights"), "weights_fingerprinted": fingerprinted}
    return Prebuilt(DenseScorer(encoder), method, config, model=label)


def _note(identity: dict[str, Any]) -> str:
    if identity["kind"] == "sentence-transformers":
        return "a SentenceTransformer object: identified by its modules' configs and its weights' fingerprint"
    return ("an in-memory model: identified by the name and revision given" +
            (" and its weights' fingerprint" if "weights" in identity else " (usebench cannot see its code)"))


def _encoder(model: Any, name: str | None, revision: str | None, device: str | None, batch_size: int | None,
             show_progress: bool) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """(encoder, method block, identity) of an in-memory model; what is no model is refused, saying what to pass."""
    from usebench.eval.encoder_adapter import (EncodeMethodEncoder, FunctionEncoder, is_sentence_transformer,
                                   sentence_transformer_encoder, sentence_transformer_name)
    from usebench.api.identity import named_identity, sentence_transformer_identity

    if is_sentence_transformer(model):
        label = name or sentence_transformer_name(model)
        encoder = sentence_transformer_encoder(model, label, batch_size=batch_size, device=device,
                                               show_progress=show_progress)
        method = {"name": "base", "base_model": label, "pooling": _st_pooling(model),
                  "max_length": getattr(model, "max_seq_length", None), "sentence_encoder": True}
        return encoder, method, sentence_transformer_identity(model)
    _refuse_bare_module(model)
    has_encode = callable(getattr(model, "encode", None))
    if not has_encode and not callable(model):
        raise BenchTypeError(f"model: expected a model name (str), a SentenceTransformer, an object with "
                             f".encode(list[str]) or a callable list[str] -> (n, d), got {type(model).__name__}")
    label = name or (_meta_name(model) if has_encode else None)
    if label is None:
        raise BenchValueError(f"name= is required for {'an object with .encode' if has_encode else 'a callable'} "
                              "model: it is what the results are recorded under (e.g. usebench.evaluate(fn, 'useb', "
                              "name='my-encoder', revision='v2'))")
    if device is not None:
        raise BenchValueError(f"device= does not apply to {type(model).__name__}: it encodes wherever it puts "
                              "its tensors (move the model itself)")
    if has_encode:
        encoder = EncodeMethodEncoder(model, label, batch_size=batch_size, show_progress=show_progress)
    else:
        encoder = FunctionEncoder(model, label, batch_size=batch_size or 64, show_progress=show_progress)
    method = {"name": label, "base_model": label, "pooling": "", "max_length": None, "setting": "external"}
    return encoder, method, named_identity(model, label, revision)


def _refuse_bare_module(model: Any) -> None:
    """A torch module that is no SentenceTransformer and has no ``encode`` (a transformers ``AutoModel``) maps
    token ids to token vectors, not texts to sentence vectors: say what to pass instead."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(model, torch.nn.Module) or callable(getattr(model, "encode", None)):
        return
    path = getattr(getattr(model, "config", None), "_name_or_path", "") or "PATH_OR_HF_ID"
    raise BenchTypeError(
        f"{type(model).__name__} is a torch module from token ids to token vectors, not an encoder of sentences. "
        f"Pass its name with a pooling (usebench.evaluate({path!r}, tasks, pooling='mean')), a SentenceTransformer "
        "built on it, or a function list[str] -> (n, d) that tokenizes, runs it and pools (docs/python.md)")


def _meta_name(model: Any) -> str | None:
    """The name an MTEB model declares (``mteb_model_meta.name``), if any."""
    meta = getattr(model, "mteb_model_meta", None)
    value = getattr(meta, "name", None)
    return str(value) if value else None


def _st_pooling(model: Any) -> str:
    """The pooling mode of a SentenceTransformer's Pooling module ("" when it has none)."""
    from usebench.eval.models import module_pooling_mode

    return next(filter(None, map(module_pooling_mode, getattr(model, "_modules", {}).values())), "")


def _run_name(opts: EvalOptions, names: list[str], split: str, root: Path, results: Path, strict: bool,
              force: bool, show_progress: bool) -> pd.DataFrame:
    """`bench eval`'s runner on a model name, then the stored records of this run (new and reused) as a frame."""
    from usebench.run.evaluation import evaluate_model

    with _quiet_tqdm():
        outcome = evaluate_model(opts, ",".join(names), split, root, results, strict=strict, force=force,
                                 log=_progress_log() if show_progress else None)
    return _finish(outcome, results, names)


def _run_in_memory(prebuilt: Prebuilt, names: list[str], o: EvaluateOptions) -> pd.DataFrame:
    """The runner on an in-memory model, one task at a time, into a staging store; then its new records into
    ``results`` (usebench/api/staging.py: no silent overwrite) and the frame."""
    from usebench.api.staging import publish, seed_staging
    from usebench.plan.eval_options import EvalOptions, eval_run_id
    from usebench.run.evaluation import evaluate_model
    from usebench.store import check_writable

    split, results, reuse = o.split, o.results, bool(o.reuse) and not o.force
    if results is not None:
        check_writable(results, "results directory", "results_dir=")
    opts = EvalOptions(model="<in-memory>", allow_partial=o.allow_partial, limit=o.limit, limit_seed=o.limit_seed)
    run, _ = eval_run_id(prebuilt.method["name"], prebuilt.model, prebuilt.config, 0, opts.subsample)
    with tempfile.TemporaryDirectory(prefix="usebench-staging-") as tmp:
        staging = Path(tmp)
        if results is not None and reuse:
            seed_staging(results, staging, run)
        outcome = None
        with _quiet_tqdm():
            for i, task in enumerate(names, 1):
                prebuilt.scorer.encoder.task = task  # for the messages of an encoder's errors
                log = _numbered(_progress_log(), i, len(names)) if o.show_progress else None
                one = evaluate_model(opts, task, split, o.data_root, staging, strict=o.strict, force=not reuse,
                                     log=log, prebuilt=prebuilt)
                outcome = one if outcome is None else _merged(outcome, one)
        # Published before the exit rule: a task that failed stores nothing, the others are kept (as `bench eval`).
        new = [outcome.records[ev.task] for ev in outcome.evaluations]  # as built: not read back from staging
        replaced = [] if results is None else publish(new, results, o.overwrite, staging)
        frame = _finish(outcome, staging, names)
    frame.attrs["replaced"] = replaced
    return frame


def _merged(a: EvalOutcome, b: EvalOutcome) -> EvalOutcome:
    for field in ("evaluations", "skipped", "reused", "failed"):
        getattr(a, field).extend(getattr(b, field))
    a.records.update(b.records)
    return a


def _finish(outcome: EvalOutcome, results: Path, names: list[str]) -> pd.DataFrame:
    """The exit rule of `bench eval` (nothing done or a failed task is an error), then the frame (its skipped
    tasks in ``attrs``, warned about by ``evaluate``)."""
    from usebench.run.evaluation import raise_unless_done

    raise_unless_done(outcome, len(names), "; ".join(f"{t}: {why}" for t, why in outcome.failed))
    frame = _frame(outcome, results, names)
    frame.attrs.update({"run_id": outcome.run_id, "skipped": list(outcome.skipped), "reused": list(outcome.reused),
                        "replaced": []})
    return frame


def _frame(outcome: EvalOutcome, results: Path, names: list[str]) -> pd.DataFrame:
    """The records of the evaluated tasks (as the runner built them) and of the reused ones (read from the
    store), in task order."""

    from usebench.api.frames import eval_frame
    from usebench.api.limited import with_intervals
    from usebench.store import read_record, result_path

    def record(task: str) -> dict[str, Any]:
        if task in outcome.records:
            return outcome.records[task]
        return read_record(result_path(results, outcome.run_id, task, outcome.split))

    done = {ev.task for ev in outcome.evaluations} | set(outcome.reused)
    records = [record(t) for t in names if t in done]
    return with_intervals(eval_frame(records), results, records)


def _progress_log() -> Callable[[str], None]:
    """The runner's per-task lines, written through tqdm so they do not break a progress bar."""
    from tqdm.auto import tqdm

    return lambda line: tqdm.write(line, file=sys.stderr)


def _numbered(log: Callable[[str], None], i: int, n: int) -> Callable[[str], None]:
    """The runner's ``[1/1]`` of a one-task call as ``[i/n]`` of the whole evaluation."""
    return lambda line: log(line.replace("[1/1]", f"[{i}/{n}]", 1))


def _quiet_tqdm() -> _FilterTqdm:
    """tqdm.auto's warning that ipywidgets is missing (Jupyter without the `notebook` extra) silenced: the
    bars fall back to text, which is all the warning says."""
    return _FilterTqdm()


class _FilterTqdm:
    """A context in which tqdm's ``TqdmWarning`` (no ipywidgets in Jupyter) is not shown."""

    def __enter__(self) -> None:
        from tqdm import TqdmWarning

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.filterwarnings("ignore", category=TqdmWarning)

    def __exit__(self, *exc: Any) -> None:
        self._ctx.__exit__(*exc)
