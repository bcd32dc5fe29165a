"""DenoSent: a denoising objective for self-supervised sentence representation learning.

Wang, He, Wang, Zhou, Sun, Qiu 2024, "DenoSent: A Denoising Objective for Self-Supervised Sentence
Representation Learning", AAAI (arXiv:2401.13621). Reference code: xinghaow99/DenoSent (``model.py``,
``train.py``, README command).

- Sentence vector: the encoder's last hidden state at the ``[MASK]`` of the prompt ``"[X]" means [MASK].``; the
  sentence is first cut to ``max_length`` (32) tokens, special tokens counted, decoded, and inserted for [X].
  Training adds a Linear(h, h) projector on top (dropped at export: the exported encoder pools the raw
  [MASK] state, with the same prompt and truncation, via method.json).
- Denoising: a randomly initialised ``nn.TransformerDecoder`` (16 layers, 1 head, FFN 2048 at h = 768, ReLU,
  post-LN, dropout 0.1) reads the *detached* embedding-layer output of the target sentence after a heavy
  dropout (p = 0.825, inverted) and cross-attends to the projected vector of the *original* sentence (a
  length-1 memory). No causal mask, no label shift: position i predicts token i of the target (prompt tokens
  included), pads excluded. The output layer is the encoder's MLM head (see :mod:`usebench.methods.parts.heads`).
- Contrastive: cos(z_orig_i, z_pos_j) / tau, cross-entropy with label i, one direction.
- Loss: ``contrastive_weight * L_con + generative_weight * L_gen`` (paper Eq. 6 weights 1/1; README 5/7).

Discrete noise: with ``paraphrases=true`` (the ``paper`` and ``official`` presets) each corpus line is
``sentence<TAB>paraphrase``, the paraphrase a back-translation: the contrastive positive and the decoder target.
The authors' data (wiki1m back-translated en->zh->en) is fetched by ``bench data download denosent`` into
``<data-root>/denosent/paraphrases.tsv`` (:mod:`usebench.data.paraphrases`); a corpus without that layout is
refused when the run is planned. Without paraphrases (preset ``paper-no-bt``) the target is the original sentence
and the contrastive positive the same sentence under another dropout mask: the paper's "w/o discrete noise"
ablation (Table 3: avg 77.99 vs 79.33), never the ``paper`` setting.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import nn

from usebench.data.paraphrases import check_paraphrase_corpus, split_paraphrases
from usebench.recipes.laptop_presets import fraction_curve, laptop_note, laptop_preset
from usebench.train.checkpoint import STWriter, builtin_writer
from usebench.train.config import TrainConfig
from usebench.errors import BenchError, ConfigError
from usebench.train.backbone import SentenceEncoder, load_backbone
from usebench.train.plugin import Method, TrainModule
from usebench.train.tokenization import tokenize
from usebench.registry import METHODS
from usebench.methods.parts.denoising_decoder import DenoisingDecoder, decoder_ffn_width
from usebench.methods.parts.heads import HeadInit, label_positions, labelled_ce, mlm_head
from usebench.methods.parts.mask_token import (
    MaskTokenEncoder,
    encoder_prompt,
    mask_positions,
    pool_mask_token,
    prompted_batch,
    write_mask_pooling,
    write_prompted_st_pipeline,
)
from usebench.methods.parts.losses import info_nce

CITATION = ("@inproceedings{wang2024denosent, title={DenoSent: A Denoising Objective for Self-Supervised Sentence "
            "Representation Learning}, author={Wang, Xinghao and He, Junliang and Wang, Pengyu and Zhou, Yunhua and "
            "Sun, Tianxiang and Qiu, Xipeng}, booktitle={AAAI}, year={2024}}")
PROMPT = '"[X]" means [MASK].'  # README command / args.py (config.py's default lacks the quotes and the dot)


def mask_token_pooler(model_dir: str, device: torch.device):
    """Pooler factory for ``bench eval``: reads the [MASK] id from the checkpoint's tokenizer. Exported checkpoints
    name it here (``usebench.methods.denosent:mask_token_pooler`` in method.json), so it stays in this module."""
    from transformers import AutoTokenizer

    mask_id = AutoTokenizer.from_pretrained(model_dir).mask_token_id
    if mask_id is None:
        raise BenchError(f"mask_token pooling: the tokenizer of {model_dir} has no mask token")

    def pool(hidden_states, attention_mask, input_ids):
        return pool_mask_token(hidden_states[-1], input_ids, mask_id)

    return pool


@dataclass(frozen=True)
class DenoSentConfig(TrainConfig):
    """DenoSent settings; defaults are the paper's (§Implementation Details), README values in ``official``."""

    prompt: str = PROMPT  # paper; the encoder applies the same template at test time (method.json)
    pooling: str = "mask_token"  # paper: [MASK] state ("cls": the Tab. 3 ablation, no prompt)
    max_length: int = 32  # paper: input length 32 (the sentence, before the prompt is added)
    batch_size: int = 64  # README --per_device_train_batch_size 64 (the paper states none)
    lr: float = 5e-5  # paper
    max_steps: int | None = 5000  # README --max_steps 5000
    scheduler: Literal["constant", "linear", "warmup_constant", "piecewise"] = "warmup_constant"  # README
    warmup_steps: int = 500  # README --warmup_steps 500
    temperature: float = 0.03  # paper (README: 0.05)
    contrastive_weight: float = 1.0  # paper Eq. 6 (README: 5)
    generative_weight: float = 1.0  # paper Eq. 6 (README: 7)
    decoder_layers: int = 16  # paper: swept {12, 14, 16}, 16 reported
    decoder_heads: int = 1  # paper Fig. 4a: single head best
    decoder_ffn: int | None = None  # None: 2048 (PyTorch default, the reference) scaled by hidden/768
    decoder_dropout: float = 0.1  # reference TransformerDecoderLayer(dropout=0.1)
    noise_dropout: float = 0.825  # paper: continuous noise, swept {0.8 ... 0.9}
    mlm_head: HeadInit = "pretrained"  # reference: BertForMaskedLM.cls (fresh + tied when the checkpoint has none)
    paraphrases: bool = True  # paper: corpus lines are 'sentence<TAB>back-translation' (discrete noise)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.pooling not in ("mask_token", "cls"):
            raise ConfigError(f"denosent pooling must be mask_token or cls, got {self.pooling!r}")
        if self.temperature <= 0:
            raise ConfigError(f"temperature must be > 0, got {self.temperature}")
        if not 0 <= self.noise_dropout < 1 or not 0 <= self.decoder_dropout < 1:
            raise ConfigError("noise_dropout and decoder_dropout must be in [0, 1)")
        if self.contrastive_weight < 0 or self.generative_weight < 0 or \
                self.contrastive_weight + self.generative_weight == 0:
            raise ConfigError("contrastive_weight and generative_weight must be >= 0, not both 0")
        encoder_prompt(self.prompt, "[MASK]")  # validates the template


