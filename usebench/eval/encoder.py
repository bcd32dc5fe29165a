"""Sentence encoders: the only thing tasks see is ``encode(texts) -> (n, d) float32``.

:class:`HFEncoder` wraps an HF ``AutoModel`` with a pooling from :mod:`usebench.eval.pooling`. It encodes each
unique text once, in length-sorted batches (little padding), with an optional on-disk cache. It computes in fp32
on every device by default, so a score never depends on where it was computed; ``precision="bf16"`` (bf16
autocast) must be asked for, and is recorded in the result, the run config and the embedding-cache key.
"""
from __future__ import annotations

import hashlib
from typing import Literal, Protocol, Sequence, get_args

import numpy as np
import torch
from tqdm.auto import tqdm

from usebench.eval.cache import EmbeddingCache
from usebench.errors import BenchError
from usebench.eval.models import ModelInfo, model_fingerprint, resolve_model
from usebench.eval.pooling import build_pooler, needs_all_layers
from usebench.eval.progress_lines import ProgressLines

DEFAULT_MAX_LENGTH = 512  # BERT's position limit; checkpoints usually declare less
Precision = Literal["fp32", "bf16"]
PRECISIONS: tuple[str, ...] = get_args(Precision)


class Encoder(Protocol):
    """What tasks and the evaluation engine need from a model."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    def describe(self) -> dict: ...


def pick_device(device: str | None = None, local_rank: int | None = None) -> torch.device:
    """``--device`` checked against this machine (a clear error, not a CUDA traceback mid-run); None = the GPU
    (this rank's, ``local_rank``, under torchrun), else the CPU."""
    if not device:
        if torch.cuda.is_available():
            return torch.device("cuda") if local_rank is None else torch.device("cuda", local_rank)
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise BenchError(f"--device {device}: unknown device (expected cpu, cuda or cuda:N)") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}, no GPU visible"
            raise BenchError(f"--device {device}: CUDA is not available here (torch {torch.__version__}, {build}); "
                             "use --device cpu or leave --device out")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise BenchError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type != "cpu":
        raise BenchError(f"--device {device}: unsupported device type {dev.type!r} (expected cpu, cuda or cuda:N)")
    return dev


