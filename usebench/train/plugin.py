"""The method-plugin interface: what a trainer declares, and the shared pieces plugins build from.

A plugin is a :class:`Method` subclass instance enrolled in ``usebench.registry.METHODS``. It declares a
frozen config dataclass (``Config``) with ``presets``, and implements only what differs between methods:
``build`` (the train module: encoder + heads/decoders, whose ``forward(batch)`` returns the loss), ``collate``
(texts -> tensors, noise drawn from the given RNG) and, where needed, ``batch_indices`` (sampling),
``trainable_parameters``, ``export_module`` and ``method_json``. The loop in :mod:`usebench.train.loop` does
the rest; ``tests/methods/test_contract.py`` checks every plugin against this interface.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import nn

from usebench.train import static_shapes
from usebench.data.memo import in_session, remember
from usebench.train.checkpoint import STWriter, builtin_writer
from usebench.train.config import PRECISION, TrainConfig, build_config, parse_overrides
from usebench.errors import BenchError, ConfigError
from usebench.eval.pooling import POOLERS, needs_all_layers

PRESET_NAMES = ("paper", "official", "smoke")
# What a method trains on: unlabeled sentences (given to it by the run grid: a task's in-domain corpus or
# --corpus files) or labeled examples it loads itself (Method.training_data: pairs, graded pairs, NLI triplets).
DataKind = Literal["sentences", "labeled"]


@dataclass(frozen=True)
class TrainingData:
    """What one training stage trains on, and how configs and tables name it."""

    label: str  # "askubuntu", "file:a.toks+b.toks", "allnli+stsb", "twitterpara:supervised"...
    examples: list[Any]  # sentences (str) or the plugin's labeled examples
    sha256: str  # of the examples, in order: part of the run's config hash
    files: tuple[str, ...] = ()
    duplicates_dropped: int = 0
    sampled_from: int | None = None  # distinct examples before a fixed-size subsample (--corpus-size)


class TrainModule(nn.Module):
    """What ``Method.build`` returns: ``forward(batch) -> loss`` (a scalar tensor, or a dict with ``"loss"``
    plus float-able extras that are logged). ``encoder`` is the :class:`SentenceEncoder` that is exported
    unless the plugin overrides ``Method.export_module``; ``tokenizer`` is handed to ``collate``."""

    encoder: SentenceEncoder
    tokenizer: Any

    def compiled_inputs(self, batch: Any) -> Any:
        """The batch as the fast path's compiled step passes it to ``forward`` (default: all of it). A module drops
        here host-side values its forward does not read that change every step (each new Python int would
        recompile the step), e.g. ConSERT's augmentation seed once the augmentations are drawn in collate."""
        return batch


class SentenceEncoder(nn.Module):
    """An HF ``AutoModel`` plus a pooling from ``usebench.eval.pooling.POOLERS``: ``forward -> (bsz, dim)``."""

    def __init__(self, model: nn.Module, pooling: str):
        super().__init__()
        if pooling not in POOLERS:
            raise ConfigError(POOLERS.unknown_message(pooling))
        self.model = model
        self.pooling = pooling
        self._pool = POOLERS.get(pooling)

    @property
    def dim(self) -> int:
        """Hidden size of the model (the embedding dimension of cls/mean/max poolings)."""
        return int(self.model.config.hidden_size)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        """Pooled sentence vectors (bsz, dim). Extra kwargs (token_type_ids, position_ids...) go to the model."""
        all_layers = needs_all_layers(self.pooling)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=all_layers or None,
                         return_dict=True, **kwargs)
        hidden = out.hidden_states if all_layers else (out.last_hidden_state,)
        return self._pool(hidden, attention_mask, input_ids)


