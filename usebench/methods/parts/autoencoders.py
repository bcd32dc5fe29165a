"""The thesis' autoencoders: a shallow Transformer decoder that reconstructs a sentence from its embedding.

R. Wang 2022, "Improving Unsupervised Contrastive Learning for Sentence Embeddings" (RWTH master's thesis),
Sec. 3.2. Both decoders are ``decoder_layers`` (2, Table 5.3) BERT layers of the encoder's width, with their own
embedding layer and vocabulary head; ``s`` is the encoder's pooled sentence embedding f(x), shape (bsz, hidden).

- **CLM** (eq. 3.4, Fig. 3.3): causal self-attention plus cross-attention whose keys and values are [s] alone
  (TSDAE's bottleneck); teacher forcing on the uncorrupted sentence: input = ids without the last position,
  labels = ids shifted left once, padding ignored.
- **MLM** (eq. 3.5, Fig. 3.4): a copy of the sentence with ``mask_ratio`` (80%, "usually 80% in this thesis") of
  its non-special tokens replaced by [MASK] (:func:`usebench.methods.parts.noise.mask_tokens` with 100% [MASK], no
  random/keep split: Fig. 3.4 "replacing the original token with [mask] token"); the decoder's word embedding at
  position 0 ([CLS]) is replaced by ``s``; bidirectional layers predict the masked tokens.

Loss (``ae_reduction``): ``token`` (default, the ``thesis`` presets) = the mean NLL over predicted tokens;
``sentence`` = eq. 3.4/3.5 read literally, -(1/N) sum_i sum_t log P (token NLLs summed per sentence, averaged over
sentences), which multiplies the loss, and so eq. 3.6's effective w, by the predicted tokens per sentence. The thesis
prints only the equations; ``token`` is an inference from the code it names (Sec. 5.2.3, line 658 of the text: "build
the implementation on top of existing SimCSE source code" with ``transformers``): SimCSE's auxiliary objective
(``simcse/models.py``: ``loss_fct = nn.CrossEntropyLoss()``; ``loss = loss + mlm_weight * loss_fct(prediction_scores,
mlm_labels)``) and HF's LM heads average over tokens, and TSDAE, which inspired the CLM autoencoder, prints the same
per-sentence sum (its eq. J_SDAE) while its released loss (sentence-transformers ``DenoisingAutoEncoderLoss``:
``nn.CrossEntropyLoss(ignore_index=pad)``) is a token mean. The thesis' weights w in {0.1, ..., 1e-4} start at
SimCSE's ``mlm_weight`` default 0.1.
The vocabulary head runs only at labelled positions (:func:`usebench.methods.parts.heads.labelled_ce`, on the positions
:func:`autoencoder_batch` finds in collate, so the step needs no device synchronisation to size the gather): the
same loss and gradients as projecting every position, without the 30,522-wide projection of the positions no loss
reads (``tests/methods/test_thesis_losses.py`` compares both reductions with the full-logits reference).

Where the thesis is silent (decoder initialisation, which embedding the sentence vector replaces): the decoder
starts from the backbone's bottom ``decoder_layers`` layers, embeddings and MLM head where the checkpoint has one
(``decoder_init=pretrained``; HF's ``num_hidden_layers`` truncation), cross-attention new; ``s`` replaces the word
embedding of [CLS] (position and segment embeddings and LayerNorm follow, as ``inputs_embeds`` in HF).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from usebench.errors import ConfigError
from usebench.train.backbone import set_dropout
from usebench.train.tokenization import tokenize
from usebench.train.static_shapes import natural_width
from usebench.methods.parts.heads import IGNORE, _head_of, _quiet_transformers, label_positions, labelled_ce
from usebench.methods.parts.noise import mask_tokens

AutoencoderKind = Literal["clm", "mlm"]
Reduction = Literal["sentence", "token"]
DecoderInit = Literal["pretrained", "random"]


@dataclass(frozen=True)
class AutoencoderFields:
    """Config fields of an autoencoder objective, mixed into a method's config dataclass."""

    decoder_layers: int = 2  # thesis Sec. 3.2.1 "always set 2 layers for decoder"; Table 5.3
    decoder_init: DecoderInit = "pretrained"  # thesis silent: the backbone's bottom layers (see module doc)
    mask_ratio: float = 0.8  # thesis Sec. 3.2.2 "randomly mask some tokens (usually 80% in this thesis)"
    ae_reduction: Reduction = "token"  # inferred from the SimCSE/HF code the thesis built on (module doc)


@dataclass(frozen=True)
class MultiTaskFields:
    """Eq. 3.6's weight, a field of the multi-task configs only: alone (``clm-ae``, ``mlm-ae``) the autoencoder is
    the whole loss (eq. 3.4 / 3.5), so a weight there would only rescale the learning rate."""

    ae_weight: float = 0.001  # eq. 3.6's w: the thesis sweeps {0.1, 0.01, 0.001, 1e-4}; 0.001 is its best CLM w


def check_autoencoder_fields(cfg: Any) -> None:
    """ConfigError for out-of-range autoencoder fields."""
    if getattr(cfg, "ae_weight", 0.0) < 0:  # multi-task configs only (MultiTaskFields)
        raise ConfigError(f"ae_weight must be >= 0, got {cfg.ae_weight}")
    if cfg.decoder_layers < 1:
        raise ConfigError(f"decoder_layers must be >= 1, got {cfg.decoder_layers}")
    if not 0.0 < cfg.mask_ratio <= 1.0:
        raise ConfigError(f"mask_ratio must be in (0, 1], got {cfg.mask_ratio}")


