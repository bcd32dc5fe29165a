"""MLM: domain-adaptive masked-language-model training, then mean pooling (the TSDAE paper's MLM baseline).

Devlin, Chang, Lee, Toutanova 2019, "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding", NAACL; used as an unsupervised sentence-embedding baseline in Wang, Reimers, Gurevych 2021
(TSDAE, §5.2). Reference code: sentence-transformers ``examples/.../MLM/train_mlm.py`` (HF Trainer +
``DataCollatorForWholeWordMask``).

15% of the non-special, non-padding tokens are selected (``whole_word``: a budget of round(0.15 x tokens) filled
with whole words, as transformers 4.x's whole-word collator); of those 80% become [MASK], 10% a random token,
10% stay (:func:`usebench.methods.parts.noise.mask_tokens`); CE only on the selected positions, and the head (a
vocabulary-wide projection) runs on those positions only (:func:`usebench.methods.parts.heads.labelled_ce`). The MLM head is the
checkpoint's own (``AutoModelForMaskedLM``; newly initialised when the checkpoint has none, e.g. MiniLM), its
output matrix tied to the word embeddings. The exported encoder (with its BERT pooler, unused) is mean-pooled.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from usebench.recipes.laptop_presets import BATCH8_CURVE, LONG_STEPS, laptop_note, laptop_preset
from usebench.train.config import TrainConfig
from usebench.errors import BenchError, ConfigError
from usebench.train.backbone import SentenceEncoder, load_backbone, set_dropout
from usebench.train.plugin import Method, TrainModule
from usebench.train.tokenization import tokenize
from usebench.registry import METHODS
from usebench.train.static_shapes import natural_width
from usebench.methods.parts.heads import label_positions, labelled_ce, lm_head_of
from usebench.methods.parts.noise import mask_tokens

CITATION = ("@inproceedings{devlin2019bert, title={BERT: Pre-training of Deep Bidirectional Transformers for "
            "Language Understanding}, author={Devlin, Jacob and Chang, Ming-Wei and Lee, Kenton and Toutanova, "
            "Kristina}, booktitle={NAACL}, year={2019}}")


@dataclass(frozen=True)
class MLMConfig(TrainConfig):
    """MLM settings; defaults are the TSDAE paper's (§5.2: original BERT setup, 100K steps, bs 8, lr 5e-5)."""

    mlm_probability: float = 0.15  # BERT: 15% of tokens selected
    mask_frac: float = 0.8  # BERT: 80% of selected -> [MASK]
    random_frac: float = 0.1  # BERT: 10% -> random token (the remaining 10% unchanged)
    # BERT original: token-level; [ST] train_mlm.py: DataCollatorForWholeWordMask (transformers 4.x: a fixed budget
    # of round(0.15 x tokens) filled with whole words, see usebench.methods.parts.noise.select_whole_words)
    whole_word: bool = False
    min_chars: int = 0  # [ST] train_mlm.py drops lines shorter than 10 characters
    pooling: str = "mean"  # TSDAE paper §5.2
    max_steps: int | None = 100_000  # TSDAE paper §5.2
    batch_size: int = 8  # TSDAE paper §5.2
    lr: float = 5e-5  # TSDAE paper §5.2
    optimizer: Literal["adamw", "rmsprop", "bert_adam"] = "bert_adam"  # BERT: Adam without bias correction
    weight_decay: float = 0.01  # BERT
    eps: float = 1e-6  # BERT
    scheduler: Literal["constant", "linear", "warmup_constant", "piecewise"] = "linear"  # BERT: warm-up + decay
    warmup_steps: int = 10_000  # BERT: 10K warm-up steps

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.mlm_probability < 1 or self.mask_frac + self.random_frac > 1:
            raise ConfigError("need 0 < mlm_probability < 1 and mask_frac + random_frac <= 1")


class MLMModule(TrainModule):
    """A masked-LM head on the encoder (sharing its body and word embeddings)."""

    def __init__(self, cfg: MLMConfig):
        super().__init__()
        from transformers import AutoModelForMaskedLM

        model, self.tokenizer, path = load_backbone(cfg.model, dropout=cfg.dropout)
        if self.tokenizer.mask_token_id is None:
            raise ConfigError(f"{cfg.model}: the tokenizer has no mask token; MLM needs one")
        self.mlm = AutoModelForMaskedLM.from_pretrained(path)
        # The head model's own body is replaced by the encoder, so what is trained is exactly what is exported
        # (with its pooler), and the head's output matrix follows the encoder's word embeddings.
        setattr(self.mlm, self.mlm.base_model_prefix, model)
        self.mlm.get_output_embeddings().weight = model.get_input_embeddings().weight
        set_dropout(self, cfg.dropout)
        self.encoder = SentenceEncoder(model, cfg.pooling)

    @property
    def head(self) -> torch.nn.Module:
        """The head model's vocabulary head (BERT: ``cls``); a property, so the state dict names it once."""
        return lm_head_of(self.mlm)

    def forward(self, batch: dict[str, Any]) -> dict[str, Any]:
        """CE of the head at the masked positions (``label_positions``/``label_targets`` from collate)."""
        hidden = self.mlm.base_model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                     return_dict=True).last_hidden_state  # (bsz, L, h)
        loss = labelled_ce(self.head, hidden, batch["label_positions"], batch["label_targets"])
        return {"loss": loss, "masked_frac": batch["masked_frac"]}


