"""TSDAE on a pre-trained encoder-decoder (BART, T5): the checkpoint's own decoder reconstructs the sentence.

TSDAE paper §8 and Table 4: BART-base and T5-base are "further trained with TSDAE" on the four USEB corpora. The
encoder stack reads the noisy sentence and is pooled to s; the checkpoint's pre-trained decoder (with its LM head,
tied to the shared embeddings as the checkpoint ships it) decodes the original sentence with cross-attention
over [s] alone (a memory of length 1, mask all ones), so the bottleneck is the same as with a BERT decoder. The
decoder input is the checkpoint's own teacher-forcing convention: the labels shifted right behind its
``decoder_start_token_id`` (BART: ``</s>``, T5: pad), made by the model's own
``prepare_decoder_input_ids_from_labels``; the loss is the token CE over the non-pad targets, computed in fp32.
Only the encoder embeds sentences afterwards (:mod:`usebench.eval.encoder_only`).

The vocabulary projection runs at the labelled (non-pad) positions only (issue 20): the decoder runs to its hidden
states and :func:`usebench.methods.parts.heads.labelled_ce` applies :class:`Seq2SeqLMHead` (the model's own ``lm_head``
plus what its forward adds around it: BART's ``final_logits_bias``, T5's ``d_model**-0.5`` rescaling of a tied
head) to the gathered rows only. No ``labels=`` reach the model, so HF computes no second, discarded loss. Same loss
and gradients as the model's own ``labels=`` loss (``tests/methods/test_seq2seq_labelled_head.py``).
"""
from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import nn

from usebench.errors import BenchError, ConfigError
from usebench.methods.parts.heads import IGNORE, label_positions, labelled_ce


def checkpoint_is_encoder_decoder(name: str) -> bool:
    """Whether the ``--model`` checkpoint ``name`` is an encoder-decoder (read from its config only)."""
    from transformers import AutoConfig

    from usebench.eval.encoder_only import is_encoder_decoder
    from usebench.eval.models import resolve_model

    info = resolve_model(name)
    try:
        config = AutoConfig.from_pretrained(info.path, **({"local_files_only": True} if info.local else {}))
    except OSError as e:
        raise BenchError(f"cannot load base model {name!r}: {e}") from None
    return is_encoder_decoder(config)


def load_seq2seq(name: str, *, from_scratch: bool = False) -> tuple[nn.Module, Any]:
    """(``AutoModelForSeq2SeqLM`` of ``name``, its tokenizer); ``from_scratch`` re-initialises every weight."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer

    from usebench.eval.models import resolve_model

    info = resolve_model(name)
    local = {"local_files_only": True} if info.local else {}
    tokenizer = AutoTokenizer.from_pretrained(info.path, **local)
    config = AutoConfig.from_pretrained(info.path, **local)
    try:
        model = (AutoModelForSeq2SeqLM.from_config(config) if from_scratch
                 else AutoModelForSeq2SeqLM.from_pretrained(info.path, config=config, **local))
    except ValueError as e:
        raise ConfigError(f"{name} has no sequence-to-sequence LM head class to decode with: {e}") from None
    if tokenizer.pad_token_id is None:
        raise ConfigError(f"{name}: its tokenizer has no pad token (needed to batch and mask the targets)")
    return model, tokenizer


def seq2seq_label_positions(target_ids: torch.Tensor, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(positions, targets) of the non-pad tokens of ``target_ids`` (bsz, T), for :func:`reconstruction_loss`.

    A seq2seq decoder predicts every target token (its input is the targets shifted right behind the start
    token), so the labels are the targets themselves, unlike a causal LM's shift left. Call it in ``collate``
    (host tensors): the step then needs no device synchronisation to size the gather."""
    return label_positions(target_ids.masked_fill(target_ids == pad_id, IGNORE))


