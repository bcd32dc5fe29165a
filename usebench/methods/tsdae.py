"""TSDAE: transformer-based sequential denoising auto-encoder.

Wang, Reimers, Gurevych 2021, "TSDAE: Using Transformer-based Sequential Denoising Auto-Encoder for
Unsupervised Sentence Embedding Learning", Findings of EMNLP. Reference code: sentence-transformers
``losses/DenoisingAutoEncoderLoss.py`` and ``datasets/DenoisingAutoEncoderDataset.py``.

The encoder reads the sentence with 60% of its words deleted (:func:`usebench.methods.parts.noise.delete_words`) and pools it
to s = CLS of the last layer. The decoder is the same checkpoint as a causal LM (``AutoModelForCausalLM``, for
BERT ``BertLMHeadModel``) built with ``is_decoder=True, add_cross_attention=True``; its cross-attention sees
only [s] (a memory of length 1, unmasked). Loss: token CE of the original sentence under teacher forcing;
decoder input = target ids without the last position (starts with [CLS]), labels = target ids shifted left
once, padding ignored (the LM head runs on the non-pad positions only); no self-attention padding mask (causal only; padding sits at the end). With tying (the
paper's choice) every decoder-body module that shares its name with an encoder module uses the encoder's
parameters; the new cross-attention blocks and the LM-head transform stay separate, and the LM head's output
matrix is the shared word-embedding matrix. Only the encoder (+ pooling) is exported.

The configuration search of App. A is a config away: ``noise`` (delete, swap, mask, replace, add:
:mod:`usebench.methods.parts.word_noise`) at ``noise_ratio``, ``pooling`` cls/mean/max, ``tie_encoder_decoder``; the
``app-a`` preset is its protocol. Other backbones (Tables 4, 9): any encoder with a causal-LM class (ELECTRA,
RoBERTa/DistilRoBERTa, BERT; ``from_scratch`` for the "Scratch" row); BART and T5 decode with their own decoder
(:mod:`usebench.methods.parts.seq2seq_denoiser`). DistilBERT has no causal-LM class: untie it with a BERT decoder
(``decoder_model=bert-base-uncased``: same vocabulary and width), a choice the paper does not state.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from usebench.train.config import TrainConfig
from usebench.errors import BenchError, ConfigError
from usebench.train.backbone import SentenceEncoder, load_backbone, set_dropout
from usebench.train.plugin import Method, TrainModule
from usebench.train.tokenization import tokenize
from usebench.registry import METHODS
from usebench.methods.parts.heads import label_positions, labelled_ce, lm_head_of
from usebench.methods.parts.seq2seq_denoiser import (
    checkpoint_is_encoder_decoder, load_seq2seq, reconstruction_loss, seq2seq_label_positions,
)
from usebench.methods.parts.word_noise import NoiseType, add_noise, vocabulary_words
from usebench.recipes.laptop_presets import BATCH8_CURVE, LONG_STEPS, laptop_note, laptop_preset

CITATION = ("@inproceedings{wang-2021-TSDAE, title={TSDAE: Using Transformer-based Sequential Denoising "
            "Auto-Encoder for Unsupervised Sentence Embedding Learning}, author={Wang, Kexin and Reimers, Nils "
            "and Gurevych, Iryna}, booktitle={Findings of EMNLP}, year={2021}, pages={671--688}}")


@dataclass(frozen=True)
class TSDAEConfig(TrainConfig):
    """TSDAE settings; defaults are the paper's chosen configuration (App. A) and budget (App. B)."""

    noise: NoiseType = "delete"  # paper App. A, Table 5: delete | swap | mask | replace | add (usebench.methods.parts.word_noise)
    noise_ratio: float = 0.6  # paper App. A, Table 6: ratio 0.6 (deletion keeps a word iff u > 0.6)
    tie_encoder_decoder: bool = True  # paper App. A: tied encoder/decoder
    decoder_model: str | None = None  # untied only: decoder checkpoint (None: the encoder's checkpoint)
    from_scratch: bool = False  # paper Table 4 "Scratch": the backbone's architecture, randomly initialised
    pooling: str = "cls"  # paper App. A: CLS
    lr: float = 3e-5  # paper App. B
    batch_size: int = 8  # paper App. B
    scheduler: Literal["constant", "linear", "warmup_constant", "piecewise"] = "constant"  # [ST] README
    # paper App. B: transformers v3.1.0 AdamW, whose default eps is 1e-6 (the [ST] README's fit passes only lr)
    eps: float = 1e-6
    max_steps: int | None = 100_000  # paper App. B

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.noise_ratio < 1.0:
            raise ConfigError(f"noise_ratio must be in [0, 1), got {self.noise_ratio}")
        if self.tie_encoder_decoder and self.decoder_model:
            raise ConfigError("decoder_model needs tie_encoder_decoder=false (a tied decoder is the encoder)")


