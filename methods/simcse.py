"""SimCSE, unsupervised: two dropout views of each sentence, in-batch InfoNCE.

Gao, Yao, Chen 2021, "SimCSE: Simple Contrastive Learning of Sentence Embeddings", EMNLP.
Reference code: princeton-nlp/SimCSE (``simcse/models.py``, ``run_unsup_example.sh``); sentence-transformers
``MultipleNegativesRankingLoss`` example (``examples/.../SimCSE/train_stsb_simcse.py``).

``variant=official``: the batch holds each sentence twice (rows 2i, 2i+1), one encoder forward over the 2B rows
in train mode, so the two views differ only by dropout; z = MLP(CLS) with a new Linear+tanh used in training only
(``--mlp_only_train``), loss = CE over cos(z1_i, z2_j)/tau with label i (one direction, B-1 negatives); under
DDP the views of all ranks are gathered (negatives from the global batch), as the reference does.
``variant=st``: the sentence-transformers recipe: each column gets its own forward, no MLP, mean pooling,
MultipleNegativesRankingLoss with scale 1/tau = 20. The exported encoder never contains the MLP.
Dropout must stay on: with ``dropout=false`` the views are identical and the loss collapses (a control run).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from benchmark.train.config import TrainConfig
from benchmark.errors import ConfigError
from benchmark.train.plugin import (
    Method,
    SentenceEncoder,
    TrainModule,
    load_backbone,
    tokenize,
)
from benchmark.registry import METHODS

CITATION = ("@inproceedings{gao2021simcse, title={SimCSE: Simple Contrastive Learning of Sentence Embeddings}, "
            "author={Gao, Tianyu and Yao, Xingcheng and Chen, Danqi}, booktitle={EMNLP}, year={2021}}")


@dataclass(frozen=True)
class SimCSEConfig(TrainConfig):
    """SimCSE settings; defaults are the official unsup-BERT script ([SC] run_unsup_example.sh)."""

    variant: Literal["official", "st"] = "official"  # official: joint forward + MLP; st: MNRL recipe
    temperature: float = 0.05  # [SC] --temp 0.05 (= MNRL scale 20)
    pooling: str = "cls"  # [SC] --pooler_type cls (raw CLS at test: cls_before_pooler)
    max_length: int = 32  # [SC] --max_seq_length 32
    batch_size: int = 64  # [SC] --per_device_train_batch_size 64
    lr: float = 3e-5  # [SC] --learning_rate 3e-5
    scheduler: Literal["constant", "linear", "warmup_constant", "piecewise"] = "linear"  # HF Trainer default

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.temperature <= 0:
            raise ConfigError(f"temperature must be > 0, got {self.temperature}")


def info_nce(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    """CE over cos(z1_i, z2_j)/tau with target i. z1, z2: (bsz, dim) -> scalar (mean over anchors)."""
    sim = F.cosine_similarity(z1.float().unsqueeze(1), z2.float().unsqueeze(0), dim=-1) / temperature  # (bsz, bsz)
    return F.cross_entropy(sim, torch.arange(sim.shape[0], device=sim.device))


def gather_keep_local(z: torch.Tensor) -> torch.Tensor:
    """Under DDP, the embeddings of every rank (bsz*world, dim) with this rank's shard still carrying its
    gradient, as [SC] models.py does (the other shards are constants); single process: ``z`` itself."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return z
    parts = [torch.zeros_like(z) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, z.detach().contiguous())
    parts[dist.get_rank()] = z
    return torch.cat(parts, dim=0)


class SimCSEModule(TrainModule):
    """Encoder (+ train-only MLP head for the official variant)."""

    def __init__(self, cfg: SimCSEConfig):
        super().__init__()
        model, self.tokenizer, _ = load_backbone(cfg.model, dropout=cfg.dropout)
        self.encoder = SentenceEncoder(model, cfg.pooling)
        self.variant, self.temperature = cfg.variant, cfg.temperature
        # [SC] MLPLayer: dense (hidden->hidden) + tanh, freshly initialised; dropped at export.
        self.mlp = nn.Sequential(nn.Linear(self.encoder.dim, self.encoder.dim), nn.Tanh()) \
            if cfg.variant == "official" else None

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        if self.variant == "official":
            z = self.mlp(self.encoder(**batch["views"]))  # (2*bsz, dim); rows 2i, 2i+1 = sentence i
            return info_nce(gather_keep_local(z[0::2]), gather_keep_local(z[1::2]), self.temperature)
        z1 = self.encoder(**batch["a"])  # (bsz, dim): the [ST] recipe encodes each column separately
        z2 = self.encoder(**batch["b"])
        return info_nce(z1, z2, self.temperature)


class SimCSE(Method):
    """SimCSE trainer plugin."""

    name = "simcse"
    description = "SimCSE unsup: dropout views, in-batch InfoNCE (tau 0.05), MLP head in training only"
    citation = CITATION
    Config = SimCSEConfig
    default_preset = "paper"
    # On a random 2-layer BERT the CLS state barely differs between sentences and 20 steps cannot fix it; the
    # contract test trains with mean pooling (CLS export is covered by TSDAE and tests/methods/test_simcse.py).
    test_overrides = {"pooling": "mean"}
    presets = {
        # TSDAE paper App. B: official code and defaults as that paper states them: 1 epoch, batch 512, AdamW lr
        # 5e-5, linear layer on CLS, early stopping on STSb-dev (the unsup script evaluates every 125 steps).
        "paper": {"model": "bert-base-uncased", "epochs": 1.0, "max_steps": None, "batch_size": 512,
                  "lr": 5e-5, "dev_task": "stsb", "dev_every": 125},
        # [SC] run_unsup_example.sh: bert-base-uncased, wiki1m 1 epoch, bs 64, lr 3e-5, len 32, tau 0.05, eval
        # STSb-dev every 125 steps keeping the best; HF Trainer defaults (AdamW eps 1e-8, linear, clip 1).
        "official": {"model": "bert-base-uncased", "epochs": 1.0, "max_steps": None, "dev_task": "stsb",
                     "dev_every": 125},
        # [ST] examples/.../SimCSE/train_stsb_simcse.py: MNRL (scale 20) on (s, s), mean pooling, bs 128,
        # lr 5e-5, 10% warm-up, max_len 32.
        "st": {"model": "bert-base-uncased", "variant": "st", "pooling": "mean", "epochs": 1.0, "max_steps": None,
               "batch_size": 128, "lr": 5e-5, "warmup_ratio": 0.1},
        # CPU smoke run on the packaged model: a few hundred steps, no dev selection.
        "smoke": {"model": "minilm", "max_steps": 200, "batch_size": 32, "log_every": 20, "save_every": 100},
    }

    def build(self, cfg: SimCSEConfig, device: torch.device) -> SimCSEModule:
        return SimCSEModule(cfg)

    def collate(self, cfg: SimCSEConfig, tokenizer: Any, texts: list[str], rng: np.random.Generator) -> dict:
        if cfg.variant == "official":
            return {"views": tokenize(tokenizer, [t for t in texts for _ in (0, 1)], cfg.max_length)}
        enc = tokenize(tokenizer, texts, cfg.max_length)
        return {"a": enc, "b": {k: v.clone() for k, v in enc.items()}}


METHODS.add("simcse", SimCSE())