class MLM(Method):
    """Masked-LM trainer plugin."""

    name = "mlm"
    keep_partial_batch = True  # [ST] train_mlm.py: the HF Trainer (dataloader_drop_last=False)
    description = "MLM domain adaptation: 15% tokens (80/10/10), CE on masked positions; mean pooling"
    citation = CITATION
    Config = MLMConfig
    default_preset = "paper"
    presets = {
        # TSDAE paper §5.2: original BERT setup (Adam w/o bias correction, wd 0.01, 10K warm-up + linear decay)
        # except 100K steps, batch 8, lr 5e-5; mean pooling.
        "paper": {"model": "bert-base-uncased", "amp": "off"},  # BERT's setup: fp32
        # [ST] train_mlm.py: bs 64, 3 epochs, max_len 100, whole-word masking, lines < 10 chars dropped, HF Trainer
        # defaults (AdamW lr 5e-5, linear decay, no warm-up, wd 0).
        "official": {"model": "bert-base-uncased", "epochs": 3.0, "max_steps": None, "batch_size": 64,
                     "max_length": 100, "whole_word": True, "min_chars": 10, "optimizer": "adamw",
                     "weight_decay": 0.0, "eps": 1e-8, "warmup_steps": 0, "amp": "off"},  # use_fp16 = False
        "smoke": {"model": "minilm", "max_steps": 200, "batch_size": 16, "max_length": 64, "warmup_steps": 20,
                  "log_every": 20, "save_every": 100},
        # The CPU-scale recipe: §5.2 on the packaged MiniLM, its schedule kept (10K warm-up, then linear decay over
        # 100K steps) and truncated at 1,000 steps: all inside the warm-up, at most 10% of the peak LR.
        "laptop": laptop_preset({"amp": "off"}, LONG_STEPS, BATCH8_CURVE),
    }
    preset_notes = {
        "laptop": laptop_note(Config(**presets["laptop"])) +
                  f"§5.2's batch 8, lr 5e-5, BERT's Adam and masking, mean pooling; the 10K warm-up and "
                  f"linear decay over 100K steps kept, stopped after {LONG_STEPS:,}: every step inside the warm-up "
                  f"(LR up to 5e-6); the packaged MiniLM ships no MLM head, so the head is new at step 0",
        "paper": "§5.2 changes only steps, batch and lr of BERT's setup; the rest is BERT's: token-level 15% masking, "
                 "Adam without bias correction (eps 1e-6, wd 0.01), 10K warm-up + linear decay, 128 tokens",
        "official": "whole-word masking with a fixed budget of round(0.15 x tokens), as transformers 4.x's collator",
    }

    def build(self, cfg: MLMConfig, device: torch.device) -> MLMModule:
        return MLMModule(cfg)

    def collate(self, cfg: MLMConfig, tokenizer: Any, texts: list[str], rng: np.random.Generator) -> dict:
        enc = tokenize(tokenizer, texts, cfg.max_length, special_tokens_mask=True, word_ids=cfg.whole_word)
        ids, labels = mask_tokens(enc["input_ids"], enc["special_tokens_mask"], rng, mask_id=tokenizer.mask_token_id,
                                  vocab_size=len(tokenizer), prob=cfg.mlm_probability, mask_frac=cfg.mask_frac,
                                  random_frac=cfg.random_frac, word_ids=enc.get("word_ids"),
                                  lengths=enc["attention_mask"].sum(dim=1).tolist(),
                                  width=natural_width(enc["attention_mask"]))
        positions, targets = label_positions(labels)  # padded to a count bucket on the fast path
        return {"input_ids": ids, "attention_mask": enc["attention_mask"], "labels": labels,
                "label_positions": positions, "label_targets": targets,
                "masked_frac": int((labels != -100).sum()) / int(enc["attention_mask"].sum())}

    def filter_corpus(self, cfg: MLMConfig, texts: list[str]) -> list[str]:
        """[ST] drops lines shorter than ``min_chars``."""
        kept = [t for t in texts if len(t) >= cfg.min_chars]
        if not kept:
            raise BenchError(f"no corpus line has >= {cfg.min_chars} characters (min_chars)")
        return kept


METHODS.add("mlm", MLM())
