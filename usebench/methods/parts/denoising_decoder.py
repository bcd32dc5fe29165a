"""DenoSent's continuous-noise denoiser (Wang et al. 2024, reference ``model.py``): a randomly initialised
``nn.TransformerDecoder`` (ReLU, post-LN: PyTorch's defaults) reads the *detached* embedding-layer output of the
target sentence after a heavy dropout and cross-attends to the sentence vector (a length-1 memory). No causal mask, no
label shift: position i predicts token i of the target, pads excluded. Its vocabulary head is the encoder's MLM head
(:mod:`usebench.methods.parts.heads`).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from usebench.errors import BenchError

BASE_FFN, BASE_HIDDEN = 2048, 768  # nn.TransformerDecoderLayer's default FFN width, at bert-base's width


def decoder_ffn_width(hidden: int, ffn: int | None) -> int:
    """``ffn`` if set, else PyTorch's default 2048 scaled by hidden/768 (2048 at bert-base, 1024 at MiniLM-384)."""
    return int(ffn) if ffn else max(1, round(BASE_FFN * hidden / BASE_HIDDEN))


class DenoisingDecoder(nn.Module):
    """Continuous-noise denoiser: dropout on the (detached) embedded target, a non-causal transformer decoder
    cross-attending to the sentence vector, and a vocabulary head. Position i predicts token i."""

    def __init__(self, hidden: int, layers: int, heads: int, ffn: int, dropout: float, noise_dropout: float,
                 head: nn.Module, init_std: float = 0.02):
        super().__init__()
        if hidden % heads:
            raise BenchError(f"DenoSent decoder: hidden size {hidden} is not divisible by {heads} heads")
        layer = nn.TransformerDecoderLayer(d_model=hidden, nhead=heads, dim_feedforward=ffn, dropout=dropout,
                                           batch_first=True)  # ReLU, post-LN: PyTorch defaults, as the reference
        self.layers = nn.TransformerDecoder(layer, num_layers=layers)
        self.noise = nn.Dropout(noise_dropout)
        self.head = head
        # The reference re-initialises its new Linear layers with HF's BERT init (normal(0, 0.02), zero bias);
        # the attention in-projections keep PyTorch's Xavier init.
        for module in self.layers.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=init_std)
                nn.init.zeros_(module.bias)

    def states(self, embedded: torch.Tensor, padding: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        """embedded: (bsz, seq, h) embedding-layer output of the target; padding: (bsz, seq) True at pads;
        memory: (bsz, 1, h) sentence vectors -> the last layer's states (bsz, seq, h), before the head."""
        tgt = self.noise(embedded.detach())  # detached: the decoder input carries no gradient to the encoder
        return self.layers(tgt=tgt, memory=memory, tgt_mask=None, tgt_key_padding_mask=padding,
                           tgt_is_causal=False)

    def forward(self, embedded: torch.Tensor, padding: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        """Logits (bsz, seq, vocab) at every position (training scores the non-pad ones only, see
        :meth:`usebench.methods.denosent.DenoSentModule.forward`)."""
        return self.head(self.states(embedded, padding, memory))


def denoising_loss(logits: torch.Tensor, target_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Token cross-entropy, position-aligned (no shift), mean over non-pad target tokens.
    logits: (bsz, seq, vocab); target_ids, attention_mask: (bsz, seq)."""
    labels = target_ids.masked_fill(attention_mask == 0, -100)
    return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=-100)
