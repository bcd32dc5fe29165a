"""Supervised SBERT stages (Reimers & Gurevych 2019) on labeled pairs: the TSDAE paper's in-domain upper bound,
its pre-training curves (Fig. 2, App. E) and the NLI+STS stages of its domain-adaptation rows (§4, Table 2).

- ``sbert-mnrl``: MultipleNegativesRankingLoss (Henderson et al. 2017): CE over ``scale * cos(a_i, b_j)`` with
  target i, over the batch's positives and, when the examples carry a third text, their hard negatives
  (paper §5.1's J_MNRL; sentence-transformers ``losses/MultipleNegativesRankingLoss.py``).
- ``sbert-cosine``: CosineSimilarityLoss: MSE between ``cos(u, v)`` and the pair's label (paper §5.1, "MSE loss"
  on TwitterPara's graded pairs and on STSb).
- ``sbert-nli`` and ``sbert-stsb``: the two stages of the SBERT-base-nli-stsb-v2 recipe the domain-adaptation
  rows use (``--methods nli-sts`` is the chain ``sbert-nli>sbert-stsb``, see ``usebench/plan/settings.py``):
  AllNLI entailment pairs with contradiction hard negatives under MNRL, then STSb train under cosine MSE.

Labeled examples come from ``train_data`` (:mod:`usebench.methods.parts.labeled_data`); ``labeled_size`` (set by the run grid's
``--labeled-sizes``) keeps a seeded, nested subset. Each encoder forward encodes one column, as
sentence-transformers does; a batch drops an example whose text is already in it (MNRL would count it as a
negative of itself; sentence-transformers' NoDuplicates loader defers such an example to a later batch).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch

from usebench.errors import BenchError, ConfigError
from usebench.registry import METHODS
from usebench.train.config import TrainConfig
from usebench.train.backbone import SentenceEncoder, load_backbone, set_dropout
from usebench.train.plugin import Method, TrainingData, TrainModule
from usebench.train.sampling import batches_per_epoch, keeps_partial
from usebench.train.tokenization import tokenize
from usebench.methods.parts.labeled_data import Census, Kind, census_labeled, labeled_training_data
from usebench.methods.parts.labeled_examples import all_clean, check_example, without_repeats
from usebench.methods.parts.losses import cosine_mse_loss, mnrl_loss

CITATION = ("@inproceedings{reimers-2019-sentence-bert, title={Sentence-BERT: Sentence Embeddings using Siamese "
            "BERT-Networks}, author={Reimers, Nils and Gurevych, Iryna}, booktitle={EMNLP-IJCNLP}, year={2019}}")


@dataclass(frozen=True)
class SupervisedConfig(TrainConfig):
    """TSDAE paper App. B: sentence-transformers v0.3.8, 10 epochs, at most 20K steps, batch 64, cosine
    similarity, early stopping on the dev split; the rest are that version's ``SentenceTransformer.fit``
    defaults (transformers' AdamW lr 2e-5, eps 1e-6, correct_bias=False, weight decay 0.01, WarmupLinear,
    max_grad_norm 1) and ``models.Transformer``/``models.Pooling`` defaults (128 tokens, mean pooling)."""

    train_data: str = "target"  # a source of usebench.methods.parts.labeled_data (target | allnli | stsb | twitter-url) or a folder
    labeled_size: int | None = None  # --labeled-sizes: a seeded, nested subset of this many examples
    dev_unit: Literal["steps", "epochs"] = "steps"  # dev_every counts steps, or epochs (fractions allowed)
    dev_every: float = 0  # type: ignore[assignment]  # >0: evaluate dev_task every dev_every dev_units
    pooling: str = "mean"  # [ST v0.3.8] models.Pooling default (mean tokens)
    max_length: int = 128  # [ST v0.3.8] models.Transformer max_seq_length default
    batch_size: int = 64  # paper App. B
    epochs: float | None = 10.0  # paper App. B
    max_steps: int | None = 20_000  # paper App. B: at most 20K steps
    lr: float = 2e-5  # [ST v0.3.8] fit optimizer_params lr
    optimizer: Literal["adamw", "rmsprop", "bert_adam"] = "bert_adam"  # transformers AdamW, correct_bias=False
    eps: float = 1e-6  # [ST v0.3.8] fit optimizer_params eps
    weight_decay: float = 0.01  # [ST v0.3.8] fit weight_decay (not on bias / LayerNorm)
    scheduler: Literal["constant", "linear", "warmup_constant", "piecewise"] = "linear"  # [ST] WarmupLinear
    warmup_ratio: float = 0.1  # [ST examples/training/*] warmup = 10% of the training steps
    grad_clip: float | None = 1.0  # [ST v0.3.8] fit max_grad_norm

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.labeled_size is not None and self.labeled_size < 1:
            raise ConfigError(f"labeled_size must be >= 1 or None, got {self.labeled_size}")
        if self.dev_every < 0 or (self.dev_unit == "steps" and self.dev_every != int(self.dev_every)):
            raise ConfigError(f"dev_every={self.dev_every}: expected a whole number of steps >= 0 (or set "
                              f"dev_unit=epochs for fractions of an epoch)")
        if not self.train_data:
            raise ConfigError("train_data is empty (a source: target, allnli, stsb, twitter-url, or a folder)")


@dataclass(frozen=True)
class MNRLConfig(SupervisedConfig):
    """MNRL: cosine times ``scale`` ([ST] MultipleNegativesRankingLoss default 20)."""

    scale: float = 20.0  # [ST] MultipleNegativesRankingLoss(scale=20.0), similarity_fct=cos_sim
    hard_negatives: bool = True  # use the examples' third text (NLI contradictions) as extra negatives

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.scale <= 0:
            raise ConfigError(f"scale must be > 0, got {self.scale}")


class PairModule(TrainModule):
    """The encoder (backbone + the config's pooling) and a pair loss over its columns."""

    def __init__(self, cfg: SupervisedConfig, loss: Literal["mnrl", "cosine"]):
        super().__init__()
        model, self.tokenizer, _ = load_backbone(cfg.model)
        set_dropout(model, cfg.dropout)
        self.encoder = SentenceEncoder(model, cfg.pooling)
        self.loss, self.scale = loss, getattr(cfg, "scale", 1.0)

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        first = self.encoder(**batch["texts"][0])  # (bsz, dim)
        rest = [self.encoder(**cols) for cols in batch["texts"][1:]]  # each (bsz, dim)
        if self.loss == "mnrl":
            return mnrl_loss(first, torch.cat(rest, dim=0), self.scale)
        return cosine_mse_loss(first, rest[0], batch["labels"])


class SupervisedMethod(Method):
    """Shared plumbing of the labeled stages: data loading, the subset, example checks, collate, epochs and
    dev period as sentence-transformers' ``fit`` has them."""

    data_kind = "labeled"
    citation = CITATION
    example_kind: ClassVar[Kind] = "pairs"
    loss_name: ClassVar[Literal["mnrl", "cosine"]] = "mnrl"
    # [ST v0.3.8] DataLoader(shuffle=True, batch_size=...) keeps the last partial batch of an epoch (drop_last
    # False): ceil(n / batch) steps per epoch, and fewer examples than a batch still train (one step an epoch).
    keep_partial_batch: ClassVar[bool] = True

    def build(self, cfg: SupervisedConfig, device: torch.device) -> PairModule:
        return PairModule(cfg, self.loss_name)

    def training_data(self, cfg: SupervisedConfig, task: str | None, data_root: Path, seed: int) -> TrainingData:
        """The ``train_data`` examples, cut to ``labeled_size`` (seeded by ``seed``, nested across sizes)."""
        return labeled_training_data(cfg.train_data, task, data_root, self.example_kind, cfg.labeled_size, seed,
                                     hard_negatives=getattr(cfg, "hard_negatives", False))

    def example_census(self, cfg: SupervisedConfig, task: str | None, data_root: Path) -> Census:
        """For planning, what every seed's examples are (``cfg`` without ``labeled_size``): AllNLI's triplets
        counted without drawing them; any other source loaded once and checked example by example, so that a
        seeded subset of it is known clean without checking it again."""
        drawn = census_labeled(cfg.train_data, data_root, self.example_kind,
                               hard_negatives=getattr(cfg, "hard_negatives", False))
        if drawn is not None:
            return drawn
        data = self.training_data(cfg, task, data_root, 0)  # the seed draws nothing here
        return Census(data.label, len(data.examples), data.files, data.sha256, all_clean(
            data.examples, lambda i, ex: self._check(cfg, i, ex), self.example_kind == "graded",
            getattr(cfg, "hard_negatives", True)))

    def prepare_examples(self, cfg: SupervisedConfig, examples: list[Any], min_examples: int) -> list[Any]:
        """Check every example's shape and clip long texts; fewer examples than a batch is an error."""
        out = [self._check(cfg, i, ex) for i, ex in enumerate(examples)]
        widths = {len(ex) for ex in out}
        if len(widths) > 1:  # in-batch MNRL needs the same columns in every example
            raise BenchError(f"{self.name}: the labeled examples mix pairs and triplets; give every example a hard "
                             f"negative or none (--set hard_negatives=false drops them)")
        self.check_example_count(cfg, len(out), min_examples)
        return out

    def check_example_count(self, cfg: SupervisedConfig, n: int, min_examples: int) -> None:
        """Fewer than ``min_examples`` (a batch per process) is an error, unless the reference trains a partial
        batch (one process)."""
        world = max(1, min_examples // self.sentences_per_step(cfg))
        if keeps_partial(cfg, self.keep_partial_batch) and world == 1:
            min_examples = 1  # the reference's DataLoader trains on a partial batch
        if n < min_examples:
            raise BenchError(f"{self.name}: {n} labeled examples, fewer than one batch ({min_examples}); "
                             f"lower batch_size or use more labeled data")

    def _check(self, cfg: SupervisedConfig, i: int, ex: Any) -> tuple:
        return check_example(self.name, i, ex, graded=self.example_kind == "graded",
                             hard_negatives=getattr(cfg, "hard_negatives", True), max_chars=cfg.max_chars)

    def collate(self, cfg: SupervisedConfig, tokenizer: Any, texts: list[Any], rng: np.random.Generator) -> dict:
        examples = without_repeats(list(texts)) if self.loss_name == "mnrl" else list(texts)
        n_cols = 2 if self.example_kind == "graded" else len(examples[0])  # prepare_examples made them uniform
        batch: dict[str, Any] = {"texts": [tokenize(tokenizer, [ex[c] for ex in examples], cfg.max_length)
                                           for c in range(n_cols)]}
        if self.example_kind == "graded":
            batch["labels"] = torch.tensor([ex[2] for ex in examples], dtype=torch.float32)
        return batch

    def steps_per_epoch(self, cfg: SupervisedConfig, n: int, world: int = 1) -> int:
        return batches_per_epoch(n, cfg.batch_size, world, keeps_partial(cfg, self.keep_partial_batch))

    def dev_due(self, cfg: SupervisedConfig, step: int, n: int, world: int = 1) -> bool:  # type: ignore[override]
        """As [ST v0.3.8] ``fit``: every ``evaluation_steps`` steps *of an epoch* (``dev_every`` steps, or
        ``int(dev_every x steps per epoch)`` with ``dev_unit=epochs``) and at the end of every epoch; and at the
        last step, so a run cut by ``max_steps`` (App. B: 20K) has its last stretch among the candidates."""
        if not cfg.dev_every:
            return False
        per_epoch = self.steps_per_epoch(cfg, n, world)
        if step % per_epoch == 0 or step == self.total_steps(cfg, n, world):
            return True
        every = int(cfg.dev_every) if cfg.dev_unit == "steps" else int(cfg.dev_every * per_epoch)
        return every > 0 and (step % per_epoch) % every == 0


SMOKE = {"model": "minilm", "epochs": None, "max_steps": 100, "batch_size": 16, "log_every": 10, "save_every": 50,
         "dev_task": None, "dev_every": 0}
# Paper App. B, plus the early stopping it names: the best checkpoint on the target task's dev split, checked
# at the end of every epoch as sentence-transformers' fit does (evaluation_steps=0). The run grid replaces
# dev_task "target" with the unit's target task.
# Precision: fp32, sentence-transformers v0.3.8's fit (use_amp=False).
APP_B = {"model": "bert-base-uncased", "dev_task": "target", "dev_every": 1, "dev_unit": "epochs", "amp": "off"}
APP_B_NOTE = ("App. B gives epochs, step cap, batch size and early stopping; lr, eps, weight decay, WarmupLinear "
              "and pooling are sentence-transformers v0.3.8 fit/Pooling defaults, warm-up 10% as its examples; "
              "dev = the target task's dev split at every epoch's end (none for TwitterPara: last checkpoint)")


class SbertMNRL(SupervisedMethod):
    """SBERT with MultipleNegativesRankingLoss on relevant pairs (optional hard negatives)."""

    fixed_batch_rows = False  # collate drops repeated texts: a batch's rows vary (a dynamic dimension when compiled)

    name = "sbert-mnrl"
    description = "supervised SBERT: MNRL (cos x 20, in-batch + optional hard negatives) on labeled pairs"
    Config = MNRLConfig
    example_kind = "pairs"
    loss_name = "mnrl"
    # The sentence-transformers fit defaults App. B names are the only recipe: official = paper.
    presets = {"paper": APP_B, "official": APP_B, "smoke": SMOKE}
    preset_notes = {"paper": APP_B_NOTE}


class SbertCosine(SupervisedMethod):
    """SBERT with CosineSimilarityLoss (MSE of cosine vs label) on graded pairs."""

    name = "sbert-cosine"
    description = "supervised SBERT: cosine-similarity MSE on graded pairs (TwitterPara, STSb)"
    Config = SupervisedConfig
    example_kind = "graded"
    loss_name = "cosine"
    presets = {"paper": APP_B, "official": APP_B, "smoke": SMOKE}
    preset_notes = {"paper": APP_B_NOTE}


# [ST] examples/training/nli/training_nli_v2.py (the SBERT-base-nli-v2 recipe): 1 epoch, batch 128, 75 tokens,
# warm-up 10%, evaluation on STSb dev every 10% of the epoch, fit defaults otherwise. Its NoDuplicatesDataLoader
# yields floor(n / batch) full batches (no partial one).
# fp32: the examples of the v2 models' time pass use_amp=False (v2.2.2; newer ones default to fp16=True).
NLI_V2 = {"model": "bert-base-uncased", "train_data": "allnli", "epochs": 1.0, "max_steps": None,
          "batch_size": 128, "max_length": 75, "dev_task": "stsb", "dev_every": 0.1, "dev_unit": "epochs", "amp": "off"}
# [ST] examples/training/sts/training_stsbenchmark_continue_training.py (the -stsb-v2 step): 4 epochs,
# batch 16, warm-up 10%, evaluation on STSb dev (evaluation_steps 1000 > an epoch's 360 steps, the last one
# partial: at each epoch's end).
STSB_CONTINUE = {"model": "bert-base-uncased", "train_data": "stsb", "epochs": 4.0, "max_steps": None,
                 "batch_size": 16, "dev_task": "stsb", "dev_every": 1, "dev_unit": "epochs", "amp": "off"}


class SbertNLI(SbertMNRL):
    """Stage 1 of nli-sts: AllNLI (entailment positives, contradiction hard negatives) under MNRL."""

    name = "sbert-nli"
    description = "SBERT-nli-v2 stage: MNRL on AllNLI with contradiction hard negatives (first stage of nli-sts)"
    keep_partial_batch = False  # [ST] NoDuplicatesDataLoader: len = floor(n / batch), full batches only
    presets = {"paper": NLI_V2, "official": NLI_V2, "smoke": {**SMOKE, "train_data": "allnli"}}
    preset_notes = {"paper": "the paper names the SBERT-nli-stsb recipe, not its settings: these are "
                             "sentence-transformers' training_nli_v2.py example values"}


class SbertSTSb(SbertCosine):
    """Stage 2 of nli-sts: STSb train under cosine MSE."""

    name = "sbert-stsb"
    description = "SBERT-nli-stsb-v2 stage: cosine MSE on STSb train (second stage of nli-sts)"
    presets = {"paper": STSB_CONTINUE, "official": STSB_CONTINUE, "smoke": {**SMOKE, "train_data": "stsb"}}
    preset_notes = {"paper": "the paper names the SBERT-nli-stsb recipe, not its settings: these are "
                             "sentence-transformers' training_stsbenchmark_continue_training.py example values"}


for _m in (SbertMNRL(), SbertCosine(), SbertNLI(), SbertSTSb()):
    METHODS.add(_m.name, _m)
