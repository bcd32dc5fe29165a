"""SimCSE, unsupervised: two dropout views of each sentence, in-batch InfoNCE.

Gao, Yao, Chen 2021, "SimCSE: Simple Contrastive Learning of Sentence Embeddings", EMNLP.
Reference code: princeton-nlp/SimCSE (``simcse/models.py``, ``run_unsup_example.sh``); sentence-transformers
``MultipleNegativesRankingLoss`` example (``examples/.../SimCSE/train_stsb_simcse.py``).

``variant=official``: the batch holds each sentence twice (rows 2i, 2i+1), one encoder forward over the 2B rows
in train mode, so the two views differ only by dropout; z = MLP(CLS) with a new Linear+tanh, loss = CE over
cos(z1_i, z2_j)/tau with label i (one direction, B-1 negatives); under DDP the views of all ranks are gathered
(negatives from the global batch), as the reference does. ``mlp_only_train=true`` (the current unsup script's
``--mlp_only_train``) drops the MLP at test: the export pools the raw CLS. ``mlp_only_train=false`` (the TSDAE
paper's SimCSE row, App. B: "a linear layer on the CLS token embedding as the pooling method", the official
code's default before that flag) keeps it: the export declares pooling ``cls_mlp`` and carries the trained
Linear+tanh as a sentence-transformers ``Dense`` module (``2_Dense/``), which :func:`cls_mlp_pooler` reads for
``bench eval`` and ``SentenceTransformer(path)`` runs itself. Dev selection scores the exported pooling.
``variant=st``: the sentence-transformers recipe: each column gets its own forward, no MLP, mean pooling,
MultipleNegativesRankingLoss with scale 1/tau = 20.
``loss``: ``infonce`` (SimCSE's one-direction loss), or R. Wang's thesis variants in the same framework (its Sec.
5.3.3): ``nt_xent`` (eq. 2.7-2.9, both directions, 2N-2 negatives) and ``bce`` (eq. 2.10); see
:mod:`usebench.methods.parts.losses`. As in [SC] ``cl_init``/``cl_forward``, the MLP exists only with CLS pooling
(``--pooler_type cls``): the ``avg`` pooler of the thesis' runs (Table 5.3) trains without it.
Dropout must stay on: with ``dropout=false`` the views are identical and the loss collapses (a control run).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from usebench.recipes.laptop_presets import fraction_curve, laptop_note, laptop_preset
from usebench.errors import BenchError, ConfigError
from usebench.eval.pooling import PoolFn
from usebench.store import write_json_atomic
from usebench.train.checkpoint import STWriter, builtin_writer, pooling_entry
from usebench.train.config import TrainConfig
from usebench.train.backbone import SentenceEncoder, load_backbone
from usebench.train.plugin import Method, TrainModule
from usebench.train.tokenization import tokenize
from usebench.registry import METHODS
from usebench.methods.parts.losses import CONTRASTIVE_LOSSES, ContrastiveLoss
from usebench.recipes.thesis_presets import TABLE_5_3, THESIS_NOTE

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
    mlp_only_train: bool = True  # [SC] --mlp_only_train: the MLP trains but the export pools the raw CLS
    loss: ContrastiveLoss = "infonce"  # [SC] one direction; thesis eq. 2.9 nt_xent / eq. 2.10 bce

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.temperature <= 0:
            raise ConfigError(f"temperature must be > 0, got {self.temperature}")
        if not self.mlp_only_train and (self.variant != "official" or self.pooling != "cls"):
            raise ConfigError("mlp_only_train=false keeps the MLP on CLS at test: it needs variant=official and "
                              f"pooling=cls (got variant={self.variant!r}, pooling={self.pooling!r})")


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
        self.variant, self.temperature, self.loss_fn = cfg.variant, cfg.temperature, CONTRASTIVE_LOSSES[cfg.loss]
        # [SC] MLPLayer (only with --pooler_type cls): dense (hidden->hidden) + tanh, freshly initialised.
        self.mlp = nn.Sequential(nn.Linear(self.encoder.dim, self.encoder.dim), nn.Tanh()) \
            if cfg.variant == "official" and cfg.pooling == "cls" else None  # 2_Dense when mlp_only_train=false

    def two_views(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(f(x): the pooled first view, z1, z2): the sentence embeddings and the two views the loss compares,
        each (bsz, dim); z = MLP(f) where the MLP exists."""
        if self.variant == "official":
            h = self.encoder(**batch["views"])  # (2*bsz, dim); rows 2i, 2i+1 = sentence i
            z = self.mlp(h) if self.mlp is not None else h
            return h[0::2], z[0::2], z[1::2]
        z1 = self.encoder(**batch["a"])  # (bsz, dim): the [ST] recipe encodes each column separately
        return z1, z1, self.encoder(**batch["b"])

    def contrastive_loss(self, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
        if self.variant == "official":  # under DDP the negatives come from every rank, as [SC] does
            z1, z2 = gather_keep_local(z1), gather_keep_local(z2)
        return self.loss_fn(z1, z2, self.temperature)

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        return self.contrastive_loss(*self.two_views(batch)[1:])


# TSDAE paper App. B: official code and defaults as that paper states them: 1 epoch, batch 512, AdamW lr 5e-5, "a
# linear layer on the CLS token embedding as the pooling method" (the MLP kept at test: cls_mlp); early stopping on
# STSb-dev (the unsup script evaluates every 125 steps; App. B footnote 8 keeps it). Precision: fp16 mixed
# precision, as the official script (run_unsup_example.sh passes --fp16).
PAPER: dict[str, Any] = {"model": "bert-base-uncased", "epochs": 1.0, "max_steps": None, "batch_size": 512,
                         "lr": 5e-5, "mlp_only_train": False, "dev_task": "stsb", "dev_every": 125, "amp": "fp16"}


class SimCSE(Method):
    """SimCSE trainer plugin."""

    name = "simcse"
    description = "SimCSE unsup: dropout views, in-batch InfoNCE (tau 0.05), MLP on CLS (kept at test by paper)"
    citation = CITATION
    Config = SimCSEConfig
    default_preset = "paper"
    keep_partial_batch = True  # [SC] HF Trainer (dataloader_drop_last=False): ceil(n / batch) steps an epoch
    # On a random 2-layer BERT the CLS state barely differs between sentences and 20 steps cannot fix it; the
    # contract test trains with mean pooling (CLS export is covered by TSDAE and tests/methods/test_simcse.py).
    test_overrides = {"pooling": "mean"}
    presets = {
        "paper": PAPER,  # TSDAE paper App. B (above)
        # [SC] run_unsup_example.sh: bert-base-uncased, wiki1m 1 epoch, bs 64, lr 3e-5, len 32, tau 0.05, eval
        # STSb-dev every 125 steps keeping the best; HF Trainer defaults (AdamW eps 1e-8, linear, clip 1).
        "official": {"model": "bert-base-uncased", "epochs": 1.0, "max_steps": None, "dev_task": "stsb",
                     "dev_every": 125, "amp": "fp16"},  # --fp16
        # [ST] examples/.../SimCSE/train_stsb_simcse.py: MNRL (scale 20) on (s, s), mean pooling, bs 128,
        # lr 5e-5, 10% warm-up, max_len 32.
        "st": {"model": "bert-base-uncased", "variant": "st", "pooling": "mean", "epochs": 1.0, "max_steps": None,
               "batch_size": 128, "lr": 5e-5, "warmup_ratio": 0.1, "amp": "fp16"},  # use_amp=True
        # R. Wang 2022 (thesis) Table 5.3 on the SimCSE code: SimCSE's own loss (eq. 3.1; Sec. 5.3.3's variants
        # are loss=nt_xent / loss=bce), mean ("avg.") pooling, hence no MLP; best checkpoint by validation loss.
        "thesis": {**TABLE_5_3, "temperature": 0.05},
        # CPU smoke run on the packaged model: a few hundred steps, no dev selection.
        "smoke": {"model": "minilm", "max_steps": 200, "batch_size": 32, "log_every": 20, "save_every": 100},
        # The CPU-scale recipe: the paper preset (App. B's batch 512, lr 5e-5 decaying linearly over 1 epoch, the
        # MLP kept, STSb-dev every 125 steps) on the packaged MiniLM, truncated at 10 steps (~35 CPU s each).
        "laptop": laptop_preset(PAPER, 10, fraction_curve(10), log_every=1, save_every=5),
    }
    preset_notes = {
        "laptop": laptop_note(Config(**presets["laptop"])) +
                  "App. B's batch 512, AdamW lr 5e-5 decaying linearly over 1 epoch (82 steps of "
                  "the recipe's corpus), the MLP on CLS new at step 0 and kept at test (cls_mlp), 32 tokens; stopped "
                  "after 10 steps (5,120 sentences), a step of 1,024 rows costing ~35 CPU s; the STSb-dev early stopping is "
                  "the official code's, which App. B's footnote 8 keeps",
        "paper": "TSDAE App. B's SimCSE row: the MLP on CLS is kept at test (cls_mlp); App. B gives no max length or "
                 "dev interval: the official script's 32 tokens and STSb-dev every 125 steps",
        "official": "current unsup script: --mlp_only_train (raw CLS at test), bs 64, lr 3e-5, len 32",
        "thesis": THESIS_NOTE + "; SimCSE's own loss (eq. 3.1): Table 5.9's variants are --set loss=nt_xent|bce",
    }

    def build(self, cfg: SimCSEConfig, device: torch.device) -> SimCSEModule:
        return SimCSEModule(cfg)

    def eval_pooling(self, cfg: SimCSEConfig) -> str:
        return cfg.pooling if cfg.mlp_only_train or cfg.variant != "official" else CLS_MLP

    def pooling_writer(self, cfg: SimCSEConfig) -> STWriter:
        return _write_cls_mlp if self.eval_pooling(cfg) == CLS_MLP else builtin_writer(cfg.pooling)

    def method_json(self, cfg: SimCSEConfig) -> dict[str, Any]:
        return {"pooler": "usebench.methods.simcse:cls_mlp_pooler"} if self.eval_pooling(cfg) == CLS_MLP else {}

    def export_extra(self, module: SimCSEModule, cfg: SimCSEConfig, out_dir: Path) -> None:  # type: ignore[override]
        if self.eval_pooling(cfg) == CLS_MLP:
            from safetensors.torch import save_file

            linear = module.mlp[0]  # type: ignore[index]
            save_file({"linear.weight": linear.weight.detach().cpu().contiguous(),
                       "linear.bias": linear.bias.detach().cpu().contiguous()},
                      str(Path(out_dir) / DENSE_DIR / "model.safetensors"))

    def collate(self, cfg: SimCSEConfig, tokenizer: Any, texts: list[str], rng: np.random.Generator) -> dict:
        if cfg.variant == "official":
            return {"views": tokenize(tokenizer, [t for t in texts for _ in (0, 1)], cfg.max_length)}
        enc = tokenize(tokenizer, texts, cfg.max_length)
        return {"a": enc, "b": {k: v.clone() for k, v in enc.items()}}


# --- the cls_mlp pooling: tanh(W CLS + b), the trained MLP kept at test ---------------------------------------

CLS_MLP = "cls_mlp"
DENSE_DIR = "2_Dense"  # sentence-transformers Dense module folder: config.json + model.safetensors


def _write_cls_mlp(out_dir: Path, hf_config: Any) -> list[dict[str, Any]]:
    """sentence-transformers modules 1-2: CLS pooling, then Dense(h, h, tanh) (weights: ``export_extra``)."""
    dim = int(hf_config.hidden_size)
    (Path(out_dir) / DENSE_DIR).mkdir(parents=True, exist_ok=True)
    write_json_atomic(Path(out_dir) / DENSE_DIR / "config.json",
                      {"in_features": dim, "out_features": dim, "bias": True,
                       "activation_function": "torch.nn.modules.activation.Tanh"})
    return [pooling_entry(Path(out_dir), 1, dim, "cls"),
            {"idx": 2, "name": "2", "path": DENSE_DIR, "type": "sentence_transformers.models.Dense"}]


def cls_mlp_pooler(model_dir: str, device: torch.device) -> PoolFn:
    """Pooler factory for ``bench eval``: the checkpoint's Dense (Linear + tanh) applied to the raw CLS state."""
    import json

    from safetensors.torch import load_file

    folder = Path(model_dir) / DENSE_DIR
    try:
        spec = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        weights = load_file(str(folder / "model.safetensors"))
        linear = nn.Linear(int(spec["in_features"]), int(spec["out_features"]))
        linear.load_state_dict({"weight": weights["linear.weight"], "bias": weights["linear.bias"]})
    except (OSError, KeyError, ValueError, RuntimeError) as e:
        raise BenchError(f"pooling {CLS_MLP!r} needs the trained MLP in {folder} (config.json + model.safetensors "
                         f"written by a SimCSE paper-preset export): {e}") from None
    linear = linear.to(device).eval()

    def pool(hidden_states, attention_mask, input_ids):
        cls = hidden_states[-1][:, 0]  # (bsz, dim)
        with torch.autocast(cls.device.type, enabled=False):
            return torch.tanh(linear(cls.float()))

    return pool


METHODS.add("simcse", SimCSE())
