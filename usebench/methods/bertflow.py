"""BERT-flow: a Glow on a frozen encoder maps sentence embeddings to an isotropic Gaussian.

Li, Zhou, He, Wang, Yang, Li 2020, "On the Sentence Embeddings from Pre-trained Language Models", EMNLP.
Implementation as UKPLab/pytorch-bertflow (``tflow_utils.py``), the port the TSDAE paper (Wang et al. 2021,
App. B) benchmarked: the encoder is frozen (no gradients, not in the optimizer); u = pooled embedding
(default ``first_last_avg`` = mean over tokens of (embedding-layer output + last layer) / 2, see
:mod:`usebench.eval.pooling`); the flow (:mod:`usebench.methods.parts.flow`) is trained by maximum likelihood in bits per dim;
the sentence embedding is the flow's z. The flow runs in fp32 even under autocast.

Export: the (unchanged) encoder plus ``flow/config.json`` and ``flow/model.safetensors``; method.json declares
pooling ``flow``, which :func:`flow_pooler` builds from those files for ``bench eval``. The same folder is a
sentence-transformers module (:class:`usebench.methods.parts.flow_st.FlowPooling`; load with ``trust_remote_code=True``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from usebench.recipes.laptop_presets import BATCH8_CURVE, BATCH8_STEPS, laptop_note, laptop_preset
from usebench.train.checkpoint import STWriter, builtin_writer
from usebench.train.config import TrainConfig
from usebench.errors import BenchError, ConfigError
from usebench.train.backbone import SentenceEncoder, load_backbone
from usebench.train.plugin import Method, TrainModule
from usebench.train.sampling import shuffled_batch
from usebench.train.tokenization import tokenize
from usebench.eval.pooling import POOLERS, PoolFn
from usebench.registry import METHODS
from usebench.store import write_json_atomic
from usebench.methods.parts.flow import Glow

FLOW_DIR = "flow"  # checkpoint subfolder: config.json + model.safetensors
FLOW_WEIGHTS = "model.safetensors"


@dataclass(frozen=True)
class BertFlowConfig(TrainConfig):
    """Defaults = TSDAE paper App. B (100K steps, batch 8, AdamW lr 1e-6, weight decay 0.01); the flow's input
    pooling is the [PF] port's first_last_avg (App. B states mean pooling: see the presets' notes)."""

    max_steps: int | None = 100_000  # TSDAE paper App. B
    batch_size: int = 8  # TSDAE paper App. B
    lr: float = 1e-6  # TSDAE paper App. B
    weight_decay: float = 0.01  # TSDAE paper App. B
    eps: float = 1e-6  # TSDAE paper App. B: transformers v3.1.0 AdamW (default eps 1e-6)
    pooling: str = "flow"  # the exported embedding is z; choose u with base_pooling
    base_pooling: str = "first_last_avg"  # [PF] README (needed for the TSDAE numbers); the paper text says mean
    flow_levels: int = 3  # [PF] Glow(n_block=3) = [BF] config_l3_d3_w32
    flow_depth: int = 3  # [PF] n_flow=3
    flow_width: int = 32  # [PF] AdditiveCoupling filter_size=32
    dropout: bool = True  # [PF] calls .train() on the whole model: BERT dropout is on during feature extraction
    ddi_batch_size: int | None = None  # sentences of ActNorm's data-dependent init; None: first batch, as [PF]

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.pooling != "flow":
            raise ConfigError(f"bertflow exports pooling 'flow' (z); got pooling={self.pooling!r}. Choose the "
                              f"flow's input with base_pooling (one of {', '.join(POOLERS.names())})")
        if self.base_pooling not in POOLERS:
            raise ConfigError(f"base_pooling: {POOLERS.unknown_message(self.base_pooling)}")
        if self.ddi_batch_size is not None and self.ddi_batch_size < 2:
            raise ConfigError(f"ddi_batch_size must be >= 2 (a standard deviation), got {self.ddi_batch_size}")


class BertFlowModule(TrainModule):
    """Frozen encoder -> u (base pooling) -> Glow -> bits-per-dim loss."""

    def __init__(self, cfg: BertFlowConfig):
        super().__init__()
        model, self.tokenizer, _ = load_backbone(cfg.model, dropout=cfg.dropout)
        model.requires_grad_(False)  # frozen: only the flow is optimised
        self.encoder = SentenceEncoder(model, cfg.base_pooling)
        self.glow = Glow(self.encoder.dim, cfg.flow_levels, cfg.flow_depth, cfg.flow_width)

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        with torch.no_grad():
            u = self.encoder(**batch)  # (bsz, dim)
        with torch.autocast(u.device.type, enabled=False):  # the flow stays in fp32
            z, loss = self.glow.bits_per_dim(u.float())
        return {"loss": loss, "z_var": z.detach().var(dim=0).mean()}


class BertFlow(Method):
    """The ``bertflow`` plugin."""

    name: ClassVar[str] = "bertflow"
    description: ClassVar[str] = "BERT-flow: Glow on a frozen encoder, embedding = Gaussian latent z (Li et al. 2020)"
    citation: ClassVar[str] = ("Li, Zhou, He, Wang, Yang, Li 2020. On the Sentence Embeddings from Pre-trained "
                               "Language Models. EMNLP.")
    Config: ClassVar[type[TrainConfig]] = BertFlowConfig
    presets: ClassVar[dict[str, dict[str, Any]]] = {
        # TSDAE paper App. B budget and optimiser (the dataclass defaults) on bert-base-uncased; first_last_avg
        # input and ActNorm's data-dependent init on the first batch (8 sentences), as the [PF] port.
        "paper": {"model": "bert-base-uncased", "ddi_batch_size": None, "amp": "off"},  # [PF]: fp32
        # ... with App. B's stated mean pooling ("The pooling method for CT and BERT-flow is both mean pooling").
        "paper-mean": {"model": "bert-base-uncased", "base_pooling": "mean", "amp": "off"},
        "official": {  # [PF] example.py optimiser; [BF] run_siamese.sh budget (1 epoch, batch 32, 64 tokens)
            "model": "bert-base-uncased", "optimizer": "bert_adam", "lr": 1e-3, "eps": 1e-6, "weight_decay": 0.01,
            "max_steps": None, "epochs": 1.0, "batch_size": 32, "max_length": 64, "amp": "off",
        },
        "smoke": {  # a few CPU minutes with the packaged model; the paper's lr 1e-6 would not move in 100 steps
            "model": "minilm", "optimizer": "bert_adam", "lr": 1e-3, "eps": 1e-6, "weight_decay": 0.01,
            "max_steps": 100, "batch_size": 32, "max_length": 64, "ddi_batch_size": 256, "log_every": 10,
            "save_every": 0,
        },
        # The CPU-scale recipe: App. B as its text states it (paper-mean: the last layer's mean pooling) on the
        # packaged MiniLM, whose 3 dead dimensions ActNorm drops; its data-dependent init on 64 sentences (8, the
        # paper's first batch, leave every std uncertain by ~25%); lr 1e-6; 100K steps truncated at 500.
        "laptop": laptop_preset({"base_pooling": "mean", "amp": "off"}, BATCH8_STEPS, BATCH8_CURVE,
                                ddi_batch_size=64),
    }
    preset_notes: ClassVar[dict[str, str]] = {
        "laptop": laptop_note(Config(**presets["laptop"])) +
                  f"App. B's batch 8, AdamW lr 1e-6, wd 0.01, its stated mean pooling of the last "
                  "layer as the flow's input (paper-mean): the packaged MiniLM's has 3 dead dimensions (LayerNorm "
                  "weight ~1e-33), which ActNorm drops at its init instead of scaling them by ~1e6; that init on 64 "
                  f"sentences (ddi_batch_size), not the first batch's 8; 100K steps, stopped after {BATCH8_STEPS}; the "
                  "encoder is frozen, so BERT-flow changes only the pooled space (the flow is new at step 0)",
        "paper": "CONFLICT: TSDAE App. B (and its footnote 5) says mean pooling over the last layer for "
                 "BERT-flow; the authors' port UKPLab/pytorch-bertflow says first_last_avg is needed to reproduce "
                 "the paper's numbers; this preset keeps the port's first_last_avg (paper-mean: App. B's text). "
                 "ActNorm's data-dependent init uses the first training batch, 8 sentences at the paper's batch "
                 "size, as the port does (ddi_batch_size=N for a larger init batch). BERT dropout stays on while u "
                 "is extracted in training, as the port's .train()",
        "paper-mean": "App. B's stated mean pooling as the flow's input; otherwise as paper",
    }
    test_overrides: ClassVar[dict[str, Any]] = {"ddi_batch_size": 32}
    st_trust_remote_code: ClassVar[bool] = True  # the flow is usebench.methods.parts.flow_st.FlowPooling
    continuable: ClassVar[bool] = False  # TSDAE paper §5: frozen encoder + flow, not a start for later training
    # The first step initialises ActNorm from its batch (a host-side branch per layer, and at ddi_batch_size rows a
    # shape no later step has): eager, so the compiled step sees the steady state only
    eager_steps: ClassVar[int] = 1
    first_batch_init: ClassVar[bool] = True  # ActNorm's data-dependent init: a step-0 export needs it done

    def eval_pooling(self, cfg: TrainConfig) -> str:
        return "flow"

    def method_json(self, cfg: TrainConfig) -> dict[str, Any]:
        return {"pooler": "usebench.methods.bertflow:flow_pooler"}  # the checkpoint names the code of its pooling

    def pooling_writer(self, cfg: TrainConfig) -> STWriter:
        """sentence-transformers pipeline: the base pooling's modules, then the flow (``flow/``)."""
        base = builtin_writer(cfg.base_pooling)  # type: ignore[attr-defined]

        def write(out_dir: Path, hf_config: Any) -> list[dict[str, Any]]:
            entries = base(out_dir, hf_config)
            idx = 1 + len(entries)
            return [*entries, {"idx": idx, "name": str(idx), "path": FLOW_DIR, "type": "usebench.methods.parts.flow_st.FlowPooling"}]

        return write

    def build(self, cfg: TrainConfig, device: torch.device) -> TrainModule:
        return BertFlowModule(cfg)  # type: ignore[arg-type]

    def collate(self, cfg: TrainConfig, tokenizer: Any, texts: list[str], rng: np.random.Generator) -> dict:
        return tokenize(tokenizer, texts, cfg.max_length)

    def batch_indices(self, cfg: TrainConfig, n: int, step: int, seed: int, rank: int = 0,
                      world: int = 1) -> list[int]:
        """Step 0 may be a larger batch: the one ActNorm initialises from (``ddi_batch_size``)."""
        if world > 1:
            raise ConfigError("bertflow trains on one device: its data-dependent init would differ between ranks")
        ddi = getattr(cfg, "ddi_batch_size", None)
        if step == 0 and ddi:
            if ddi > n:
                raise ConfigError(f"ddi_batch_size={ddi} exceeds the corpus ({n} sentences)")
            return shuffled_batch(n, ddi, 0, seed)
        return super().batch_indices(cfg, n, step, seed, rank, world)

    def export_extra(self, module: TrainModule, cfg: TrainConfig, out_dir: Path) -> None:
        save_flow(module.glow, cfg, out_dir)  # type: ignore[attr-defined]