def load_backbone(name: str, model_class: Any = None, *, dropout: bool = True, from_scratch: bool = False,
                  **model_kwargs: Any) -> tuple[nn.Module, Any, str]:
    """(model, tokenizer, resolved path) for ``name`` (alias ``minilm``, a local dir or an HF id).

    ``model_class`` defaults to ``AutoModel``; pass e.g. ``AutoModelForMaskedLM``. With ``dropout=False`` the
    config's dropout probabilities are 0 *before* the model is built (as ConSERT's ``--no_dropout`` does), so
    no transformers version can read a non-zero rate that was copied at construction, and then
    :func:`set_dropout` switches off whatever is left. The BERT pooler (dense+tanh, never used by our poolings)
    is frozen so optimizers and DDP ignore it, but it stays in the export. ``from_scratch=True`` builds the
    checkpoint's architecture with freshly initialised weights (the TSDAE paper's "Scratch" row, Table 4).
    Encoder-decoder checkpoints (BART, T5) are refused here: their encoder is what embeds sentences
    (:mod:`usebench.eval.encoder_only`), and only TSDAE trains them, with their own decoder.
    """
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from usebench.eval.encoder_only import is_encoder_decoder
    from usebench.eval.models import resolve_model

    info = resolve_model(name)
    local = {"local_files_only": True} if info.local else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(info.path, **local)
        config = AutoConfig.from_pretrained(info.path, **local)
        if model_class is None and is_encoder_decoder(config):
            raise ConfigError(f"{name} is an encoder-decoder checkpoint ({config.model_type}); only tsdae trains "
                              "one (its encoder, with the checkpoint's own decoder: TSDAE paper Table 4)")
        if not dropout:
            zero_dropout_fields(config)
        model_kwargs = {"config": config, **model_kwargs}
        model_class = model_class or AutoModel
        model = (model_class.from_config(config) if from_scratch
                 else model_class.from_pretrained(info.path, **local, **model_kwargs))
    except OSError as e:
        raise BenchError(f"cannot load base model {name!r}: {e}. Offline, pass --model minilm or a local "
                         f"directory (paper presets name bert-base-uncased, which needs the hub or a local copy).")
    set_dropout(model, dropout)
    pooler = getattr(getattr(model, "base_model", model), "pooler", None)
    if isinstance(pooler, nn.Module):
        pooler.requires_grad_(False)
    return model, tokenizer, info.path


# Float attributes that hold a dropout rate: HF configs (hidden_dropout_prob, attention_probs_dropout_prob,
# dropout, attention_dropout, activation_dropout...) and modules that copy one at construction (transformers
# 4.4x's BertSdpaSelfAttention.dropout_prob, torch's MultiheadAttention.dropout).
_DROPOUT_SUFFIXES = ("dropout", "dropout_prob")


def zero_dropout_fields(obj: Any) -> None:
    """Set every float attribute of ``obj`` whose name ends in ``dropout``/``dropout_prob`` to 0."""
    for key, value in list(vars(obj).items()):
        if key.endswith(_DROPOUT_SUFFIXES) and isinstance(value, float) and not isinstance(value, bool):
            setattr(obj, key, 0.0)


def set_dropout(module: nn.Module, enabled: bool) -> None:
    """With ``enabled=False``: every ``nn.Dropout`` gets p=0, and every dropout rate stored as a float (HF
    configs, attention modules that read a rate copied at init) is 0, so a train-mode forward is deterministic
    on every transformers version. ``enabled=True`` leaves the module as it is."""
    if enabled:
        return
    for m in module.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        zero_dropout_fields(m)
        if getattr(m, "config", None) is not None and hasattr(m.config, "to_dict"):
            zero_dropout_fields(m.config)


