"""PaSeR's phrase decoder (Wu & Zhao 2022; reference ``paser/models.py``): the decoding signal built from the two
views' sentence vectors, a randomly initialised ``BartDecoder`` whose token input is the encoder's embedding module,
and its teacher-forced inputs and labels.

- ``signal="code"`` (the released code, Table 1's run): ``[t*(z1*z2), k*(z1 - z2), z1, z2]`` with z2 = Linear(E_s~),
  a train-only projection, no absolute values;
- ``signal="eq2"`` (the paper's Eq. 2): ``[E_s, E_s~, m*|E_s - E_s~|, n*|E_s * E_s~|]``.
"""
from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from usebench.errors import BenchError, ConfigError

Signal = Literal["code", "eq2"]


def decoder_io(target_ids: torch.Tensor, target_mask: torch.Tensor, usable: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher forcing: input = target without its last position (starts with [CLS]); labels = target shifted
    left (ends with [SEP]), -100 on pads and on rows that are not ``usable``. (bsz, len) -> 2 x (bsz, len-1)."""
    inputs = target_ids[:, :-1]
    labels = target_ids[:, 1:].masked_fill(target_mask[:, 1:] == 0, -100)
    labels = labels.masked_fill(~usable.bool().unsqueeze(1), -100)
    return inputs, labels


def decoding_signal(z1: torch.Tensor, z2: torch.Tensor, form: Signal, m: float = 10.0, n: float = 10.0,
                    t: float = 1.0, k: float = 1.0, projection: nn.Module | None = None) -> torch.Tensor:
    """The decoder memory from E_s (z1) and E_s~ (z2), both (bsz, h) -> (bsz, 4, h); see the module docstring."""
    if form == "eq2":
        parts = [z1, z2, m * (z1 - z2).abs(), n * (z1 * z2).abs()]
    else:
        if projection is None:
            raise BenchError("the code form of PaSeR's decoding signal needs the projection layer")
        z2 = projection(z2)
        parts = [t * (z1 * z2), k * (z1 - z2), z1, z2]
    return torch.stack(parts, dim=1)


def masked_ce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean CE over labels != -100; 0 (with a graph) when there are none, where torch would give NaN. Training
    computes the same loss without the unlabelled positions' logits (:func:`usebench.methods.parts.heads.labelled_ce`)."""
    flat = labels.reshape(-1)
    if not bool((flat != -100).any()):
        return logits.sum() * 0.0
    return F.cross_entropy(logits.float().reshape(flat.shape[0], -1), flat, ignore_index=-100)


class _BertEmbeddingInput(nn.Module):
    """The encoder's whole embedding module (word + position + type, LayerNorm, dropout) as decoder input,
    as the reference does (``decoder.embed_tokens = bert.embeddings``)."""

    def __init__(self, embeddings: nn.Module):
        super().__init__()
        self.embeddings = embeddings

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.embeddings(input_ids=input_ids)


def build_decoder(model: nn.Module, layers: int, heads: int, ffn: int, pad_id: int,
                  embeddings: Literal["word", "bert"]) -> nn.Module:
    """A randomly initialised ``BartDecoder`` of the encoder's width whose token embeddings are shared with it."""
    from transformers import BartConfig
    from transformers.models.bart.modeling_bart import BartDecoder

    hidden = int(model.config.hidden_size)
    if hidden % heads:
        raise ConfigError(f"PaSeR decoder: hidden size {hidden} is not divisible by decoder_heads={heads}")
    config = BartConfig(vocab_size=int(model.config.vocab_size), d_model=hidden, decoder_layers=layers,
                        decoder_attention_heads=heads, decoder_ffn_dim=ffn, activation_function="gelu",
                        max_position_embeddings=512, pad_token_id=pad_id, encoder_layers=1,
                        decoder_layerdrop=0.0)  # the reference's BartConfig; dropout 0.1 is BART's default
    decoder = BartDecoder(config)
    decoder.embed_tokens = model.get_input_embeddings() if embeddings == "word" \
        else _BertEmbeddingInput(model.embeddings)
    return decoder
