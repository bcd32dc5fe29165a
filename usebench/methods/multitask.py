"""The thesis' autoencoders and its multi-task loss, composed from parts: ``clm-ae``, ``mlm-ae``, ``simcse-clm``,
``simcse-mlm``, ``consert-clm``, ``consert-mlm``.

R. Wang 2022, "Improving Unsupervised Contrastive Learning for Sentence Embeddings" (RWTH master's thesis),
Sec. 3.2-3.3. An autoencoder (:mod:`usebench.methods.parts.autoencoders`: CLM eq. 3.4, MLM eq. 3.5) reconstructs the
sentence from the encoder's pooled embedding f(x). Alone (``clm-ae``, ``mlm-ae``) it is the whole loss, f(x) the
embedding of the clean sentence, and its config has no ``ae_weight`` (``--set ae_weight=...`` is refused there as
an unknown key: a weight on the only loss would just rescale the learning rate). Beside a contrastive method (eq.
3.6, Fig. 3.5) the loss is ``L_contrastive + ae_weight * L_AE`` with f(x) shared: the decoder reads the first
view's pooled embedding (before SimCSE's MLP, which mean pooling does not have), so both losses train the same
sentence representation. The contrastive part is the named method's own module, config and sampling (SimCSE's
dropout views and ``loss`` variants, ConSERT's augmentations), unchanged.

A new combination is a registration line below: ``WithAutoencoder(<contrastive plugin>, "clm"|"mlm")``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from usebench.eval.models import resolve_model
from usebench.registry import METHODS
from usebench.train.config import TrainConfig
from usebench.train.backbone import SentenceEncoder, load_backbone
from usebench.train.plugin import Method, TrainModule
from usebench.methods.consert import THESIS_CONSERT, Consert, ConsertConfig, ConsertModule
from usebench.methods.parts.autoencoders import (
    Autoencoder,
    AutoencoderFields,
    AutoencoderKind,
    MultiTaskFields,
    autoencoder_batch,
    check_autoencoder_fields,
)
from usebench.recipes.thesis_presets import TABLE_5_3, THESIS_NOTE
from usebench.methods.simcse import SimCSE, SimCSEConfig, SimCSEModule

CITATION = ("@mastersthesis{wang2022improving, title={Improving Unsupervised Contrastive Learning for Sentence "
            "Embeddings}, author={Wang, Ruixiang}, school={RWTH Aachen University}, year={2022}}")
SMOKE = {"model": "minilm", "epochs": None, "max_steps": 50, "batch_size": 16, "warmup_steps": 0, "log_every": 10,
         "save_every": 0, "dev_task": None, "dev_every": 0, "dev_metric": None, "dev_patience": None}


@dataclass(frozen=True)
class AutoencoderConfig(TrainConfig, AutoencoderFields):
    """``clm-ae`` / ``mlm-ae``: the encoder + a decoder; defaults are the thesis' Table 5.3."""

    pooling: str = "mean"  # Table 5.3 "pooling avg."

    def __post_init__(self) -> None:
        super().__post_init__()
        check_autoencoder_fields(self)


