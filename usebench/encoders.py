"""In-memory models as :class:`~usebench.eval.encoder.Encoder` s: a loaded ``SentenceTransformer`` or any
function from a list of strings to an array or tensor ``(n, d)``.

Neither has a checkpoint on disk to fingerprint, so their results are recorded under the name the caller gives
(with a note that the weights are not fingerprinted), they are never reused from a store, and they get no
embedding cache (its key is the weights' fingerprint).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from usebench.errors import BenchError

NOT_FINGERPRINTED = ("an in-memory model passed to usebench.evaluate: its weights are not fingerprinted, so the "
                     "record names it only by the name given; such results are never reused")


def to_matrix(output: Any, n: int, name: str) -> np.ndarray:
    """``output`` of an encoding function as a float32 ``(n, d)`` array; anything else is an error naming the
    model and what came back."""
    if hasattr(output, "detach"):  # a torch tensor, on any device, with or without grad
        output = output.detach().float().cpu().numpy()
    try:
        matrix = np.asarray(output, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise BenchError(f"model {name!r} returned {type(output).__name__}, expected an array or tensor (n, d): "
                         f"{e}") from None
    if matrix.ndim != 2 or matrix.shape[0] != n:
        raise BenchError(f"model {name!r} returned shape {tuple(matrix.shape)} for {n} texts; expected ({n}, d)")
    return matrix


class FunctionEncoder:
    """Any ``fn(list[str]) -> array | tensor (n, d)`` as an Encoder.

    Texts are passed in batches of ``batch_size`` (``None``: all of a task's unique texts in one call), longest
    first, as the engine batches a checkpoint; the output is put back in the input order. ``strip`` strips each
    text first (the useb kit does, usebench/useb.py).
    """

    def __init__(self, fn: Callable[[list[str]], Any], name: str, *, batch_size: int | None = 64,
                 show_progress: bool = True, kind: str = "python-callable", sort_by_length: bool = True,
                 strip: bool = False, extra: dict[str, Any] | None = None):
        if not callable(fn):
            raise BenchError(f"model {name!r}: expected a model name, a SentenceTransformer or a callable, "
                             f"got {type(fn).__name__}")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size < 1):
            raise BenchError(f"batch_size must be a positive integer or None, got {batch_size!r}")
        self.fn, self.name, self.batch_size = fn, name, batch_size
        self.show_progress, self.kind, self.sort_by_length, self.strip = show_progress, kind, sort_by_length, strip
        self.extra = dict(extra or {})
        self.device = None  # where a search runs: the engine's default (an in-memory model says nothing)
        self.calls = 0  # how many times fn was called (tests, the useb kit's call pattern)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = [t.strip() for t in texts] if self.strip else list(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i])) if self.sort_by_length else \
            list(range(len(texts)))
        size = self.batch_size or len(texts)
        parts: list[np.ndarray] = []
        with tqdm(total=len(texts), desc=f"encode {self.name}", unit="text", leave=False,
                  disable=not self.show_progress) as bar:
            for start in range(0, len(order), size):
                batch = [texts[i] for i in order[start:start + size]]
                self.calls += 1
                parts.append(to_matrix(self.fn(batch), len(batch), self.name))
                bar.update(len(batch))
        dims = {p.shape[1] for p in parts}
        if len(dims) > 1:
            raise BenchError(f"model {self.name!r} returned vectors of different sizes {sorted(dims)} across batches")
        out = np.empty((len(texts), dims.pop()), dtype=np.float32)
        out[order] = np.concatenate(parts)
        return out

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
                                 show_progress: bool) -> FunctionEncoder:
    """A loaded SentenceTransformer as an Encoder: its own ``encode`` (its pooling, normalisation and length
    sorting) in fp32, on ``device`` when given."""
    size = batch_size or 64
    kwargs = {"batch_size": size, "convert_to_numpy": True, "show_progress_bar": show_progress}
    if device:
        from usebench.eval.encoder import pick_device

        kwargs["device"] = str(pick_device(device))  # an unknown or missing device fails here, clearly
    fn = lambda texts: model.encode(texts, **kwargs)
    extra = {"device": kwargs.get("device") or str(getattr(model, "device", "")),
             "max_length": getattr(model, "max_seq_length", None)}
    # One call per task: SentenceTransformer.encode batches and length-sorts itself, with its own progress bar.
    encoder = FunctionEncoder(fn, name, batch_size=None, show_progress=False, kind="sentence-transformers",
                              sort_by_length=False, extra=extra)
    encoder.batch_size = size
    return encoder
