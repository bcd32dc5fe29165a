"""CT (Contrastive Tension) and CT with in-batch negatives (``ct``, ``ct-ibn``).

Carlsson, Gyllensten, Gogoulou, Hellqvist, Sahlgren 2021, "Semantic Re-tuning with Contrastive Tension", ICLR.
Reference code: FreddeFrallan/Contrastive-Tension (``ContrastiveTension/Training.py``,
``ContrastiveTensionModel.py``, TF2); sentence-transformers ``losses/ContrastiveTensionLoss.py``
(``ContrastiveTensionLoss``, ``ContrastiveTensionLossInBatchNegatives``, ``ContrastiveTensionDataLoader``).

Two independent copies of the checkpoint, M1 and M2, are both trained; embeddings are masked mean pooling.
``ct`` scores a pair by the raw dot product M1(a)·M2(b) and trains BCE-with-logits, label 1 for identical and 0
for different sentences. ``variant=official`` (default): groups of K+1 rows, row 0 the same random sentence for
both models, rows 1..K a different random sentence for each model (2K fresh negatives per positive, sampled with
replacement), BCE mean, dropout off (the TF code calls the models with ``training=False``). ``variant=st``:
the sentence-transformers data loader (shuffled stream, every (K+1)-th pair positive, a negative pair is two
consecutive sentences), BCE sum, dropout on. ``ct-ibn`` (UKP's variant, not in the paper): both models encode the
same B sentences; S = sim(M1(s_i), M2(s_j)) * exp(logit_scale), logit_scale learnable; sim = cosine and scale 20
(the loss's defaults, the smoke preset) or the raw dot product and scale 1 (the [ST] example's
``ContrastiveTensionLossInBatchNegatives(model, scale=1, similarity_fct=util.dot_score)``: paper, official);
loss = (CE(S) + CE(S^T)) / 2 with the diagonal as targets. M2 is exported (the TSDAE paper evaluates the second
encoder; sentence-transformers keeps M2 as the inference model); ``export_model=model1`` picks the other.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from usebench.recipes.laptop_presets import BATCH8_CURVE, BATCH8_STEPS, laptop_note, laptop_preset
from usebench.train.config import TrainConfig
from usebench.errors import ConfigError
from usebench.train.backbone import SentenceEncoder, load_backbone
from usebench.train.plugin import Method, TrainModule
from usebench.train.tokenization import tokenize
from usebench.registry import METHODS
from usebench.methods.parts.losses import ct_bce, ct_in_batch

CITATION = ("@inproceedings{carlsson2021semantic, title={Semantic Re-tuning with Contrastive Tension}, "
            "author={Carlsson, Fredrik and Gyllensten, Amaru Cuba and Gogoulou, Evangelia and Hellqvist, "
            "Erik Ylip{\\\"a}{\\\"a} and Sahlgren, Magnus}, booktitle={ICLR}, year={2021}}")
CT_MILESTONES = (500, 1000, 1500, 2000)  # [CTo] Training.py PiecewiseConstantDecay boundaries
CT_FACTORS = (1.0, 0.8, 0.6, 0.4, 0.2)  # values 1e-5, 8e-6, 6e-6, 4e-6, 2e-6 as multiples of lr 1e-5
Schedulers = Literal["constant", "linear", "warmup_constant", "piecewise"]
Optimizers = Literal["adamw", "rmsprop", "bert_adam"]


@dataclass(frozen=True)
class CTConfig(TrainConfig):
    """CT settings; defaults are the official code's ([CTo] Training.py / ExampleTraining.py)."""

    variant: Literal["official", "st"] = "official"
    negatives_k: int = 7  # [CTo] negative_k 7 (= [ST] pos_neg_ratio 8)
    reduction: Literal["mean", "sum"] = "mean"  # [CTo] tf BinaryCrossentropy (mean); [ST] reduction="sum"
    export_model: Literal["model1", "model2"] = "model2"  # TSDAE paper App. B: the second encoder
    pooling: str = "mean"  # [CTo] masked mean pooling
    dropout: bool = False  # [CTo] training=False
    batch_size: int = 16  # [CTo] batch_size 16 (2 groups of 1 positive + 7 negatives)
    max_length: int = 75  # [CTo] max_sent_len 75
    optimizer: Optimizers = "rmsprop"
    rmsprop_alpha: float = 0.9  # tf.optimizers.RMSprop defaults: rho 0.9, epsilon 1e-7
    eps: float = 1e-7
    lr: float = 1e-5
    scheduler: Schedulers = "piecewise"
    lr_milestones: tuple[int, ...] = CT_MILESTONES
    lr_factors: tuple[float, ...] = CT_FACTORS
    grad_clip: float | None = None  # neither reference clips
    max_steps: int | None = 5000  # [CTo] 10 "epochs" x 500 batches

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.negatives_k < 1 or self.batch_size % (self.negatives_k + 1):
            raise ConfigError(f"batch_size ({self.batch_size}) must be a multiple of negatives_k + 1 "
                              f"({self.negatives_k + 1}): each group is 1 positive + K negatives")