class Seq2SeqLMHead(nn.Module):
    """Decoder hidden states (..., d) -> vocabulary logits (..., vocab), as ``model.forward`` computes them after
    its decoder: ``h * scale`` (see :func:`decoder_output_scale`), the model's own ``lm_head``, then BART-family
    models' ``final_logits_bias``. It wraps the model's parameters and buffer, it copies none."""

    def __init__(self, model: nn.Module, scale: float | None):
        super().__init__()
        self.proj = model.get_output_embeddings()
        if self.proj is None:
            raise ConfigError(f"{type(model).__name__} has no output embedding (LM head) to decode with")
        self.scale = scale
        self.bias = getattr(model, "final_logits_bias", None)  # (1, vocab) buffer, or None

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = self.proj(hidden * self.scale if self.scale is not None else hidden)
        return logits + self.bias.to(logits.device) if self.bias is not None else logits


_SCALES: weakref.WeakKeyDictionary[nn.Module, float | None] = weakref.WeakKeyDictionary()


def decoder_output_scale(model: nn.Module) -> float | None:
    """The factor ``model.forward`` applies to the decoder's states before its ``lm_head``: ``d_model**-0.5`` for
    T5 with a tied head, else none (None).

    Which T5-family classes rescale differs by class and transformers version (5.x: T5, UMT5, LongT5 by
    ``config.scale_decoder_outputs``, SwitchTransformers by ``tie_word_embeddings``, MT5 never; 4.x: all by
    ``tie_word_embeddings``), so it is read off the model's own forward, once per model: a two-token decode
    (no grad, fp32) whose logits :class:`Seq2SeqLMHead` must reproduce with one of the two factors. A model
    whose head is neither (an architecture this module does not know) is a ConfigError, not a silent other loss."""
    from transformers.modeling_outputs import BaseModelOutput

    if model in _SCALES:
        return _SCALES[model]
    device = model.get_output_embeddings().weight.device
    # fork_rng: the probe's draws (its memory, dropout in train mode) leave the training's RNG stream as it was
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []), torch.no_grad(), \
            torch.autocast(device.type, enabled=False):
        torch.manual_seed(0)
        memory = torch.randn(1, 1, int(model.config.d_model), device=device)  # (1, 1, d): any memory will do
        ids = torch.zeros(1, 2, dtype=torch.long, device=device)
        out = model(encoder_outputs=BaseModelOutput(last_hidden_state=memory), decoder_input_ids=ids,
                    output_hidden_states=True, use_cache=False, return_dict=True)
        for scale in (None, float(model.config.d_model) ** -0.5):
            if torch.allclose(Seq2SeqLMHead(model, scale)(out.decoder_hidden_states[-1]), out.logits,
                              rtol=1e-4, atol=1e-5):
                _SCALES[model] = scale
                return scale
    raise ConfigError(f"{type(model).__name__}: its forward maps decoder states to logits in a way Seq2SeqLMHead "
                      "does not reproduce (usebench/methods/parts/seq2seq_denoiser.py)")


def reconstruction_loss(model: nn.Module, s: torch.Tensor, target_ids: torch.Tensor, pad_id: int,
                        labelled: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """Token CE of ``target_ids`` (bsz, T) decoded by ``model``'s decoder from the memory [s] (s: (bsz, hdim)).

    ``labelled``: :func:`seq2seq_label_positions` of ``target_ids`` made in collate; without it they are found
    here (a device synchronisation per step on a GPU)."""
    labels = target_ids.masked_fill(target_ids == pad_id, IGNORE)  # (bsz, T); shifted right once for the input
    positions, targets = labelled if labelled is not None else label_positions(labels)
    head = Seq2SeqLMHead(model, decoder_output_scale(model))
    # cross-attention sees [s] alone, unmasked: no mask = an all-ones (bsz, 1) one, without a host read of it
    hidden = model.get_decoder()(input_ids=model.prepare_decoder_input_ids_from_labels(labels=labels),
                                 encoder_hidden_states=s[:, None], encoder_attention_mask=None, use_cache=False,
                                 return_dict=True).last_hidden_state  # (bsz, T, d)
    return labelled_ce(head, hidden, positions, targets)