def tokenize(tokenizer: Any, texts: Sequence[str], max_length: int, *, special_tokens_mask: bool = False,
             word_ids: bool = False) -> dict[str, Any]:
    """Pad-to-longest, truncate-to-``max_length`` ids and attention mask (no token_type_ids: all zeros): every
    method's batch tokenization. ``special_tokens_mask=True`` adds ``special_tokens_mask`` (bsz, L), True at
    [CLS]/[SEP]/padding (what masked-LM corruption must never touch); ``word_ids=True`` adds ``word_ids`` (per
    row, each token's word index or None, for whole-word masking). Inside a step's collate on the fast path the
    width is then padded up to a length bucket (:mod:`usebench.train.static_shapes`)."""
    enc = tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt",
                    return_token_type_ids=False, return_special_tokens_mask=special_tokens_mask)
    out: dict[str, Any] = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
    if special_tokens_mask:
        out["special_tokens_mask"] = enc["special_tokens_mask"].bool() | (enc["attention_mask"] == 0)
    if word_ids:
        out["word_ids"] = [enc.word_ids(i) for i in range(len(texts))]
    if static_shapes.active():
        out = static_shapes.pad_tokens(out, max_length, int(tokenizer.pad_token_id))  # on the right, either side
    return out


def shuffled_batch(n: int, batch_size: int, step: int, seed: int, rank: int = 0, world: int = 1) -> list[int]:
    """Indices for ``step``: epochs are seeded permutations of the corpus cut into ``n // (batch_size*world)``
    full global batches (the rest of an epoch is dropped, so no batch holds a sentence twice). Stateless:
    the data position after a resume is a function of ``step`` alone."""
    global_bs = batch_size * world
    per_epoch = n // global_bs
    if per_epoch == 0:
        raise BenchError(f"the corpus has {n} sentences, fewer than one global batch ({global_bs})")
    epoch, k = divmod(step, per_epoch)
    perm = epoch_permutation(n, seed, epoch)
    start = k * global_bs + rank * batch_size
    return perm[start : start + batch_size].tolist()