@dataclass(frozen=True)
class CTIBNConfig(TrainConfig):
    """CT with in-batch negatives; defaults are the [ST] example's (CT_In-Batch_Negatives)."""

    similarity: Literal["cos", "dot"] = "cos"  # [ST] loss default cos_sim (its example passes util.dot_score)
    logit_scale: float = 20.0  # [ST] loss default scale 20 (the example passes 1), stored as ln(scale)
    learn_scale: bool = True  # [ST] old fit optimises the loss module's parameters, so the scale learns
    export_model: Literal["model1", "model2"] = "model2"
    pooling: str = "mean"
    batch_size: int = 128  # [ST] example
    max_length: int = 75
    lr: float = 5e-5
    weight_decay: float = 0.01  # [ST] old fit default
    eps: float = 1e-6  # [ST] old fit: transformers.AdamW (default eps 1e-6; the example passes only lr)
    scheduler: Schedulers = "linear"  # [ST] old fit WarmupLinear
    warmup_steps: int = 1000  # [ST] example

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.logit_scale <= 0:
            raise ConfigError(f"logit_scale must be > 0, got {self.logit_scale}")


class CTModule(TrainModule):
    """Two independently trained encoders M1, M2 from the same checkpoint."""

    def __init__(self, cfg: CTConfig | CTIBNConfig):
        super().__init__()
        m1, self.tokenizer, _ = load_backbone(cfg.model, dropout=cfg.dropout)
        m2, _, _ = load_backbone(cfg.model, dropout=cfg.dropout)
        self.model1 = SentenceEncoder(m1, cfg.pooling)
        self.model2 = SentenceEncoder(m2, cfg.pooling)
        self.export_which = cfg.export_model
        self.in_batch = isinstance(cfg, CTIBNConfig)
        if self.in_batch:
            self.log_scale = nn.Parameter(torch.tensor(math.log(cfg.logit_scale)), requires_grad=cfg.learn_scale)
            self.similarity = cfg.similarity
        else:
            self.reduction = cfg.reduction

    @property
    def encoder(self) -> SentenceEncoder:  # type: ignore[override]
        """The exported encoder (M2 unless ``export_model=model1``)."""
        return self.model2 if self.export_which == "model2" else self.model1

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        if self.in_batch:
            loss = ct_in_batch(self.model1(**batch["a"]), self.model2(**batch["a"]), self.log_scale, self.similarity)
            return {"loss": loss, "scale": self.log_scale.detach().exp()}
        return {"loss": ct_bce(self.model1(**batch["a"]), self.model2(**batch["b"]), batch["labels"], self.reduction)}


def official_layout(indices: list[int], k: int) -> tuple[list[int], list[int], list[int]]:
    """[CTo] _orderBatchSamples: per group, (positive, K negatives for M1) / (positive, K others for M2).

    ``indices`` holds, per group, 1 positive then 2K negatives. Returns (M1 rows, M2 rows, labels)."""
    a, b, labels = [], [], []
    for g in range(0, len(indices), 2 * k + 1):
        pos, negs = indices[g], indices[g + 1 : g + 1 + 2 * k]
        a += [pos] + negs[:k]
        b += [pos] + negs[k:]
        labels += [1] + [0] * k
    return a, b, labels