class DenoSentModule(TrainModule):
    """Encoder + train-only projector, denoising decoder and vocabulary head."""

    def __init__(self, cfg: DenoSentConfig):
        super().__init__()
        model, self.tokenizer, path = load_backbone(cfg.model, dropout=cfg.dropout)
        hidden = int(model.config.hidden_size)
        self.encoder = MaskTokenEncoder(model, self.tokenizer.mask_token_id) if cfg.pooling == "mask_token" \
            else SentenceEncoder(model, "cls")
        std = float(getattr(model.config, "initializer_range", 0.02))
        self.projector = nn.Linear(hidden, hidden)  # reference sent_embedding_projector; dropped at export
        nn.init.normal_(self.projector.weight, std=std)
        nn.init.zeros_(self.projector.bias)
        self.decoder: DenoisingDecoder | None = None  # contrastive-only (Tab. 3 ablation): no decoder at all
        self.head_pretrained = False
        if cfg.generative_weight > 0:
            head, self.head_pretrained = mlm_head(model, path, cfg.mlm_head, tie=True)
            self.decoder = DenoisingDecoder(hidden, cfg.decoder_layers, cfg.decoder_heads,
                                            decoder_ffn_width(hidden, cfg.decoder_ffn), cfg.decoder_dropout,
                                            cfg.noise_dropout, head, std)
        self.cfg = cfg

    def sentence_vectors(self, hidden_states: Sequence[torch.Tensor], input_ids: torch.Tensor,
                         positions: torch.Tensor | None = None) -> torch.Tensor:
        """Pooled vectors before the projector (what the export gives): (rows, h). ``positions``: each row's
        prompt [MASK] index when collate found them (on the host; otherwise found and checked here)."""
        if isinstance(self.encoder, MaskTokenEncoder):
            if positions is not None:
                return hidden_states[-1][torch.arange(len(positions), device=positions.device), positions]
            return pool_mask_token(hidden_states[-1], input_ids, self.encoder.mask_id)
        return hidden_states[-1][:, 0]

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """Rows [0, n) are the originals, [n, 2n) the contrastive positives (if any); the decoder target rows
        start at ``batch["target_start"]`` (n for paraphrases, else 0: the originals, as the reference)."""
        ids, mask, n = batch["input_ids"], batch["attention_mask"], int(batch["n"])
        out = self.encoder.model(input_ids=ids, attention_mask=mask, output_hidden_states=True, return_dict=True)
        z = self.projector(self.sentence_vectors(out.hidden_states, ids, batch.get("mask_positions")))  # (rows, h)
        start = int(batch["target_start"])
        target = slice(start, start + n)
        losses: dict[str, torch.Tensor] = {}
        loss = z.new_zeros(())
        if self.decoder is not None:
            states = self.decoder.states(out.hidden_states[0][target], mask[target] == 0, z[:n].unsqueeze(1))
            # = denoising_loss(self.decoder.head(states), ...), with the head on the non-pad positions only
            losses["generative"] = labelled_ce(self.decoder.head, states, batch["label_positions"],
                                               batch["label_targets"])
            loss = loss + self.cfg.generative_weight * losses["generative"]
        if self.cfg.contrastive_weight > 0:
            losses["contrastive"] = info_nce(z[:n], z[n:2 * n], self.cfg.temperature)
            loss = loss + self.cfg.contrastive_weight * losses["contrastive"]
        return {"loss": loss, **{k: v.detach() for k, v in losses.items()}}


