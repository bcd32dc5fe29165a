"""TSDAE on a pre-trained encoder-decoder (BART, T5): the checkpoint's own decoder reconstructs the sentence.

TSDAE paper §8 and Table 4: BART-base and T5-base are "further trained with TSDAE" on the four USEB corpora. The
encoder stack reads the noisy sentence and is pooled to s; the checkpoint's pre-trained decoder (with its LM head,
tied to the shared embeddings as the checkpoint ships it) decodes the original sentence with cross-attention
over [s] alone (a memory of length 1, mask all ones), so the bottleneck is the same as with a BERT decoder. The
decoder input is the checkpoint's own teacher-forcing convention: the labels shifted right behind its
``decoder_start_token_id`` (BART: ``</s>``, T5: pad), done by the model from ``labels``; the loss is the token
CE over the non-pad targets, computed here in fp32. Only the encoder embeds sentences afterwards
(:mod:`benchmark.eval.encoder_only`).
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from benchmark.errors import BenchError, ConfigError


def checkpoint_is_encoder_decoder(name: str) -> bool:
    """Whether the ``--model`` checkpoint ``name`` is an encoder-decoder (read from its config only)."""
    from transformers import AutoConfig

    from benchmark.eval.encoder_only import is_encoder_decoder
    from benchmark.eval.models import resolve_model

    info = resolve_model(name)
    try:
        config = AutoConfig.from_pretrained(info.path, **({"local_files_only": True} if info.local else {}))
    except OSError as e:
        raise BenchError(f"cannot load base model {name!r}: {e}") from None
    return is_encoder_decoder(config)


def load_seq2seq(name: str, *, from_scratch: bool = False) -> tuple[nn.Module, Any]:
    """(``AutoModelForSeq2SeqLM`` of ``name``, its tokenizer); ``from_scratch`` re-initialises every weight."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer

    from benchmark.eval.models import resolve_model

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


def reconstruction_loss(model: nn.Module, s: torch.Tensor, target_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Token CE of ``target_ids`` (bsz, T) decoded by ``model``'s decoder from the memory [s] (s: (bsz, hdim))."""
    from transformers.modeling_outputs import BaseModelOutput

    labels = target_ids.masked_fill(target_ids == pad_id, -100)  # (bsz, T); the model shifts them right once
    ones = torch.ones(s.shape[0], 1, dtype=torch.long, device=s.device)  # (bsz, 1): cross-attention sees s only
    out = model(encoder_outputs=BaseModelOutput(last_hidden_state=s[:, None]), attention_mask=ones, labels=labels,
                use_cache=False, return_dict=True)
    logits = out.logits.float()  # (bsz, T, vocab); CE in fp32 under autocast
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
