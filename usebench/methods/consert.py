"""ConSERT: contrastive sentence-representation transfer with embedding-level augmentations.

Yan, Li, Wang, Zhang, Wu, Xu 2021, "ConSERT: A Contrastive Framework for Self-Supervised Sentence
Representation Transfer", ACL. Reference code: yym6472/ConSERT (``sentence_transformers/losses/
AdvCLSoftmaxLoss.py``, patched ``transformers/modeling_bert.py``, ``scripts/unsup-consert-base.sh``).

Each sentence is encoded twice, each view in its own forward pass with its own augmentation (default view 1 =
feature cutoff 0.2, view 2 = token shuffle; see :mod:`usebench.methods.parts.augment`), with all BERT dropout off. The views are
mean-pooled over the last layer, L2-normalised and compared with the two-direction NT-Xent of SimCLR
(temperature 0.1, intra-view negatives); the sum of both directions is scaled by ``cl_rate`` 0.15. The exported
encoder is evaluated with last-2-layer average pooling (the paper's reported numbers).

Training schedule as the reference's ``main.py`` + its sentence-transformers fork (``SentenceTransformer.fit``):
an epoch is ``len(DataLoader)`` = ceil(n / batch) steps (the last batch of an epoch is smaller); the training
model is scored on STSb-dev with *its own* pooling (mean, ``train_pooling``) every 200 steps of an epoch and at
the end of every epoch; the best checkpoint is kept, and training stops after ``dev_patience`` = 10
evaluations without a new best (``--patience 10``).

The ``thesis`` presets (R. Wang 2022, Sec. 5.3.1: ConSERT₁ = token shuffle + feature cutoff 0.2, ``thesis2`` =
ConSERT₂ = token shuffle + embedding dropout 0.2) run these augmentations in the thesis' setup (its Table 5.3, on
the SimCSE code) rather than ConSERT's script: eq. 3.2's NT-Xent is eq. 2.9, the mean of both directions, i.e.
``cl_rate`` 0.5; BERT dropout removed (Sec. 3.1.2 step 1); mean pooling in training and at test; the Trainer's
epoch (``epoch_loop=trainer``: whole batches, dev every 250 steps).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal

import numpy as np
import torch

from usebench.recipes.laptop_presets import fraction_curve, laptop_note, laptop_preset
from usebench.train.config import Optimizer, Scheduler, TrainConfig
from usebench.errors import ConfigError
from usebench.train.backbone import SentenceEncoder, load_backbone
from usebench.train.plugin import Method, TrainModule
from usebench.train.sampling import epoch_permutation
from usebench.train.tokenization import tokenize
from usebench.eval.pooling import POOLERS, needs_all_layers
from usebench.registry import METHODS
from usebench.methods.parts.augment import (
    Augmentation,
    augmentation_inputs,
    augmented_forward,
    check_augmentation,
    drawn_forward,
)
from usebench.methods.parts.losses import nt_xent
from usebench.recipes.thesis_presets import TABLE_5_3, THESIS_NOTE

# The thesis' ConSERT: Table 5.3 + view 2 token shuffle, eq. 3.2 = eq. 2.9 (cl_rate 0.5), no BERT dropout (Sec.
# 3.1.2), mean pooling in training and at test, the Trainer's epoch and dev schedule.
THESIS_CONSERT: dict[str, Any] = {
    **TABLE_5_3, "temperature": 0.05, "cl_rate": 0.5, "dropout": False, "view2": "shuffle", "rate2": 0.0,
    "train_pooling": "mean", "eval_max_length": None, "warmup_ratio": 0.0, "epoch_loop": "trainer"}


@dataclass(frozen=True)
class ConsertConfig(TrainConfig):
    """Defaults = ``scripts/unsup-consert-base.sh`` (the paper's unsupervised STS setting) and the old
    sentence-transformers ``fit`` defaults it runs with."""

    view1: Augmentation = "feature_cutoff"  # --da_final_1
    rate1: float = 0.2  # --cutoff_rate_final_1
    view2: Augmentation = "shuffle"  # --da_final_2 (shuffle takes no rate)
    rate2: float = 0.0  # --cutoff_rate_final_2 (unset in the script)
    temperature: float = 0.1  # --temperature
    cl_rate: float = 0.15  # --cl_rate: contrastive_loss_rate, the only loss with --cl_loss_only
    train_pooling: str = "mean"  # main.py: models.Pooling(pooling_mode_mean_tokens=True)
    pooling: str = "last2avg"  # README note 3: reported numbers use eval.py --last2avg
    dropout: bool = False  # --no_dropout: hidden and attention dropout 0
    batch_size: int = 96  # --batch_size
    max_length: int = 64  # --max_seq_length
    eval_max_length: int | None = 64  # main.py sets model.max_seq_length = 64 and saves it; eval.py loads it
    lr: float = 5e-7  # --learning_rate 0.0000005
    max_steps: int | None = None
    epochs: float | None = 10.0  # --num_epochs
    optimizer: Optimizer = "bert_adam"  # ST fit: transformers.AdamW(correct_bias=False), decoupled decay
    eps: float = 1e-6  # ST fit optimizer_params
    weight_decay: float = 0.01  # ST fit default; not on bias/LayerNorm
    scheduler: Scheduler = "linear"  # ST fit WarmupLinear
    warmup_ratio: float = 0.1  # main.py: 10% of the training steps
    grad_clip: float | None = 1.0  # ST fit max_grad_norm
    dev_task: str | None = "stsb"  # --evaluation_steps 200 on STSb dev, best checkpoint kept
    dev_every: int = 200  # steps of an epoch (fit counts them per epoch) and at every epoch's end
    dev_patience: int | None = 10  # --patience 10: stop after 10 evaluations without a new best
    # consert: main.py's epoch (ceil(n / batch) steps, dev every dev_every steps of an epoch and at its end);
    # trainer: the base loop's (whole batches, dev every dev_every steps), as the HF Trainer the thesis ran
    epoch_loop: Literal["consert", "trainer"] = "consert"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_augmentation(self.view1, self.rate1)
        check_augmentation(self.view2, self.rate2)
        if self.temperature <= 0 or self.cl_rate <= 0:
            raise ConfigError(f"temperature and cl_rate must be > 0, got {self.temperature}, {self.cl_rate}")
        if self.train_pooling not in POOLERS:
            raise ConfigError(f"train_pooling: {POOLERS.unknown_message(self.train_pooling)}")


class ConsertModule(TrainModule):
    """Encoder without dropout; two augmented views (own forward passes) -> cl_rate * NT-Xent."""

    def __init__(self, cfg: ConsertConfig):
        super().__init__()
        model, self.tokenizer, _ = load_backbone(cfg.model, dropout=cfg.dropout)
        self.encoder = SentenceEncoder(model, cfg.pooling)  # exported with the evaluation pooling
        self.train_pool = POOLERS.get(cfg.train_pooling)
        self.all_layers = needs_all_layers(cfg.train_pooling)
        self.views = ((cfg.view1, cfg.rate1), (cfg.view2, cfg.rate2))
        self.temperature, self.cl_rate = cfg.temperature, cfg.cl_rate
        # A cutoff drawn in collate multiplies the embedding output through this one hook, registered once: a hook
        # registered per forward is a graph break for torch.compile (the fast path). Identity while _keep is None.
        self._keep: torch.Tensor | None = None
        self._keep_hooked = isinstance(getattr(model, "embeddings", None), torch.nn.Module)
        if self._keep_hooked:  # otherwise drawn_forward says what is missing
            model.embeddings.register_forward_hook(self._apply_keep)

    def _apply_keep(self, module: Any, args: Any, output: torch.Tensor) -> torch.Tensor:
        return output if self._keep is None else output * self._keep.to(output.dtype)

    def _drawn_view(self, features: dict[str, torch.Tensor], inputs: dict[str, torch.Tensor], **kwargs: Any) -> Any:
        """The HF output of one view drawn in collate (as :func:`drawn_forward`, the cutoff through the hook)."""
        if "keep" not in inputs or not self._keep_hooked:
            return drawn_forward(self.encoder.model, features, inputs, **kwargs)
        self._keep = inputs["keep"]
        try:
            return self.encoder.model(**features, **kwargs)
        finally:
            self._keep = None

    def _pool(self, out: Any, features: dict[str, torch.Tensor]) -> torch.Tensor:
        hidden = out.hidden_states if self.all_layers else (out.last_hidden_state,)
        return self.train_pool(hidden, features["attention_mask"], features["input_ids"])  # (bsz, dim)

    def two_views(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(f(x) = the first view, view1, view2), each (bsz, dim) with the training pooling."""
        features = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
        kwargs = {"output_hidden_states": self.all_layers or None, "return_dict": True}
        if "view_inputs" in batch:  # the augmentations drawn in collate (no per-row work or sync in the step)
            view1, view2 = (self._pool(self._drawn_view(features, inputs, **kwargs), features)
                            for inputs in batch["view_inputs"])
        else:  # drawn here, from the same seed: the same views
            rng = random.Random(batch["aug_seed"])  # drawn in collate, so resumed runs replay the same views
            view1, view2 = (self._pool(augmented_forward(self.encoder.model, features, name, rate, rng, **kwargs),
                                       features) for name, rate in self.views)
        return view1, view1, view2

    def contrastive_loss(self, view1: torch.Tensor, view2: torch.Tensor) -> torch.Tensor:
        return self.cl_rate * nt_xent(view1, view2, self.temperature)

    def compiled_inputs(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Without ``aug_seed`` once collate drew the views: a new int every step would recompile the step."""
        return {k: v for k, v in batch.items() if k != "aug_seed"} if "view_inputs" in batch else batch

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        return self.contrastive_loss(*self.two_views(batch)[1:])


class Consert(Method):
    """The ``consert`` plugin."""

    name: ClassVar[str] = "consert"
    description: ClassVar[str] = "ConSERT: NT-Xent between two embedding-level augmentations (Yan et al. 2021)"
    citation: ClassVar[str] = ("Yan, Li, Wang, Zhang, Wu, Xu 2021. ConSERT: A Contrastive Framework for "
                               "Self-Supervised Sentence Representation Transfer. ACL.")
    Config: ClassVar[type[TrainConfig]] = ConsertConfig
    presets: ClassVar[dict[str, dict[str, Any]]] = {
        # The paper's unsupervised setting is the released script's (the dataclass defaults) on bert-base-uncased.
        # Precision: fp16, as the script (--use_apex_amp --apex_amp_opt_level O1: fp16 autocast + loss scaling).
        "paper": {"model": "bert-base-uncased", "amp": "fp16"},
        "official": {"model": "bert-base-uncased", "amp": "fp16"},  # scripts/unsup-consert-base.sh
        # R. Wang 2022 Sec. 5.3.1 / Table 5.3: ConSERT₁ (shuffle + feature cutoff 0.2) and ConSERT₂ (shuffle +
        # embedding dropout 0.2) in the thesis' setup (see the module docstring).
        "thesis": {**THESIS_CONSERT, "view1": "feature_cutoff", "rate1": 0.2},
        "thesis2": {**THESIS_CONSERT, "view1": "dropout", "rate1": 0.2},
        "smoke": {  # a few CPU minutes with the packaged model; lr raised as 5e-7 would not move in 50 steps
            "model": "minilm", "batch_size": 32, "max_length": 64, "epochs": None, "max_steps": 50,
            "lr": 5e-6, "dev_task": None, "dev_every": 0, "dev_patience": None, "log_every": 10, "save_every": 0,
        },
        # The CPU-scale recipe: the released script (batch 96, lr 5e-7 with BERT Adam, 10% warm-up then linear decay
        # over 10 epochs, views, no dropout, STSb-dev selection) on the packaged MiniLM, truncated at 60 steps.
        "laptop": laptop_preset({}, 60, fraction_curve(60), log_every=5, save_every=20),
    }
    preset_notes: ClassVar[dict[str, str]] = {
        "laptop": laptop_note(Config(**presets["laptop"])) +
                  "scripts/unsup-consert-base.sh's batch 96, lr 5e-7 with a 10% warm-up over 10 epochs "
                  "(433 of the recipe corpus' 4,330 steps) then linear decay, feature cutoff 0.2 + token shuffle, no "
                  "dropout, last2avg; stopped after 60 steps (5,760 sentences), all inside the warm-up (LR up to "
                  "7e-8), a step costing ~5.5 CPU s; its selection also evaluates at an epoch's end (none within 60): "
                  "ConSERT barely moves, which the recipe shows as it is",
        "paper": "scripts/unsup-consert-base.sh on 89,192 STS+SICK sentences; here the task's corpus or --corpus. "
                 "apex AMP O1 as fp16 autocast with dynamic loss scaling (amp=fp16)",
        "thesis": "ConSERT₁ (shuffle + feature cutoff 0.2). " + THESIS_NOTE,
        "thesis2": "ConSERT₂ (shuffle + embedding dropout 0.2). " + THESIS_NOTE,
    }

    def dev_pooling(self, cfg: TrainConfig) -> str:
        """main.py's dev evaluator scores the training model, whose pooling is mean (``train_pooling``)."""
        return cfg.train_pooling  # type: ignore[attr-defined]

    def _steps_per_epoch(self, cfg: TrainConfig, n: int, world: int) -> int:
        """len(DataLoader(drop_last=False)) = ceil(n / batch): the reference's epoch, last batch smaller. Under
        DDP whole global batches only (a rank could otherwise get an empty remainder; the reference is 1 GPU)."""
        if world > 1:
            return max(1, n // (cfg.batch_size * world))
        return math.ceil(n / cfg.batch_size)

    def total_steps(self, cfg: TrainConfig, n: int, world: int = 1) -> int:
        if cfg.epoch_loop == "trainer":  # type: ignore[attr-defined]
            return super().total_steps(cfg, n, world)
        if cfg.epochs is None:
            return int(cfg.max_steps)  # type: ignore[arg-type]
        steps = math.ceil(cfg.epochs * self._steps_per_epoch(cfg, n, world))
        return min(steps, cfg.max_steps) if cfg.max_steps else steps

    def batch_indices(self, cfg: TrainConfig, n: int, step: int, seed: int, rank: int = 0,
                      world: int = 1) -> list[int]:
        """Seeded epoch permutations cut into ceil(n / batch) batches; the last one holds the remainder."""
        if world > 1 or cfg.epoch_loop == "trainer":  # type: ignore[attr-defined]
            return super().batch_indices(cfg, n, step, seed, rank, world)
        epoch, k = divmod(step, self._steps_per_epoch(cfg, n, world))
        return epoch_permutation(n, seed, epoch)[k * cfg.batch_size : (k + 1) * cfg.batch_size].tolist()

    def dev_due(self, cfg: TrainConfig, step: int, n: int, world: int = 1) -> bool:
        """fit evaluates every ``evaluation_steps`` steps *of an epoch* and again at the end of each epoch."""
        if cfg.epoch_loop == "trainer":  # type: ignore[attr-defined]
            return super().dev_due(cfg, step, n, world)
        if not cfg.dev_every:
            return False
        in_epoch = step % self._steps_per_epoch(cfg, n, world)
        return in_epoch == 0 or in_epoch % cfg.dev_every == 0

    def build(self, cfg: TrainConfig, device: torch.device) -> TrainModule:
        return ConsertModule(cfg)  # type: ignore[arg-type]

    def collate(self, cfg: TrainConfig, tokenizer: Any, texts: list[str], rng: np.random.Generator) -> dict:
        batch: dict[str, Any] = tokenize(tokenizer, texts, cfg.max_length)
        batch["aug_seed"] = int(rng.integers(2**62))  # the augmentations' python RNG (see usebench.methods.parts.augment)
        views_rng = random.Random(batch["aug_seed"])  # view 1's draws, then view 2's, as the forward would
        hidden = hidden_size(cfg.model)
        batch["view_inputs"] = [augmentation_inputs(name, rate, batch["attention_mask"], hidden, views_rng)
                                for name, rate in ((cfg.view1, cfg.rate1), (cfg.view2, cfg.rate2))]  # type: ignore[attr-defined]
        return batch


@lru_cache(maxsize=8)
def hidden_size(model: str) -> int:
    """The backbone's hidden size, from its config (the width of a cutoff mask drawn in collate)."""
    from transformers import AutoConfig

    from usebench.eval.models import resolve_model

    return int(AutoConfig.from_pretrained(resolve_model(model).path).hidden_size)


METHODS.add("consert", Consert())