class DenoSent(Method):
    """DenoSent trainer plugin."""

    name = "denosent"
    keep_partial_batch = True  # [DS] the HF Trainer (dataloader_drop_last=False)
    description = ("DenoSent: [MASK]-prompt vector; 16-layer 1-head decoder denoises the 0.825-dropped embedded "
                   "sentence (no causal mask, no shift) + InfoNCE")
    citation = CITATION
    Config = DenoSentConfig
    default_preset = "paper"
    presets: ClassVar[dict[str, dict[str, Any]]] = {
        # Paper: bert-base-uncased, AdamW lr 5e-5, len 32, tau 0.03, L = L_con + L_den, best STSb-dev checkpoint,
        # back-translated paraphrases (the main result, Table 1); the paper gives no batch size, schedule or
        # budget: README values (bs 64, 500 warm-up, 5000 steps). fp32: the README command has no --fp16/--bf16.
        "paper": {"model": "bert-base-uncased", "dev_task": "stsb", "dev_every": 50, "paraphrases": True,
                  "amp": "off"},
        # The paper's "w/o discrete noise" ablation (Table 3): no paraphrase data, a dropout view as positive.
        "paper-no-bt": {"model": "bert-base-uncased", "dev_task": "stsb", "dev_every": 50, "paraphrases": False,
                        "amp": "off"},
        # README command: lr 4e-5, constant_with_warmup 500, 5000 steps, tau 0.05, weights 5/7, eval every 50
        # steps on the mean of STSb-dev and SICK-R-dev (trainer.py eval_avg_sts).
        "official": {"model": "bert-base-uncased", "lr": 4e-5, "temperature": 0.05, "contrastive_weight": 5.0,
                     "generative_weight": 7.0, "dev_task": "stsb,sickr", "dev_every": 50, "paraphrases": True,
                     "amp": "off"},
        # CPU smoke run on the packaged model (no MLM head there: a fresh head tied to the word embeddings).
        "smoke": {"model": "minilm", "max_steps": 100, "batch_size": 16, "warmup_steps": 10, "log_every": 10,
                  "save_every": 0, "paraphrases": False},
        # The CPU-scale recipe: the 'w/o discrete noise' ablation (paper-no-bt: the back-translated pairs the main
        # setting trains on are not here) on the packaged MiniLM; its 500-step warm-up of 5000 steps kept,
        # truncated at 40 steps (~10 CPU s each).
        "laptop": laptop_preset({"dev_task": "stsb", "dev_every": 50, "paraphrases": False}, 40, fraction_curve(40),
                                log_every=5, save_every=20),
    }
    preset_notes: ClassVar[dict[str, str]] = {
        "laptop": laptop_note(Config(**presets["laptop"])) +
                  "the paper's 'w/o discrete noise' ablation (Table 3; its main setting needs the "
                  "authors' back-translated pairs, not here) with the README's batch 64, lr 5e-5, tau 0.03, 16-layer "
                  "decoder (new at step 0), [MASK]-prompt pooling; the 500-step warm-up of 5000 steps kept, stopped "
                  "after 40 (2,560 sentences), all inside the warm-up (LR up to 4e-6), a step costing ~10 CPU s",
        "paper": "the paper states no batch size, schedule or budget: README values (bs 64, 500 warm-up steps then "
                 "constant, 5000 steps); trains on the authors' back-translated pairs (`bench data download "
                 "denosent`, then --corpus <data-root>/denosent/paraphrases.tsv); fp32 as the README command",
        "paper-no-bt": "the 'w/o discrete noise' ablation of Table 3 (avg 77.99): no paraphrase data, the "
                       "positive is a second dropout view and the decoder reconstructs the original",
        "official": "README command; dev = mean of STSb-dev and SICK-R-dev Spearman (trainer.py eval_avg_sts); the "
                    "README trains on 90% of the data (train_test_split(0.1)): here on all of it",
    }
    st_trust_remote_code: ClassVar[bool] = True  # the export's prompt/[MASK] modules live in usebench.methods.parts.denosent_st
    # The contract test trains on plain sentences: the no-paraphrase reading (its own tests cover the pairs).
    test_overrides: ClassVar[dict[str, Any]] = {"paraphrases": False}

    def filter_corpus(self, cfg: DenoSentConfig, texts: list[str]) -> list[str]:
        """With ``paraphrases`` every line must be ``sentence<TAB>paraphrase``: checked when the run is planned,
        with what to do when the corpus is plain sentences (the paper's setting needs the paraphrase data)."""
        if cfg.paraphrases:
            check_paraphrase_corpus(texts)
        return texts

    def build(self, cfg: DenoSentConfig, device: torch.device) -> DenoSentModule:
        return DenoSentModule(cfg)

    def collate(self, cfg: DenoSentConfig, tokenizer: Any, texts: list[str], rng: np.random.Generator) -> dict:
        originals, positives = split_paraphrases(texts, "training corpus", numbered=False) if cfg.paraphrases else (texts, None)
        if positives is None and cfg.contrastive_weight > 0:
            positives = originals  # w/o discrete noise: the positive is another dropout view (the reference)
        rows = originals + (positives or [])
        if cfg.pooling == "mask_token":
            enc = prompted_batch(tokenizer, rows, cfg.prompt, cfg.max_length)
            enc["mask_positions"] = mask_positions(enc["input_ids"], tokenizer.mask_token_id)  # checked on the host
        else:
            enc = tokenize(tokenizer, rows, cfg.max_length)
        start, n = (len(originals) if cfg.paraphrases else 0), len(originals)
        target = enc["input_ids"][start:start + n].masked_fill(enc["attention_mask"][start:start + n] == 0, -100)
        positions, targets = label_positions(target)  # the denoising loss' non-pad target tokens
        return {**enc, "n": n, "target_start": start, "label_positions": positions, "label_targets": targets}

    def method_json(self, cfg: DenoSentConfig) -> dict[str, Any]:
        if cfg.pooling != "mask_token":
            return {}
        # The reference cuts the sentence to max_length tokens before prompting at test time too; the prompted
        # sequence then never exceeds max_length + the prompt's tokens, below the export's max_length.
        tokenizer = _tokenizer(cfg.model)
        return {"prompt": encoder_prompt(cfg.prompt, tokenizer.mask_token), "prompt_text_max_length": cfg.max_length,
                "pooler": "usebench.methods.denosent:mask_token_pooler"}

    def pooling_writer(self, cfg: DenoSentConfig) -> STWriter:
        return write_mask_pooling if cfg.pooling == "mask_token" else builtin_writer(cfg.pooling)

    def export_extra(self, module: TrainModule, cfg: TrainConfig, out_dir: Path) -> None:
        if cfg.pooling == "mask_token":
            write_prompted_st_pipeline(Path(out_dir), self.method_json(cfg))


@lru_cache(maxsize=4)
def _tokenizer(model: str) -> Any:
    from transformers import AutoTokenizer

    from usebench.eval.models import resolve_model

    return AutoTokenizer.from_pretrained(resolve_model(model).path)


METHODS.add("denosent", DenoSent())