@dataclass(frozen=True)
class SimCSEAEConfig(SimCSEConfig, AutoencoderFields, MultiTaskFields):
    """SimCSE + ae_weight x an autoencoder (eq. 3.6)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_autoencoder_fields(self)


@dataclass(frozen=True)
class ConsertAEConfig(ConsertConfig, AutoencoderFields, MultiTaskFields):
    """ConSERT + ae_weight x an autoencoder (eq. 3.6 with ConSERT's views)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_autoencoder_fields(self)


class MultiTaskModule(TrainModule):
    """A contrastive module (or none) + an :class:`Autoencoder` reading the shared f(x)."""

    def __init__(self, cfg: Any, contrastive: type[TrainModule] | None, kind: AutoencoderKind):
        super().__init__()
        self.contrastive = contrastive(cfg) if contrastive is not None else None
        if self.contrastive is not None:
            self.encoder, self.tokenizer = self.contrastive.encoder, self.contrastive.tokenizer
        else:
            model, self.tokenizer, _ = load_backbone(cfg.model, dropout=cfg.dropout)
            self.encoder = SentenceEncoder(model, cfg.pooling)
        self.ae_weight = float(getattr(cfg, "ae_weight", 1.0))  # eq. 3.6's w; AutoencoderConfig has none
        self.autoencoder = Autoencoder(kind, resolve_model(cfg.model).path, self.encoder.dim, cfg,
                                       int(self.tokenizer.pad_token_id))

    @property
    def mlp(self) -> torch.nn.Module | None:
        """SimCSE's MLP (its export reads ``module.mlp``)."""
        return getattr(self.contrastive, "mlp", None)

    def compiled_inputs(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The contrastive module's filter (ConSERT drops its augmentation seed)."""
        return self.contrastive.compiled_inputs(batch) if self.contrastive is not None else batch

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        ae = batch["ae"]
        if self.contrastive is None:
            loss_ae = self.autoencoder(self.encoder(ae["target_ids"], ae["attention_mask"]), ae)  # (bsz, h) -> ()
            return {"loss": loss_ae, "ae": loss_ae.detach()}  # eq. 3.4 / 3.5: the whole loss, unweighted
        f, z1, z2 = self.contrastive.two_views(batch)  # each (bsz, h); f: the pooled first view
        loss_cl = self.contrastive.contrastive_loss(z1, z2)
        loss_ae = self.autoencoder(f, ae)
        return {"loss": loss_cl + self.ae_weight * loss_ae, "contrastive": loss_cl.detach(), "ae": loss_ae.detach()}


class WithAutoencoder:
    """Mixin over a contrastive plugin class (or :class:`Method` alone): its build and collate plus the decoder."""

    contrastive_module: ClassVar[type[TrainModule] | None] = None

    def __init__(self, kind: AutoencoderKind):
        self.kind = kind

    def build(self, cfg: Any, device: torch.device) -> MultiTaskModule:
        return MultiTaskModule(cfg, self.contrastive_module, self.kind)

    def collate(self, cfg: Any, tokenizer: Any, texts: list[str], rng: np.random.Generator) -> dict:
        batch = super().collate(cfg, tokenizer, texts, rng) if self.contrastive_module is not None else {}  # type: ignore[misc]
        batch["ae"] = autoencoder_batch(self.kind, tokenizer, texts, cfg.max_length, cfg.mask_ratio, rng)
        return batch


# The AE loss's reduction: the thesis prints eq. 3.4 / 3.5 as per-sentence sums, but says it built on the SimCSE code
# (Sec. 5.2.3), whose auxiliary loss and HF's LM heads average over tokens: an inference (usebench.methods.parts.autoencoders).
AE_REDUCTION_NOTE = ("ae_reduction=token (the mean over predicted tokens) is inferred from the SimCSE/transformers "
                     "code the thesis built on (Sec. 5.2.3), not printed: eq. 3.4/3.5 read as per-sentence sums")


def _thesis(base: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The paper/thesis/official presets (identical: the thesis published no code) and the smoke preset."""
    base = {**base, "ae_reduction": "token"}  # AE_REDUCTION_NOTE
    return {"paper": base, "thesis": base, "official": base, "smoke": {**base, **SMOKE}}


class AutoencoderMethod(WithAutoencoder, Method):
    """``clm-ae`` / ``mlm-ae``: the autoencoder alone (thesis Sec. 3.2)."""

    Config = AutoencoderConfig
    citation = CITATION

    def __init__(self, kind: AutoencoderKind):
        super().__init__(kind)
        self.name = f"{kind}-ae"
        self.description = (f"{kind.upper()} autoencoder (R. Wang 2022, eq. {'3.4' if kind == 'clm' else '3.5'}): "
                            "a 2-layer decoder reconstructs the sentence from its pooled embedding")
        self.presets = _thesis(dict(TABLE_5_3))
        self.preset_notes = {p: THESIS_NOTE + "; no official code: official = paper = thesis; " + AE_REDUCTION_NOTE
                             for p in ("paper", "official")}


class SimCSEWithAutoencoder(WithAutoencoder, SimCSE):
    """``simcse-clm`` / ``simcse-mlm``: eq. 3.6 over SimCSE."""

    Config = SimCSEAEConfig
    contrastive_module = SimCSEModule
    citation = CITATION
    test_overrides = {"pooling": "mean"}

    def __init__(self, kind: AutoencoderKind):
        super().__init__(kind)
        self.name = f"simcse-{kind}"
        self.description = f"SimCSE + ae_weight x {kind.upper()} autoencoder on the shared embedding (eq. 3.6)"
        self.presets = _thesis({**TABLE_5_3, "temperature": 0.05})
        self.preset_notes = {"paper": THESIS_NOTE + "; SimCSE's own loss (eq. 3.1) as Tables 5.16/5.17's L_simcse; "
                             + AE_REDUCTION_NOTE}


class ConsertWithAutoencoder(WithAutoencoder, Consert):
    """``consert-clm`` / ``consert-mlm``: eq. 3.6 over ConSERT₁ (``--set view1=dropout`` for ConSERT₂)."""

    Config = ConsertAEConfig
    contrastive_module = ConsertModule
    citation = CITATION

    def __init__(self, kind: AutoencoderKind):
        super().__init__(kind)
        self.name = f"consert-{kind}"
        self.description = f"ConSERT + ae_weight x {kind.upper()} autoencoder on the shared embedding (eq. 3.6)"
        self.presets = _thesis({**THESIS_CONSERT, "view1": "feature_cutoff", "rate1": 0.2})
        self.preset_notes = {"paper": "ConSERT₁ in the thesis' setup. " + THESIS_NOTE + "; " + AE_REDUCTION_NOTE}


# Each combination is one line: the contrastive plugin class (or none) and the autoencoder.
for _kind in ("clm", "mlm"):
    METHODS.add(f"{_kind}-ae", AutoencoderMethod(_kind))
    METHODS.add(f"simcse-{_kind}", SimCSEWithAutoencoder(_kind))
    METHODS.add(f"consert-{_kind}", ConsertWithAutoencoder(_kind))