def st_layout(indices: list[int], k: int, batch_size: int) -> tuple[list[int], list[int], list[int]]:
    """[ST] ContrastiveTensionDataLoader: pair i is positive iff i % (K+1) == 0, else two consecutive sentences."""
    it = iter(indices)
    a, b, labels = [], [], []
    for i in range(batch_size):
        s1 = next(it)
        positive = i % (k + 1) == 0
        a.append(s1)
        b.append(s1 if positive else next(it))
        labels.append(int(positive))
    return a, b, labels


class CT(Method):
    """Contrastive Tension trainer plugin (two encoders, BCE on dot products)."""

    name = "ct"
    description = "Contrastive Tension: two encoders, BCE on dot products, RMSprop + piecewise LR; exports M2"
    citation = CITATION
    Config = CTConfig
    default_preset = "paper"
    ddp_find_unused_parameters = False
    presets = {
        # TSDAE paper App. B: bert-base-uncased, 100K steps, bs 8, RMSprop lr 1e-5 piecewise, mean pooling, M2.
        # The paper's implementation was PyTorch: torch RMSprop defaults (alpha 0.99, eps 1e-8).
        "paper": {"model": "bert-base-uncased", "max_steps": 100_000, "batch_size": 8, "rmsprop_alpha": 0.99,
                  "eps": 1e-8, "amp": "off"},  # fp32: [CTo] and [ST] train_stsb_ct.py (use_amp=False)
        # [CTo]: bs 16 (K=7), 10 x 500 batches, max_len 75, Keras RMSprop, piecewise LR, no dropout, BCE mean;
        # after each 500-batch "epoch" it keeps the better model on STSb-dev (here: the exported M2 is probed).
        "official": {"model": "bert-base-uncased", "dev_task": "stsb", "dev_every": 500, "amp": "off"},  # TF fp32
        # [ST] train_stsb_ct.py: BCE sum, dropout on, consecutive-pair negatives, RMSprop lr 1e-5 linear decay.
        "st": {"model": "distilbert-base-uncased", "variant": "st", "reduction": "sum", "dropout": True,
               "scheduler": "linear", "rmsprop_alpha": 0.99, "eps": 1e-8, "epochs": 1.0, "max_steps": None,
               "amp": "off"},  # use_amp=False
        "smoke": {"model": "minilm", "max_steps": 200, "max_length": 64, "log_every": 20, "save_every": 100},
        # The CPU-scale recipe: App. B on the packaged MiniLM, 100K steps truncated at 500; the piecewise LR is
        # App. B's in steps (1e-5 for steps 1-500), so the whole run takes its first rate.
        "laptop": laptop_preset({"max_steps": 100_000, "batch_size": 8, "rmsprop_alpha": 0.99, "eps": 1e-8},
                                BATCH8_STEPS, BATCH8_CURVE),
    }
    preset_notes = {
        "laptop": laptop_note(Config(**presets["laptop"])) +
                  f"App. B's batch 8 (1 positive + 7 negatives), RMSprop, mean pooling, M2; 100K "
                  f"steps, stopped after {BATCH8_STEPS}: all within the piecewise schedule's first segment (1e-5 for "
                  "steps 1-500)",
        "paper": "App. B gives budget, optimizer, LR schedule, pooling and M2; the rest is the official code's: "
                 "groups of 1 positive + 7 negatives (one group per batch of 8), BCE mean, dropout off, max length "
                 "75; RMSprop with torch's defaults (alpha 0.99, eps 1e-8) since the paper's code was PyTorch",
        "official": "the exported M2 is probed on STSb-dev every 500 steps (the TF code compares both models)",
    }

    def sentences_per_step(self, cfg: CTConfig) -> int:
        groups = cfg.batch_size // (cfg.negatives_k + 1)
        if cfg.variant == "official":
            return groups * (1 + 2 * cfg.negatives_k)
        return 2 * cfg.batch_size - groups

    def batch_indices(self, cfg: CTConfig, n: int, step: int, seed: int, rank: int = 0, world: int = 1) -> list[int]:
        if cfg.variant == "st":
            return super().batch_indices(cfg, n, step, seed, rank, world)
        # [CTo] samples positives and negatives uniformly with replacement, independently for every batch.
        rng = np.random.default_rng([seed, step, rank, 0xC7])
        return rng.integers(0, n, self.sentences_per_step(cfg)).tolist()

    def build(self, cfg: CTConfig, device: torch.device) -> CTModule:
        return CTModule(cfg)

    def collate(self, cfg: CTConfig, tokenizer: Any, texts: list[str], rng: np.random.Generator) -> dict:
        pos = list(range(len(texts)))
        layout = official_layout(pos, cfg.negatives_k) if cfg.variant == "official" else \
            st_layout(pos, cfg.negatives_k, cfg.batch_size)
        a, b, labels = layout
        return {"a": tokenize(tokenizer, [texts[i] for i in a], cfg.max_length),
                "b": tokenize(tokenizer, [texts[i] for i in b], cfg.max_length),
                "labels": torch.tensor(labels, dtype=torch.float32)}