def check_positive(value: int | None, option: str) -> None:
    """A count option (``--batch-size``, ``--max-length``) must be a positive integer: 0 or -4 would encode
    nothing and store NaN scores."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BenchError(f"{option} must be a positive integer, got {value!r}")


def check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise BenchError(f"--precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")


def resolve_settings(info: ModelInfo, pooling: str | None, max_length: int | None) -> tuple[str, int]:
    """(pooling, max length) an encoder of ``info`` uses: the options, else what the checkpoint declares."""
    return pooling or info.pooling or "mean", int(max_length or info.max_length or DEFAULT_MAX_LENGTH)


def precision_label(precision: str) -> str:
    """How embeddings are computed for ``--precision`` (recorded in results as ``scorer.dtype``; a stored result
    of another precision is not reused). The same on every device: fp32 unless bf16 was asked for."""
    return "bfloat16-autocast" if precision == "bf16" else "float32"


class HFEncoder:
    """A transformer + pooling. ``pooling``/``max_length`` default to what the checkpoint declares."""

    def __init__(
        self,
        model: str,
        pooling: str | None = None,
        max_length: int | None = None,
        batch_size: int = 64,
        device: str | None = None,
        cache_dir: str | None = None,
        show_progress: bool = True,
        precision: Precision = "fp32",
        label: str | None = None,
    ):
        """``label``: how results name the model and its path instead of ``model`` (a run's checkpoint, relative to
        its results directory, so that no machine path goes into a committed result)."""
        from transformers import AutoTokenizer

        from usebench.eval.encoder_only import load_encoder_model

        check_precision(precision)
        check_positive(batch_size, "--batch-size")
        check_positive(max_length, "--max-length")
        self.info: ModelInfo = resolve_model(model)
        self.name, self.label = model, label
        self.pooling, self.max_length = resolve_settings(self.info, pooling, max_length)
        self.prompt: str | None = self.info.method.get("prompt")  # e.g. DenoSent's '"{text}" means [MASK].'
        # DenoSent cuts the text to N tokens (special tokens counted) and decodes it before filling the prompt.
        self.prompt_text_max_length: int | None = self.info.method.get("prompt_text_max_length")
        self.batch_size = batch_size
        self.device = pick_device(device)
        self.precision = precision
        if precision == "bf16" and self.device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise BenchError(f"precision bf16: {self.device} does not support bfloat16; use precision fp32")
        self.show_progress = show_progress
        # Built before the model loads: an unknown pooling or missing pooling weights fail fast.
        factory = self.info.method.get("pooler") if self.pooling == self.info.pooling else None
        self._pool = build_pooler(self.pooling, self.info.path, self.device, factory)
        try:
            local = {"local_files_only": True} if self.info.local else {}
            self.tokenizer = AutoTokenizer.from_pretrained(self.info.path, **local)
            # BART/T5 checkpoints embed with their encoder (AutoModel would run BART's decoder)
            self.model = load_encoder_model(self.info.path, **local).to(self.device).eval()
        except OSError as e:
            raise BenchError(
                f"cannot load model {model!r}: {e}. Offline, use a local directory or the packaged alias 'minilm'."
            ) from None
        positions = getattr(self.model.config, "max_position_embeddings", None)
        if max_length and positions and max_length > positions:
            raise BenchError(f"--max-length {max_length} exceeds the {positions} positions of {model!r}")
        self._cache = EmbeddingCache(cache_dir, self.cache_key()) if cache_dir else None

    @classmethod
    def from_modules(cls, model: torch.nn.Module, tokenizer, *, name: str, pooling: str, max_length: int,
                     batch_size: int = 64, show_progress: bool = False) -> HFEncoder:
        """An encoder around a transformer and tokenizer already in memory (the model a sentence-transformers
        trainer is training, usebench/st.py): the same tokenization, batching, pooling and fp32 forward as
        ``HFEncoder(<its saved checkpoint>)``, on the device its weights are on. Nothing is cached (the weights
        change between calls); the caller sets the module's train/eval mode."""
        check_positive(batch_size, "batch_size")
        check_positive(max_length, "max_length")
        self = cls.__new__(cls)
        self.info = ModelInfo(name=name, path=name, pooling=pooling, max_length=max_length, method={})
        self.name, self.pooling, self.max_length = name, pooling, int(max_length)
        self.prompt, self.prompt_text_max_length = None, None
        self.batch_size, self.precision, self.show_progress = batch_size, "fp32", show_progress
        self.device = next(model.parameters()).device
        self._pool = build_pooler(pooling, name, self.device)
        self.tokenizer, self.model, self._cache = tokenizer, model, None
        return self

    def cache_key(self) -> str:
        # The precision is part of the key: a bf16 vector (or one an older version computed under GPU autocast,
        # whose key lacked it) is never served as an fp32 one.
        parts = [model_fingerprint(self.info), self.pooling, str(self.max_length), self.prompt or "",
                 self.precision]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]

    def describe(self) -> dict:
        """What a result file records about the encoder."""
        from usebench.eval.models import recorded_path

        return {
            "model": self.label or self.name,
            "path": self.label or recorded_path(self.info),
            "pooling": self.pooling,
            "max_length": self.max_length,
            "prompt": self.prompt,
            "device": str(self.device),
            "precision": self.precision,
            "dtype": precision_label(self.precision),
        }

    def _autocast_dtype(self) -> torch.dtype | None:
        """bf16 autocast only when asked for (on any device); fp32 otherwise."""
        return torch.bfloat16 if self.precision == "bf16" else None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings for ``texts`` in order; duplicates are encoded once. Returns (n, d) float32."""
        unique = list(dict.fromkeys(texts))
        found = self._cache.get_many(unique) if self._cache else {}
        todo = [t for t in unique if t not in found]
        if todo:
            fresh = self._encode_unique(todo)
            if self._cache:
                self._cache.put_many(todo, fresh)
            found.update(zip(todo, fresh))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def _prepare(self, text: str) -> str:
        return self.prompt.replace("{text}", text) if self.prompt else text

    def _prepare_all(self, texts: list[str]) -> list[str]:
        if self.prompt and self.prompt_text_max_length:
            texts = truncate_texts(self.tokenizer, texts, int(self.prompt_text_max_length))
        return [self._prepare(t) for t in texts]

    def _encode_unique(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer(self._prepare_all(texts), truncation=True, max_length=self.max_length)
        ids = enc["input_ids"]
        # Longest first: padding per batch stays small, and an out-of-memory shows up on the first batch.
        order = sorted(range(len(texts)), key=lambda i: -len(ids[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        # disable=None turns the bar off when stderr is not a terminal, so CI logs stay readable; a line now and
        # then says the same there (a minutes-long encode is not silent in a log)
        bar = tqdm(total=len(texts), desc=f"encode {self.name}", unit="text",
                   disable=None if self.show_progress else True,
                   leave=False)
        lines = ProgressLines(len(texts), f"encode {self.name}", "texts") if self.show_progress and bar.disable \
            else None
        for batch in batches:
            features = self.tokenizer.pad({k: [enc[k][i] for i in batch] for k in enc.keys()}, return_tensors="pt")
            out[batch] = self._forward(features)
            bar.update(len(batch))
            if lines is not None:
                lines.update(len(batch))
        bar.close()
        return out

    @torch.inference_mode()
    def _forward(self, features) -> np.ndarray:
        features = {k: v.to(self.device) for k, v in features.items()}
        dtype = self._autocast_dtype()
        with torch.autocast(self.device.type, dtype=dtype, enabled=dtype is not None):
            output = self.model(**features, output_hidden_states=needs_all_layers(self.pooling) or None,
                                return_dict=True)
            hidden = output.hidden_states if output.hidden_states is not None else (output.last_hidden_state,)
            pooled = self._pool(hidden, features["attention_mask"], features["input_ids"])
        return pooled.float().cpu().numpy()


def truncate_texts(tokenizer, texts: Sequence[str], max_tokens: int) -> list[str]:
    """Each text cut to ``max_tokens`` tokens *including* the special tokens and decoded back to a string
    (without them), as DenoSent does before inserting a sentence into its prompt. Uncased tokenizers return
    lower-cased text with word pieces re-joined (``don't`` -> ``don ' t``; BERT re-tokenizes that to the same
    ids whichever way the decoder spaces punctuation)."""
    ids = tokenizer(list(texts), truncation=True, max_length=max_tokens)["input_ids"]
    return tokenizer.batch_decode(ids, skip_special_tokens=True)


def load_encoder(model: str, pooling: str | None = None, **kwargs) -> HFEncoder:
    """The encoder for ``--model``/``--pooling`` (see :class:`HFEncoder` for keyword arguments)."""
    return HFEncoder(model, pooling=pooling, **kwargs)