def batches_per_epoch(n: int, batch_size: int, world: int = 1, keep_partial: bool = False) -> int:
    """Steps in one pass over ``n`` examples: whole global batches, or with ``keep_partial`` (a DataLoader with
    drop_last=False, one process) ceil(n / batch_size), the last batch holding the remainder."""
    if keep_partial and world == 1:
        return max(1, math.ceil(n / batch_size))
    return max(1, n // (batch_size * world))


def epoch_batch(n: int, batch_size: int, step: int, seed: int, rank: int = 0, world: int = 1,
                keep_partial: bool = False) -> list[int]:
    """The example indices of ``step``: :func:`shuffled_batch`, or with ``keep_partial`` (one process) the same
    seeded epoch permutations cut into ceil(n / batch_size) batches, so the last one of an epoch is smaller
    and an epoch of fewer examples than a batch is one step. Under DDP whole global batches only (a rank could
    otherwise get an empty remainder)."""
    if not keep_partial or world > 1:
        return shuffled_batch(n, batch_size, step, seed, rank, world)
    epoch, k = divmod(step, batches_per_epoch(n, batch_size, world, keep_partial))
    return epoch_permutation(n, seed, epoch)[k * batch_size : (k + 1) * batch_size].tolist()


_PERM_CACHE: dict[tuple[int, int, int], np.ndarray] = {}


def epoch_permutation(n: int, seed: int, epoch: int) -> np.ndarray:
    """The corpus order of ``epoch``: a permutation of range(n) seeded by (seed, epoch). Training keeps the current
    epoch's; a plan keeps each one for its session (every stage of a seed on one corpus draws its first batch from
    the same order), freed when planning ends."""
    if in_session():
        return remember(("epoch-permutation", n, seed, epoch), lambda: _permutation(n, seed, epoch))
    key = (n, seed, epoch)
    if key not in _PERM_CACHE:
        _PERM_CACHE.clear()  # one epoch at a time is enough
        _PERM_CACHE[key] = _permutation(n, seed, epoch)
    return _PERM_CACHE[key]


def _permutation(n: int, seed: int, epoch: int) -> np.ndarray:
    return np.random.default_rng([seed, epoch, 0x5A3]).permutation(n)


class Method(ABC):
    """Base class of trainer plugins. Subclasses set the class attributes and implement ``build``/``collate``."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    citation: ClassVar[str] = ""
    Config: ClassVar[type[TrainConfig]] = TrainConfig
    presets: ClassVar[dict[str, dict[str, Any]]] = {}  # "paper", "official", "smoke" -> field overrides
    # preset -> where it departs from its source, or a choice the source leaves open (shown by `bench methods`)
    preset_notes: ClassVar[dict[str, str]] = {}
    default_preset: ClassVar[str] = "paper"
    ddp_find_unused_parameters: ClassVar[bool] = False
    test_overrides: ClassVar[dict[str, Any]] = {}  # extra config for the tiny-BERT contract test
    data_kind: ClassVar[DataKind] = "sentences"
    # Whether another stage of a chain may start from this method's checkpoint (BERT-flow's frozen encoder +
    # flow cannot be fine-tuned further without dropping the flow it was trained for).
    continuable: ClassVar[bool] = True
    # Whether an epoch ends with its last, smaller batch, as the method's reference loader does (a DataLoader with
    # drop_last=False: the HF Trainer, sentence-transformers v0.3.8's fit), or drops it (drop_last=True, e.g. the
    # sentence-transformers TSDAE example). It decides which sentences share a batch, so it follows the reference.
    keep_partial_batch: ClassVar[bool] = False
    st_trust_remote_code: ClassVar[bool] = False  # export uses a module class outside sentence_transformers.*
    # The fast path (usebench.train.fast_path): why this method's step cannot be compiled (None: it can), and
    # whether every batch has the same rows (a partial last batch aside), so the compiled step may specialise on them.
    compile_note: ClassVar[str | None] = None
    fixed_batch_rows: ClassVar[bool] = True
    eager_steps: ClassVar[int] = 0  # steps of a run that stay eager before the compiled step takes over
    # Whether the module initialises part of itself from the first batch it sees (BERT-flow's ActNorm): a run that
    # stops at step 0 passes that batch through it (no update) before the export, so the export is loadable.
    first_batch_init: ClassVar[bool] = False

    # --- configuration ---------------------------------------------------------------------------------
    def config(self, preset: str | None = None, overrides: Mapping[str, Any] | Sequence[str] | None = None,
               **kwargs: Any) -> TrainConfig:
        """``Config`` from a preset (default ``default_preset``) plus overrides: a dict, ``["k=v"]`` strings, or
        keyword arguments. Unknown preset names and keys raise ConfigError."""
        values: dict[str, Any] = {}
        if overrides is not None:
            values.update(parse_overrides(self.Config, list(overrides)) if _is_str_seq(overrides) else overrides)
        values.update(kwargs)
        return build_config(self.Config, self.presets, preset or self.default_preset, values)

    def backbone_defaults(self, cfg: TrainConfig, user: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
        """Values the planner fills in for this backbone before anything trains, with a note saying so: the
        paper's choice where a preset default cannot hold for the checkpoint (TSDAE decodes an encoder-decoder
        with its own decoder). A choice the user made (``user``: the --set values) that cannot hold raises a
        ConfigError here, at plan time, never in the unit. Default: nothing to fill in."""
        return {}, None

    def eval_pooling(self, cfg: TrainConfig) -> str:
        """Pooling of the exported encoder (written to method.json and the sentence-transformers modules)."""
        return cfg.pooling

    def pooling_writer(self, cfg: TrainConfig) -> STWriter:
        """Writes the sentence-transformers pooling modules of the export (default: the built-in writer of
        :meth:`eval_pooling`; a method with a pooling of its own overrides this). Called before training, so an
        unexportable pooling fails fast."""
        return builtin_writer(self.eval_pooling(cfg))

    def dev_pooling(self, cfg: TrainConfig) -> str:
        """Pooling the dev evaluation scores the training model with (default: the exported one; ConSERT's
        reference selects with its training pooling and reports another)."""
        return self.eval_pooling(cfg)

    def dev_due(self, cfg: TrainConfig, step: int, n: int, world: int = 1) -> bool:
        """Whether to evaluate on the dev task after 1-based ``step`` (default: every ``cfg.dev_every`` steps)."""
        return bool(cfg.dev_every) and step % cfg.dev_every == 0

    # --- training ---------------------------------------------------------------------------------------
    @abstractmethod
    def build(self, cfg: TrainConfig, device: torch.device) -> TrainModule:
        """The train module (on CPU or ``device``); called after seeding, so new heads init reproducibly."""

    @abstractmethod
    def collate(self, cfg: TrainConfig, tokenizer: Any, texts: list[str], rng: np.random.Generator) -> dict:
        """Turn the step's texts into the batch that ``TrainModule.forward`` takes. All randomness (noise,
        masking, sampling) must come from ``rng``, which is seeded per (seed, step, rank): that is what makes
        resumed runs identical."""

    def training_data(self, cfg: TrainConfig, task: str | None, data_root: Path, seed: int) -> TrainingData:
        """Labeled methods (``data_kind = "labeled"``) load their examples here: the target ``task``'s labeled
        training set, or the source their config names (NLI, STSb train). Sentence methods are handed the
        unit's unlabeled corpus by the run grid and never get this call."""
        raise ConfigError(f"method {self.name!r} trains on unlabeled sentences; the run grid supplies them")

    def example_census(self, cfg: TrainConfig, task: str | None, data_root: Path) -> Any:
        """Planning's shortcut for labeled examples that are drawn per seed: an object with ``label``, ``count``,
        ``files``, ``sha256`` and ``clean`` (every text any draw can hold passes :meth:`prepare_examples`' checks;
        then :meth:`check_example_count` is all that is left to check), the same for every seed; None (the
        default): the planner loads and checks the examples of each seed."""
        return None

    def check_example_count(self, cfg: TrainConfig, n: int, min_examples: int) -> None:
        """The count check of :meth:`prepare_examples` alone (for a clean :meth:`example_census`)."""
        raise ConfigError(f"method {self.name!r} trains on unlabeled sentences, not labeled examples")

    def prepare_examples(self, cfg: TrainConfig, examples: list[Any], min_examples: int) -> list[Any]:
        """Labeled methods check and clean their examples before training (sentence corpora are cleaned by
        the loop: stripped, blank lines dropped, long lines clipped)."""
        raise ConfigError(f"method {self.name!r} trains on unlabeled sentences, not labeled examples")

    def filter_corpus(self, cfg: TrainConfig, texts: list[str]) -> list[str]:
        """Method-specific corpus filtering after blank lines are dropped (default: none)."""
        return texts

    def batch_indices(self, cfg: TrainConfig, n: int, step: int, seed: int, rank: int = 0,
                      world: int = 1) -> list[int]:
        """Corpus indices for ``step`` (default: seeded epoch shuffles cut into batches, the last partial one kept
        or dropped by :attr:`keep_partial_batch`; see :func:`epoch_batch`)."""
        return epoch_batch(n, self.sentences_per_step(cfg), step, seed, rank, world, self.keeps_partial(cfg))

    def keeps_partial(self, cfg: TrainConfig) -> bool:
        """Whether ``cfg``'s epochs end with their last, smaller batch (``drop_last``, else the reference's)."""
        return self.keep_partial_batch if cfg.drop_last is None else not cfg.drop_last

    def sentences_per_step(self, cfg: TrainConfig) -> int:
        """Corpus sentences consumed per step and device (for ``epochs`` -> steps)."""
        return cfg.batch_size

    def run_steps(self, cfg: TrainConfig, n: int, world: int = 1) -> int:
        """The steps a run trains: the budget (:meth:`total_steps`), or fewer where ``cfg.stop_at_step`` truncates
        it (the LR schedule stays laid out over the whole budget)."""
        total = self.total_steps(cfg, n, world)
        return total if cfg.stop_at_step is None else min(total, cfg.stop_at_step)

    def total_steps(self, cfg: TrainConfig, n: int, world: int = 1) -> int:
        """The step budget for a corpus of ``n`` sentences: the length the LR schedule is laid out over."""
        if cfg.epochs is None:
            return int(cfg.max_steps)  # type: ignore[arg-type]
        per_epoch = batches_per_epoch(n, self.sentences_per_step(cfg), world, self.keeps_partial(cfg))
        steps = math.ceil(cfg.epochs * per_epoch)
        return min(steps, cfg.max_steps) if cfg.max_steps else steps

    def trainable_parameters(self, module: TrainModule) -> list[tuple[str, nn.Parameter]]:
        """(name, parameter) pairs the optimizer updates; tied parameters appear once."""
        return [(n, p) for n, p in module.named_parameters() if p.requires_grad]

    # --- export -----------------------------------------------------------------------------------------
    def export_module(self, module: TrainModule) -> tuple[nn.Module, Any]:
        """(HF model, tokenizer) saved as the checkpoint; heads, decoders and projectors are left out."""
        return module.encoder.model, module.tokenizer

    def export_extra(self, module: TrainModule, cfg: TrainConfig, out_dir: Path) -> None:
        """Write extra files the encoder needs into the checkpoint being exported (e.g. flow weights)."""

    def method_json(self, cfg: TrainConfig) -> dict[str, Any]:
        """Extra method.json keys read by the encoder (e.g. ``{"prompt": '"{text}" means [MASK].'}``)."""
        return {}

    def check(self) -> None:
        """Contract checks run by the tests: presets exist and build valid configs."""
        missing = [p for p in PRESET_NAMES if p not in self.presets]
        if missing:
            raise ConfigError(f"method {self.name!r} lacks presets {missing}")
        for p in self.presets:
            self.config(p)
        stray = [p for p in self.preset_notes if p not in self.presets]
        if stray:
            raise ConfigError(f"method {self.name!r} has notes for unknown presets {stray}")