class CTIBN(CT):
    """CT with in-batch negatives (symmetric InfoNCE between M1 and M2)."""

    name = "ct-ibn"
    description = "CT with in-batch negatives: symmetric InfoNCE of sim(M1, M2) x a learnable scale"
    Config = CTIBNConfig
    presets = {
        # Not in the TSDAE paper; its budget (100K steps, bs 8 would starve in-batch negatives) does not carry
        # over, so `paper` = the [ST] example (bert-base-uncased instead of distilbert, as the paper's base).
        "paper": {"model": "bert-base-uncased", "epochs": 1.0, "max_steps": None, "similarity": "dot",
                  "logit_scale": 1.0, "amp": "fp16"},  # the example's use_amp=True
        # [ST] examples/.../CT_In-Batch_Negatives/train_stsb_ct-improved.py: distilbert, bs 128, AdamW lr 5e-5,
        # warm-up 1000, max_len 75, mean pooling, dot product with scale 1; STSb-dev every 1000 steps, best kept.
        "official": {"model": "distilbert-base-uncased", "epochs": 1.0, "max_steps": None, "similarity": "dot",
                     "logit_scale": 1.0, "dev_task": "stsb", "dev_every": 1000, "amp": "fp16"},  # use_amp=True
        "smoke": {"model": "minilm", "max_steps": 200, "batch_size": 32, "max_length": 64, "warmup_steps": 20,
                  "log_every": 20, "save_every": 100},
    }
    preset_notes = {
        "paper": "not in the TSDAE paper: the [ST] example's settings (dot product, scale 1; old fit: transformers "
                 "AdamW eps 1e-6, wd 0.01, 1000 warm-up + linear decay) on bert-base-uncased instead of distilbert, "
                 "without the example's STSb-dev selection (App. B uses none)",
        "smoke": "the loss's defaults: cosine similarity, scale 20",
    }

    def sentences_per_step(self, cfg: CTIBNConfig) -> int:
        return cfg.batch_size

    def dev_due(self, cfg: CTIBNConfig, step: int, n: int, world: int = 1) -> bool:  # type: ignore[override]
        """The old fit evaluates every ``evaluation_steps`` and again at the end of each epoch (drop_last)."""
        per_epoch = max(1, n // (cfg.batch_size * world))
        return bool(cfg.dev_every) and (step % cfg.dev_every == 0 or step % per_epoch == 0)

    def batch_indices(self, cfg: CTIBNConfig, n: int, step: int, seed: int, rank: int = 0,
                      world: int = 1) -> list[int]:
        return Method.batch_indices(self, cfg, n, step, seed, rank, world)

    def collate(self, cfg: CTIBNConfig, tokenizer: Any, texts: list[str], rng: np.random.Generator) -> dict:
        return {"a": tokenize(tokenizer, texts, cfg.max_length)}


METHODS.add("ct", CT())
METHODS.add("ct-ibn", CTIBN())