def clm_labels(target_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """The CLM decoder's labels: the targets shifted left once, padding -100; (bsz, T) -> (bsz, T-1)."""
    return target_ids[:, 1:].masked_fill(target_ids[:, 1:] == pad_id, IGNORE)


def reduce_nll(head: nn.Module, hidden: torch.Tensor, positions: torch.Tensor, targets: torch.Tensor,
               n_sentences: int, reduction: Reduction) -> torch.Tensor:
    """Token NLLs (fp32) of the head at the labelled positions, divided by the tokens (``token``) or by the
    sentences (``sentence``: the mean times labelled tokens / sentences). The tokens are the targets that are not
    ``IGNORE``, counted on the device (no synchronisation), not ``positions.numel()``: on the fast path the
    positions are padded up to a count bucket with ignored targets (:func:`usebench.train.static_shapes.
    pad_labelled`), which the mean skips and the count must too."""
    mean = labelled_ce(head, hidden, positions, targets)  # 0 (with a graph) when nothing is labelled
    if reduction == "sentence":
        return mean * ((targets != IGNORE).sum() / n_sentences)
    return mean


def build_decoder(path: str, kind: AutoencoderKind, layers: int, init: DecoderInit) -> nn.Module:
    """The backbone's architecture cut to ``layers`` layers, as a causal LM with cross-attention (``clm``) or a
    masked LM (``mlm``); weights from ``path`` (``pretrained``) or HF's random initialisation."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM

    config = AutoConfig.from_pretrained(path)
    available = int(getattr(config, "num_hidden_layers", layers))
    if layers > available and init == "pretrained":
        raise ConfigError(f"decoder_layers={layers}: {path} has only {available} layers to start the decoder from")
    config.num_hidden_layers = layers
    if kind == "clm":
        config.is_decoder, config.add_cross_attention = True, True  # cross-attention to [s]; causal mask
    model_class = AutoModelForCausalLM if kind == "clm" else AutoModelForMaskedLM
    try:
        with _quiet_transformers():  # new cross-attention / a head the checkpoint lacks are expected
            return model_class.from_pretrained(path, config=config) if init == "pretrained" \
                else model_class.from_config(config)
    except ValueError as e:
        raise ConfigError(f"{path} cannot serve as a {kind.upper()} autoencoder decoder: {e}") from None


class Autoencoder(nn.Module):
    """The decoder of one autoencoder objective: ``forward(s, batch) -> loss`` (see the module docstring)."""

    def __init__(self, kind: AutoencoderKind, path: str, hidden: int, cfg: Any, pad_id: int):
        super().__init__()
        self.kind, self.reduction, self.pad_id = kind, cfg.ae_reduction, pad_id
        self.decoder = build_decoder(path, kind, cfg.decoder_layers, cfg.decoder_init)
        if int(self.decoder.config.hidden_size) != hidden:
            raise ConfigError(f"decoder width {self.decoder.config.hidden_size} != sentence embedding {hidden}")
        self.body = self.decoder.base_model
        self.head = _head_of(self.decoder)[1]
        set_dropout(self.decoder, cfg.dropout)

    def forward(self, s: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """s: (bsz, hidden) sentence embeddings; batch: :func:`autoencoder_batch`'s tensors."""
        if self.kind == "clm":
            target = batch["target_ids"]  # (bsz, T); labels: clm_labels (collate)
            # [s] unmasked: no mask = an all-ones one, without transformers reading it back to the host
            hidden = self.body(input_ids=target[:, :-1], encoder_hidden_states=s[:, None],
                               use_cache=False).last_hidden_state  # (bsz, T-1, h)
        else:
            words = self.body.get_input_embeddings()(batch["masked_ids"])  # (bsz, T, h)
            embeds = torch.cat([s[:, None].to(words.dtype), words[:, 1:]], dim=1)  # [CLS] slot <- f(x)
            hidden = self.body(inputs_embeds=embeds, attention_mask=batch["attention_mask"]).last_hidden_state
        if "label_positions" in batch:
            positions, targets = batch["label_positions"], batch["label_targets"]
        else:  # a batch made by hand: the same labels, found here (a device synchronisation on a GPU)
            positions, targets = label_positions(self.labels(batch))
        return reduce_nll(self.head, hidden, positions, targets, s.shape[0], self.reduction)

    def labels(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The decoder's labels, -100 where nothing is predicted: CLM (bsz, T-1), MLM (bsz, T)."""
        return clm_labels(batch["target_ids"], self.pad_id) if self.kind == "clm" else batch["labels"]


def autoencoder_batch(kind: AutoencoderKind, tokenizer: Any, texts: list[str], max_length: int, mask_ratio: float,
                      rng: np.random.Generator) -> dict[str, torch.Tensor]:
    """The uncorrupted sentences (``target_ids``, ``attention_mask``: the encoder's input and the CLM target),
    for ``mlm`` the masked copy and its labels (masking drawn from ``rng``), and the decoder's labelled positions
    (``label_positions``, ``label_targets``: :func:`usebench.methods.parts.heads.label_positions`)."""
    enc = tokenize(tokenizer, texts, max_length, special_tokens_mask=kind == "mlm")
    out = {"target_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
    if kind == "mlm":
        out["masked_ids"], out["labels"] = mask_tokens(
            enc["input_ids"], enc["special_tokens_mask"], rng, mask_id=tokenizer.mask_token_id,
            vocab_size=len(tokenizer), prob=mask_ratio, mask_frac=1.0, random_frac=0.0,
            width=natural_width(enc["attention_mask"]))
    labels = out["labels"] if kind == "mlm" else clm_labels(out["target_ids"], int(tokenizer.pad_token_id))
    out["label_positions"], out["label_targets"] = label_positions(labels)  # on the host: no sync in the step
    return out