def build_decoder(path: str, from_scratch: bool = False) -> nn.Module:
    """The checkpoint at ``path`` as a causal LM with cross-attention (BERT -> BertLMHeadModel); with
    ``from_scratch`` its architecture with fresh weights."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(path)
    config.is_decoder = True
    config.add_cross_attention = True  # without it the decoder is a plain LM that ignores s
    try:
        if from_scratch:
            return AutoModelForCausalLM.from_config(config)
        return AutoModelForCausalLM.from_pretrained(path, config=config)
    except ValueError as e:
        raise ConfigError(f"{path} cannot serve as a TSDAE decoder (no causal-LM head class): {e}") from None


def tie_decoder_to_encoder(encoder: nn.Module, decoder: nn.Module) -> list[str]:
    """Make the decoder body use the encoder's parameters wherever module names and shapes agree.

    Returns the tied parameter names. Cross-attention modules have no encoder counterpart and stay the
    decoder's own; the LM head's output matrix is pointed at the shared word embeddings.
    """
    body = decoder.base_model
    enc_modules = dict(encoder.named_modules())
    tied = []
    for name, dec_mod in body.named_modules():
        enc_mod = enc_modules.get(name)
        if enc_mod is None or type(enc_mod) is not type(dec_mod):
            continue
        for pname, p in list(dec_mod.named_parameters(recurse=False)):
            q = enc_mod._parameters.get(pname)
            if q is not None and q.shape == p.shape:
                setattr(dec_mod, pname, q)
                tied.append(f"{name}.{pname}" if name else pname)
    if not tied:
        raise ConfigError("no decoder parameter could be tied to the encoder: different architectures?")
    out = decoder.get_output_embeddings()
    if out is not None:
        out.weight = encoder.get_input_embeddings().weight
    return tied


def decoder_inputs(target_ids: torch.Tensor, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(decoder input ids, labels): input drops the last position, labels drop the first (one shift);
    padding labels become -100. target_ids: (bsz, T) -> two (bsz, T-1)."""
    labels = target_ids[:, 1:].masked_fill(target_ids[:, 1:] == pad_id, -100)
    return target_ids[:, :-1], labels


