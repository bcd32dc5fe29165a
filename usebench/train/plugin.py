"""The method-plugin contract: what a trainer must define, and the hooks it may override.

A plugin is a :class:`Method` subclass instance enrolled in ``usebench.registry.METHODS``: a frozen config dataclass
(``Config``) with ``presets``, ``build`` (the :class:`TrainModule`, whose ``forward(batch)`` returns the loss) and
``collate`` (texts -> tensors, noise drawn from the given RNG). Every other hook has a default, and a plugin overrides
one only where its reference departs from it. The loop in :mod:`usebench.train.loop` does the rest;
``tests/methods/test_contract.py`` checks every plugin against this contract. What plugins build from lives beside
it: :mod:`usebench.train.backbone` (loading a backbone, :class:`~usebench.train.backbone.SentenceEncoder`),
:mod:`usebench.train.tokenization`, :mod:`usebench.train.sampling` (batches and step budgets),
:mod:`usebench.train.presets` (the presets every method declares) and :mod:`usebench.train.catalog_text`
(`bench methods`).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import nn

from usebench.errors import ConfigError
from usebench.train.backbone import SentenceEncoder
from usebench.train.checkpoint import STWriter, builtin_writer
from usebench.train.config import TrainConfig, preset_config
from usebench.train.sampling import epoch_batch, epoch_steps, keeps_partial

# What a method trains on: unlabeled sentences (given to it by the run grid: a task's in-domain corpus or
# --corpus files) or labeled examples it loads itself (Method.training_data: pairs, graded pairs, NLI triplets).
DataKind = Literal["sentences", "labeled"]
_SENTENCES = "method {!r} trains on unlabeled sentences, not labeled examples"


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


class Method(ABC):
    """A trainer plugin: set the class attributes, define ``build`` and ``collate``, override a hook only where the
    method's reference departs from its default."""

    name: ClassVar[str]
    description: ClassVar[str] = ""  # one line for `bench methods`
    citation: ClassVar[str] = ""  # BibTeX of the paper
    Config: ClassVar[type[TrainConfig]] = TrainConfig  # frozen; every default written once, with its source
    presets: ClassVar[dict[str, dict[str, Any]]] = {}  # at least "paper", "official", "smoke" -> field overrides
    preset_notes: ClassVar[dict[str, str]] = {}  # preset -> where it departs from its source (`bench methods`)
    default_preset: ClassVar[str] = "paper"
    data_kind: ClassVar[DataKind] = "sentences"  # "labeled": the examples come from training_data()
    keep_partial_batch: ClassVar[bool] = False  # an epoch ends with its smaller last batch, as the reference's loader
    continuable: ClassVar[bool] = True  # another stage of a chain may start from this method's checkpoint
    ddp_find_unused_parameters: ClassVar[bool] = False  # some parameters get no gradient in a step
    st_trust_remote_code: ClassVar[bool] = False  # the export names a module class outside sentence_transformers.*
    compile_note: ClassVar[str | None] = None  # why the fast path cannot compile the step (None: it can)
    fixed_batch_rows: ClassVar[bool] = True  # every batch has the same rows (a partial last one aside)
    eager_steps: ClassVar[int] = 0  # steps that stay eager before the compiled step takes over
    first_batch_init: ClassVar[bool] = False  # the module initialises part of itself from its first batch (ActNorm)
    test_overrides: ClassVar[dict[str, Any]] = {}  # extra config for the tiny-BERT contract test

    @abstractmethod
    def build(self, cfg: TrainConfig, device: torch.device) -> TrainModule:
        """The train module (encoder + heads); called after seeding, so new heads initialise reproducibly."""

    @abstractmethod
    def collate(self, cfg: TrainConfig, tokenizer: Any, texts: list[str], rng: np.random.Generator) -> dict:
        """The step's texts as the batch ``forward`` takes; all noise from ``rng`` (seeded per seed, step, rank)."""

    def filter_corpus(self, cfg: TrainConfig, texts: list[str]) -> list[str]:
        """Default: the corpus as the loop cleaned it. Override to refuse lines the method cannot train on."""
        return texts

    def sentences_per_step(self, cfg: TrainConfig) -> int:
        """Default: ``batch_size``. Override when a step reads another number of corpus sentences (CT)."""
        return cfg.batch_size

    def batch_indices(self, cfg: TrainConfig, n: int, step: int, seed: int, rank: int = 0,
                      world: int = 1) -> list[int]:
        """Default: seeded epoch shuffles cut into batches. Override when the reference samples otherwise."""
        partial = keeps_partial(cfg, self.keep_partial_batch)
        return epoch_batch(n, self.sentences_per_step(cfg), step, seed, rank, world, partial)

    def total_steps(self, cfg: TrainConfig, n: int, world: int = 1) -> int:
        """Default: ``max_steps``, or ``epochs`` of batches. Override when the reference counts its budget otherwise."""
        return epoch_steps(cfg, n, self.sentences_per_step(cfg), world,
                           keeps_partial(cfg, self.keep_partial_batch))

    def dev_due(self, cfg: TrainConfig, step: int, n: int, world: int = 1) -> bool:
        """Default: every ``dev_every`` steps. Override for the reference's evaluation schedule (epoch ends)."""
        return bool(cfg.dev_every) and step % cfg.dev_every == 0

    def trainable_parameters(self, module: TrainModule) -> list[tuple[str, nn.Parameter]]:
        """Default: every parameter that requires grad (tied ones once). Override to train a subset."""
        return [(n, p) for n, p in module.named_parameters() if p.requires_grad]

    def backbone_defaults(self, cfg: TrainConfig, user: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
        """Default: nothing. Override to fill in, at plan time and with a note, what a backbone needs (TSDAE)."""
        return {}, None

    def eval_pooling(self, cfg: TrainConfig) -> str:
        """Default: ``cfg.pooling``. Override when the export pools otherwise than training does."""
        return cfg.pooling

    def dev_pooling(self, cfg: TrainConfig) -> str:
        """Default: the export's pooling. Override when the reference selects with another (ConSERT)."""
        return self.eval_pooling(cfg)

    def pooling_writer(self, cfg: TrainConfig) -> STWriter:
        """Default: the built-in sentence-transformers pooling. Override for a pooling with state of its own."""
        return builtin_writer(self.eval_pooling(cfg))

    def export_module(self, module: TrainModule) -> tuple[nn.Module, Any]:
        """Default: the encoder's HF model and tokenizer. Override when the export is another model (TSDAE)."""
        return module.encoder.model, module.tokenizer

    def export_extra(self, module: TrainModule, cfg: TrainConfig, out_dir: Path) -> None:
        """Default: nothing. Override to write files the export's pooling reads (flow weights, a prompt)."""

    def method_json(self, cfg: TrainConfig) -> dict[str, Any]:
        """Default: no keys. Override with what the encoder reads at evaluation (a prompt, a pooler factory)."""
        return {}

    # Labeled methods (data_kind = "labeled"); the run grid hands sentence methods their corpus, and the loop cleans it.
    def training_data(self, cfg: TrainConfig, task: str | None, data_root: Path, seed: int) -> TrainingData:
        """Default: refused. Labeled methods override: ``task``'s labeled set, or the source the config names."""
        raise ConfigError(f"method {self.name!r} trains on unlabeled sentences; the run grid supplies them")

    def prepare_examples(self, cfg: TrainConfig, examples: list[Any], min_examples: int) -> list[Any]:
        """Default: refused. Labeled methods override: check and clean the examples before training."""
        raise ConfigError(_SENTENCES.format(self.name))

    def check_example_count(self, cfg: TrainConfig, n: int, min_examples: int) -> None:
        """Default: refused. Labeled methods override: the count check of :meth:`prepare_examples` alone."""
        raise ConfigError(_SENTENCES.format(self.name))

    def example_census(self, cfg: TrainConfig, task: str | None, data_root: Path) -> Any:
        """Default: None (the planner checks each seed's). Override with a census every seed shares (a Census)."""
        return None

    def config(self, preset: str | None = None, overrides: Mapping[str, Any] | Sequence[str] | None = None,
               **kwargs: Any) -> TrainConfig:
        """Not a hook: ``Config`` from a preset (default ``default_preset``) plus overrides: a dict, ``["k=v"]``
        strings, or keywords. Unknown preset names and keys raise ConfigError."""
        return preset_config(self.Config, self.presets, preset or self.default_preset, overrides, kwargs)