def save_flow(glow: Glow, cfg: Any, out_dir: Path) -> None:
    """Write ``flow/config.json`` (the Glow's shape and base pooling) and ``flow/model.safetensors``."""
    from safetensors.torch import save_file

    folder = Path(out_dir) / FLOW_DIR
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(folder / "config.json", {"dim": glow.dim, "levels": cfg.flow_levels, "depth": cfg.flow_depth,
                                               "width": cfg.flow_width, "base_pooling": cfg.base_pooling})
    save_file({k: v.detach().cpu().contiguous() for k, v in glow.state_dict().items()}, str(folder / FLOW_WEIGHTS))


def load_flow(model_dir: str | Path, device: torch.device | str = "cpu") -> tuple[Glow, str]:
    """(trained Glow in eval mode, base pooling name) from a checkpoint's ``flow/`` folder."""
    from safetensors.torch import load_file

    folder = Path(model_dir) / FLOW_DIR
    config_path, weights = folder / "config.json", folder / FLOW_WEIGHTS
    if not config_path.is_file() or not weights.is_file():
        raise BenchError(f"pooling 'flow' needs {config_path} and {weights} (a BERT-flow checkpoint written by "
                         f"`bench run --methods bertflow`); {model_dir} has none")
    try:
        spec = json.loads(config_path.read_text(encoding="utf-8"))
        glow = Glow(int(spec["dim"]), int(spec["levels"]), int(spec["depth"]), int(spec["width"]))
        base = str(spec["base_pooling"])
    except (json.JSONDecodeError, KeyError, ValueError) as e:
        raise BenchError(f"{config_path}: expected JSON with dim, levels, depth, width, base_pooling ({e})") from None
    glow.load_state_dict(load_file(str(weights)))
    if not all(bool(m.initialized) for m in glow.modules() if hasattr(m, "initialized")):
        raise BenchError(f"{weights}: the flow was saved before its data-dependent init (never trained)")
    return glow.to(device).eval(), base


def flow_pooler(model_dir: str, device: torch.device) -> PoolFn:
    """Pooling ``flow``: the base pooling of the checkpoint's encoder, then the Glow's z (fp32)."""
    glow, base = load_flow(model_dir, device)
    base_fn = POOLERS.get(base)

    def pool(hidden_states, attention_mask, input_ids):
        u = base_fn(hidden_states, attention_mask, input_ids)  # (bsz, dim)
        with torch.autocast(u.device.type, enabled=False):
            return glow(u.float())[0]

    return pool


METHODS.add("bertflow", BertFlow())