class TSDAEModule(TrainModule):
    """Encoder + (tied) cross-attention decoder; for an encoder-decoder checkpoint (BART, T5) its encoder and
    its own decoder (``seq2seq``, see :mod:`usebench.methods.parts.seq2seq_denoiser`)."""

    def __init__(self, cfg: TSDAEConfig):
        super().__init__()
        self.seq2seq: nn.Module | None = None
        if checkpoint_is_encoder_decoder(cfg.model):
            self._init_seq2seq(cfg)
            return
        model, self.tokenizer, path = load_backbone(cfg.model, dropout=cfg.dropout, from_scratch=cfg.from_scratch)
        self.encoder = SentenceEncoder(model, cfg.pooling)
        decoder_path = path if cfg.tie_encoder_decoder else (cfg.decoder_model or path)
        self.decoder = build_decoder(decoder_path, cfg.from_scratch and decoder_path == path)
        if self.decoder.config.hidden_size != self.encoder.dim:
            raise ConfigError(f"decoder hidden size {self.decoder.config.hidden_size} != encoder {self.encoder.dim}")
        if self.decoder.config.vocab_size < len(self.tokenizer):
            raise ConfigError(f"decoder {decoder_path} has {self.decoder.config.vocab_size} tokens, fewer than the "
                              f"encoder's tokenizer ({len(self.tokenizer)}): targets are tokenized by the encoder's")
        if cfg.tie_encoder_decoder:
            tie_decoder_to_encoder(model, self.decoder)
        set_dropout(self, cfg.dropout)
        self.pad_id = int(self.tokenizer.pad_token_id)

    def _init_seq2seq(self, cfg: TSDAEConfig) -> None:
        if cfg.tie_encoder_decoder or cfg.decoder_model:
            raise ConfigError(f"{cfg.model} is an encoder-decoder checkpoint: TSDAE decodes with its own decoder "
                              "(paper Table 4); set tie_encoder_decoder=false and leave decoder_model unset")
        self.seq2seq, self.tokenizer = load_seq2seq(cfg.model, from_scratch=cfg.from_scratch)
        self.encoder = SentenceEncoder(self.seq2seq.get_encoder(), cfg.pooling)
        self.decoder = None
        set_dropout(self, cfg.dropout)
        self.pad_id = int(self.tokenizer.pad_token_id)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """CE of the decoder's LM head at the non-pad target positions (``label_positions`` from collate)."""
        s = self.encoder(batch["input_ids"], batch["attention_mask"])  # (bsz, hdim)
        if self.seq2seq is not None:
            labelled = (batch["label_positions"], batch["label_targets"]) if "label_positions" in batch else None
            return reconstruction_loss(self.seq2seq, s, batch["target_ids"], self.pad_id, labelled)
        dec_in = batch["target_ids"][:, :-1]  # (bsz, T-1); labels: decoder_inputs (collate)
        # The memory [s] is never masked: no encoder_attention_mask is the same math as an all-ones one, without
        # transformers reading the mask back to the host to find that out (a synchronisation per step)
        hidden = self.decoder.base_model(input_ids=dec_in, attention_mask=None, encoder_hidden_states=s[:, None],
                                         encoder_attention_mask=None, use_cache=False,
                                         return_dict=True).last_hidden_state  # (bsz, T-1, h)
        if "label_positions" in batch:
            positions, targets = batch["label_positions"], batch["label_targets"]
        else:  # a batch made by hand: the same labels, found here (a device synchronisation on a GPU)
            positions, targets = label_positions(decoder_inputs(batch["target_ids"], self.pad_id)[1])
        return labelled_ce(lm_head_of(self.decoder), hidden, positions, targets)