def _is_str_seq(x: Any) -> bool:
    return isinstance(x, (list, tuple)) and all(isinstance(i, str) for i in x)


def unique_parameters(named: Iterable[tuple[str, nn.Parameter]]) -> list[tuple[str, nn.Parameter]]:
    """Drop repeated parameter objects (tied weights), keeping the first name."""
    seen: set[int] = set()
    out = []
    for n, p in named:
        if id(p) not in seen:
            seen.add(id(p))
            out.append((n, p))
    return out


KEY_FIELDS = ("model", "pooling", "max_length", "batch_size", "max_steps", "epochs", "lr", "optimizer", "scheduler")


def describe_method(method: Method, all_fields: bool = False, preset: str | None = None) -> list[str]:
    """Lines for `bench methods`: presets with what they change (and their notes), then defaults (method-specific
    + key fields); with ``preset``, that preset's resolved values of the same fields instead of the defaults."""
    import dataclasses

    lines = [f"{method.name}: {method.description} (default preset: {method.default_preset})"]
    for name, values in method.presets.items():
        shown = " ".join(f"{k}={v}" for k, v in values.items()) or "(class defaults)"
        lines.append(f"  preset {name:<9} {shown}")
        if name in method.preset_notes:
            lines.append(f"    note: {method.preset_notes[name]}")
    own = {f.name for f in dataclasses.fields(method.Config)} - {f.name for f in dataclasses.fields(TrainConfig)}
    names = [f.name for f in dataclasses.fields(method.Config)
             if all_fields or f.name in own or f.name in KEY_FIELDS or f.name in ("eps", "dropout", "dev_task", "amp")]
    if preset is None:
        lines.append("  defaults " + " ".join(f"{n}={getattr(method.Config(), n)!r}" for n in names))
    elif preset in method.presets:
        cfg = method.config(preset)
        lines.append(f"  {preset} resolved: eval_pooling={method.eval_pooling(cfg)!r} "
                     + " ".join(f"{n}={getattr(cfg, n)!r}" for n in names))
        lines.append(f"  {preset} trains in: {PRECISION[cfg.amp]} (amp={cfg.amp!r})")
    return lines
