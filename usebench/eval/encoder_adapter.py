"""In-memory models as :class:`~usebench.eval.encoder.Encoder` s: a loaded ``SentenceTransformer``, any object
with ``.encode(list[str]) -> array`` (the sentence-transformers and MTEB protocols), or any function from a list
of strings to an array or tensor ``(n, d)``.

None of them has a checkpoint on disk; their results are filed under their identity (usebench/api/identity.py) and
may use an embedding cache keyed by it. The model's own exceptions come back as
:class:`~usebench.errors.EncoderError` naming the task and the batch.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from usebench.errors import BenchTypeError, BenchValueError, EncoderError

NOT_FINGERPRINTED = ("an in-memory model passed to usebench.evaluate: filed under its identity (usebench/api/identity.py): "
                     "a SentenceTransformer's modules, settings and weights' fingerprint, else the name and "
                     "revision given, which usebench cannot check against the function's code")


def progress_bar_class():
    """tqdm's notebook widgets where ipywidgets is installed (the `notebook` extra), else text bars: tqdm.auto
    without ipywidgets prints text bars plus a TqdmWarning in Jupyter."""
    import importlib.util

    if importlib.util.find_spec("ipywidgets") is None:
        from tqdm import tqdm as text_bar

        return text_bar
    return tqdm


def to_matrix(output: Any, n: int, name: str, where: str = "") -> np.ndarray:
    """``output`` of an encoding function as a float32 ``(n, d)`` array; anything else is an error naming the
    model, what came back and ``where`` (the task and batch)."""
    if output is None:
        raise BenchTypeError(f"model {name!r} returned None{where}; expected an array or tensor of shape ({n}, d) "
                             "(a function that prints or appends its vectors must return them)")
    if hasattr(output, "detach"):  # a torch tensor, on any device, with or without grad
        output = output.detach().float().cpu().numpy()
    if isinstance(output, (str, bytes, dict)):
        raise BenchTypeError(f"model {name!r} returned {type(output).__name__}{where}, expected an array or tensor "
                             f"of shape ({n}, d)")
    try:
        matrix = np.asarray(output, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise BenchTypeError(f"model {name!r} returned {type(output).__name__}{where}, expected an array or tensor "
                             f"of shape ({n}, d): {e}") from None
    if matrix.ndim != 2 or matrix.shape[0] != n:
        raise BenchValueError(f"model {name!r} returned shape {tuple(matrix.shape)} for {n} texts{where}; expected "
                              f"({n}, d)")
    return matrix


class FunctionEncoder:
    """Any ``fn(list[str]) -> array | tensor (n, d)`` as an Encoder.

    Texts are passed in batches of ``batch_size`` (``None``: all of a task's unique texts in one call), longest
    first, as the engine batches a checkpoint; the output is put back in the input order. ``strip`` strips each
    text first (the useb kit does, usebench/useb). ``cache``: an embedding cache keyed by the model's identity
    (texts found there are not encoded again). ``task`` names the task being encoded, for error messages.
    An exception raised by ``fn`` becomes an :class:`~usebench.errors.EncoderError` naming the task and the batch.
    """

    def __init__(self, fn: Callable[[list[str]], Any], name: str, *, batch_size: int | None = 64,
                 show_progress: bool = True, kind: str = "python-callable", sort_by_length: bool = True,
                 strip: bool = False, extra: dict[str, Any] | None = None, cache: Any = None):
        if not callable(fn):
            raise BenchTypeError(f"model {name!r}: expected a model name, a SentenceTransformer, an object with "
                                 f".encode(list[str]) or a callable, got {type(fn).__name__}")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size < 1):
            raise BenchValueError(f"batch_size must be a positive integer or None, got {batch_size!r}")
        self.fn, self.name, self.batch_size = fn, name, batch_size
        self.show_progress, self.kind, self.sort_by_length, self.strip = show_progress, kind, sort_by_length, strip
        self.extra = dict(extra or {})
        self.cache = cache
        self.task: str | None = None  # set by the caller before each task (usebench/api/evaluation.py), for messages
        self.device = None  # where a search runs: the engine's default (an in-memory model says nothing)
        self.calls = 0  # how many times fn was called (tests, the useb kit's call pattern)
        self.encoded = 0  # texts handed to fn (the cache's hits are not)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = [t.strip() for t in texts] if self.strip else list(texts)
        found = self.cache.get_many(list(dict.fromkeys(texts))) if self.cache is not None else {}
        todo = list(dict.fromkeys(t for t in texts if t not in found)) if found else texts
        if todo:
            fresh = self._encode_all(todo)
            if self.cache is not None:
                self.cache.put_many(todo, fresh)
            if not found:
                return fresh
            found.update(zip(todo, fresh))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)

    def _encode_all(self, texts: list[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i])) if self.sort_by_length else \
            list(range(len(texts)))
        size = self.batch_size if self.batch_size and not self.one_call else len(texts)
        n_batches = -(-len(texts) // size)
        parts: list[np.ndarray] = []
        with progress_bar_class()(total=len(texts), desc=f"encode {self.name}", unit="text", leave=False,
                                  disable=not (self.show_progress and self.own_bar)) as bar:
            for b, start in enumerate(range(0, len(order), size), 1):
                batch = [texts[i] for i in order[start:start + size]]
                where = self._where(b, n_batches, batch)
                self.calls += 1
                self.encoded += len(batch)
                try:
                    output = self._call(batch)
                except Exception as e:  # noqa: BLE001  the model's own error: said with where it happened
                    raise EncoderError(f"model {self.name!r} raised {type(e).__name__}: {e}{where}") from e
                parts.append(to_matrix(output, len(batch), self.name, where))
                bar.update(len(batch))
        dims = {p.shape[1] for p in parts}
        if len(dims) > 1:
            raise BenchValueError(f"model {self.name!r} returned vectors of different sizes {sorted(dims)} across "
                                  f"batches{self._where(0, 0, [])}")
        out = np.empty((len(texts), dims.pop()), dtype=np.float32)
        out[order] = np.concatenate(parts)
        return out

    one_call = False  # True: one call per task, the model batches itself (SentenceTransformer, .encode objects)
    own_bar = True  # False where the model shows its own progress bar

    def _call(self, batch: list[str]) -> Any:
        return self.fn(batch)

    def _where(self, b: int, n: int, batch: list[str]) -> str:
        """`` (task stsb, batch 3 of 12: 64 texts, the first 'How do I ...')``, for messages."""
        parts = [f"task {self.task}"] if self.task else []
        if n:
            first = batch[0] if len(batch[0]) <= 60 else batch[0][:57] + "..."
            parts.append(f"batch {b} of {n}: {len(batch)} texts, the first {first!r}")
        return f" ({', '.join(parts)})" if parts else ""

    def describe(self) -> dict[str, Any]:
        """What a result file records about the encoder (``scorer`` block)."""
        return {"model": self.name, "source": self.kind, "batch_size": self.batch_size, "dtype": None,
                "weights_fingerprinted": False, "note": NOT_FINGERPRINTED, **self.extra}


def is_sentence_transformer(model: Any) -> bool:
    """True for a loaded ``sentence_transformers.SentenceTransformer`` (without importing the library when the
    caller never did)."""
    import sys

    st = sys.modules.get("sentence_transformers")
    return st is not None and isinstance(model, st.SentenceTransformer)


def sentence_transformer_name(model: Any) -> str:
    """A default record name for a SentenceTransformer: its model card's base model, else the path its
    transformer was loaded from, else its class name."""
    card = getattr(model, "model_card_data", None)
    for value in (getattr(card, "base_model", None), getattr(card, "model_id", None)):
        if value:
            return str(value)
    try:
        path = model[0].auto_model.config._name_or_path
    except (AttributeError, IndexError, KeyError, TypeError):
        path = None
    return str(path) if path else type(model).__name__


def sentence_transformer_encoder(model: Any, name: str, *, batch_size: int | None, device: str | None,
                                 show_progress: bool, cache: Any = None) -> FunctionEncoder:
    """A loaded SentenceTransformer as an Encoder: its own ``encode`` (its pooling, normalisation and length
    sorting) in fp32, on ``device`` when given (a device already checked by the caller)."""
    size = batch_size or 64
    kwargs = {"batch_size": size, "convert_to_numpy": True, "show_progress_bar": show_progress}
    if device:
        kwargs["device"] = device
    fn = lambda texts: model.encode(texts, **kwargs)
    extra = {"device": kwargs.get("device") or str(getattr(model, "device", "")),
             "max_length": getattr(model, "max_seq_length", None), "weights_fingerprinted": True}
    # One call per task: SentenceTransformer.encode batches and length-sorts itself, with its own progress bar.
    encoder = FunctionEncoder(fn, name, batch_size=size, show_progress=False, kind="sentence-transformers",
                              sort_by_length=False, extra=extra, cache=cache)
    encoder.one_call = True
    return encoder


# Keywords of the sentence-transformers and MTEB (1.x) ``encode`` protocols that usebench knows how to fill.
ENCODE_HINTS = ("batch_size", "show_progress_bar", "convert_to_numpy", "task_name", "prompt_type")
# MTEB's names for the tasks whose data are (or include) the same datasets: a model that picks its prompt by
# MTEB task name (``task_name=``) gets the prompt of the same kind of task.
MTEB_TASK_NAMES = {"askubuntu": "AskUbuntuDupQuestions", "scidocs": "SciDocsRR", "cqadupstack": "CQADupstackRetrieval",
                   "twitterpara": "TwitterURLCorpus", "stsb": "STSBenchmark", "sickr": "SICK-R", "sts12": "STS12",
                   "sts13": "STS13", "sts14": "STS14", "sts15": "STS15", "sts16": "STS16", "quora": "QuoraRetrieval"}


def encode_parameters(model: Any) -> tuple[set[str], bool]:
    """(the keyword hints ``model.encode`` names, whether it batches itself); an ``encode`` that requires an
    argument usebench cannot fill (MTEB 2's ``task_metadata``, a DataLoader) is a :class:`BenchTypeError`."""
    import inspect

    try:
        params = list(inspect.signature(model.encode).parameters.values())
    except (TypeError, ValueError):  # a builtin or C extension: call it with the texts only
        return set(), False
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    required = [p.name for p in named[1:] if p.default is p.empty and p.name not in ENCODE_HINTS]
    first = named[0].annotation if named else None
    if required or "DataLoader" in str(first):
        what = ", ".join(required) if required else f"a DataLoader as {named[0].name!r}"
        raise BenchTypeError(f"{type(model).__name__}.encode needs {what}, which usebench cannot give (it passes a "
                             "list of strings); wrap it: usebench.evaluate(lambda texts: model.encode(texts, ...), "
                             "tasks, name=...)")
    hints = {p.name for p in named} & set(ENCODE_HINTS)
    return hints, "batch_size" in hints


class EncodeMethodEncoder(FunctionEncoder):
    """An object with ``.encode(list[str]) -> array`` (sentence-transformers, MTEB 1.x, a user's class) as an
    Encoder. The keywords its ``encode`` names among :data:`ENCODE_HINTS` are passed (``task_name``: MTEB's name
    of the task, else ours); one that takes ``batch_size`` gets all of a task's texts in one call."""

    def __init__(self, model: Any, name: str, *, batch_size: int | None, show_progress: bool, cache: Any = None,
                 extra: dict[str, Any] | None = None):
        self.hints, batches_itself = encode_parameters(model)
        super().__init__(model.encode, name, batch_size=batch_size or 64, show_progress=show_progress,
                         kind=f"encode-method:{type(model).__name__}", cache=cache, extra=extra)
        self.one_call = batches_itself
        self.own_bar = not (batches_itself and "show_progress_bar" in self.hints)

    def _call(self, batch: list[str]) -> Any:
        values = {"batch_size": self.batch_size, "show_progress_bar": self.show_progress, "convert_to_numpy": True,
                  "task_name": MTEB_TASK_NAMES.get(self.task or "", (self.task or "").removeprefix("mteb:")),
                  "prompt_type": None}
        return self.fn(batch, **{k: values[k] for k in self.hints})