class TSDAE(Method):
    """TSDAE trainer plugin."""

    name = "tsdae"
    keep_partial_batch = True  # [ST] TSDAE README: DataLoader(batch_size=8, shuffle=True), drop_last=False
    description = ("TSDAE: delete 60% of words (or swap/mask/replace/add), reconstruct with a tied cross-attention "
                   "decoder; CLS pooling")
    citation = CITATION
    Config = TSDAEConfig
    default_preset = "paper"
    presets = {
        # Paper App. B: bert-base-uncased, 100K steps, bs 8, AdamW lr 3e-5 (constant, as the [ST] README), no
        # early stopping; max length is not stated (USEB sentences are titles/tweets, well below 128 tokens).
        # Precision: fp32, as sentence-transformers' fit (use_amp=False) that trained the paper's models.
        "paper": {"model": "bert-base-uncased", "amp": "off"},
        # [ST] TSDAE README (the authors' code): bs 8, 1 epoch, AdamW lr 3e-5, constant LR, weight decay 0.
        "official": {"model": "bert-base-uncased", "epochs": 1.0, "max_steps": None, "amp": "off"},  # README fit: fp32
        # The CPU-scale recipe: App. B on the packaged MiniLM, its 100K steps truncated at 1,000 (the constant LR
        # needs no truncation; ~0.6 CPU s a step at one thread: usebench/recipes/laptop.toml [cost]).
        "laptop": laptop_preset({"amp": "off"}, LONG_STEPS, BATCH8_CURVE),
        "smoke": {"model": "minilm", "max_steps": 200, "max_length": 64, "log_every": 20, "save_every": 100},
        # Paper App. A, the configuration search's protocol and its first step (Table 5): NLI sentences without
        # labels (--corpus allnli), STSb dev every 1.5K steps up to 30K, the best dev checkpoint kept; noise ratio
        # 0.3, CLS, untied (tying is the search's last step, which reached 79.15). Evaluate with --split dev.
        "app-a": {"model": "bert-base-uncased", "max_steps": 30_000, "dev_task": "stsb", "dev_every": 1_500,
                  "noise_ratio": 0.3, "tie_encoder_decoder": False, "amp": "off"},  # v0.3.8 fit: fp32
    }
    preset_notes = {
        "laptop": laptop_note(Config(**presets["laptop"])) +
                  f"App. B's batch 8, AdamW lr 3e-5 constant, deletion 0.6, CLS, tied decoder (its "
                  f"cross-attention new at step 0); 100K steps, stopped after {LONG_STEPS:,}",
        "app-a": "App. A states the protocol, not the untied decoder's checkpoint: the encoder's own "
                 "(bert-base-uncased, as sentence-transformers' decoder_name_or_path); batch 8, lr 3e-5 as App. B",
        "paper": "App. B states no max length or schedule: 128 tokens (USEB titles/tweets are far shorter) and the "
                 "[ST] README's constant LR; AdamW eps 1e-6 as transformers v3.1.0's AdamW",
    }

    def build(self, cfg: TSDAEConfig, device: torch.device) -> TSDAEModule:
        return TSDAEModule(cfg)

    def collate(self, cfg: TSDAEConfig, tokenizer: Any, texts: list[str], rng: np.random.Generator) -> dict:
        vocab = self._vocabulary(tokenizer) if cfg.noise in ("replace", "add") else ()
        noisy = [add_noise(cfg.noise, t, cfg.noise_ratio, rng, mask_token=tokenizer.mask_token, vocab=vocab)
                 for t in texts]  # fresh noise every time a line is used
        src = tokenize(tokenizer, noisy, cfg.max_length)
        target = tokenize(tokenizer, texts, cfg.max_length)
        if self._seq2seq(cfg):  # BART/T5 decode every target token (input shifted right), not the shift left
            positions, targets = seq2seq_label_positions(target["input_ids"], tokenizer.pad_token_id)
        else:
            positions, targets = label_positions(decoder_inputs(target["input_ids"], tokenizer.pad_token_id)[1])
        return {"input_ids": src["input_ids"], "attention_mask": src["attention_mask"],
                "target_ids": target["input_ids"], "label_positions": positions, "label_targets": targets}


    def backbone_defaults(self, cfg: TSDAEConfig, user: Any) -> tuple[dict[str, Any], str | None]:
        """An encoder-decoder backbone (BART, T5) decodes with its own decoder (paper Table 4): the tied decoder of
        the presets is turned off with a note; a tied or separate decoder the user asked for is refused now."""
        if not (cfg.tie_encoder_decoder or cfg.decoder_model):
            return {}, None
        try:
            seq2seq = self._seq2seq(cfg)
        except (OSError, ValueError, BenchError):  # a backbone not on this machine (a cluster's driver): the unit
            return {}, None                          # checks it where it runs
        if not seq2seq:
            return {}, None
        if user.get("tie_encoder_decoder") or user.get("decoder_model"):
            raise ConfigError(f"{cfg.model} is an encoder-decoder checkpoint: TSDAE decodes with its own decoder "
                              "(paper Table 4); drop --set tie_encoder_decoder=true / decoder_model")
        return {"tie_encoder_decoder": False}, (
            f"tsdae on {cfg.model}: an encoder-decoder checkpoint decodes with its own decoder (TSDAE paper Table 4), "
            "so tie_encoder_decoder=false")

    def _seq2seq(self, cfg: TSDAEConfig) -> bool:
        """Whether ``cfg.model`` is an encoder-decoder checkpoint, read from its config once per process."""
        cache = self.__dict__.setdefault("_seq2seq_cache", {})
        if cfg.model not in cache:
            cache[cfg.model] = checkpoint_is_encoder_decoder(cfg.model)
        return cache[cfg.model]

    def _vocabulary(self, tokenizer: Any) -> list[str]:
        """The backbone's whole words (replace/add noise draw from them), computed once per tokenizer."""
        key = (tokenizer.name_or_path, len(tokenizer))
        cache = self.__dict__.setdefault("_vocab_cache", {})
        if key not in cache:
            cache[key] = vocabulary_words(tokenizer)
        return cache[key]

    def export_module(self, module: TSDAEModule) -> tuple[nn.Module, Any]:
        """The encoder; for BART/T5 the whole seq2seq model, whose encoder the evaluator and sentence-transformers
        (T5) load (:mod:`usebench.eval.encoder_only`)."""
        return (module.seq2seq if module.seq2seq is not None else module.encoder.model), module.tokenizer


METHODS.add("tsdae", TSDAE())
