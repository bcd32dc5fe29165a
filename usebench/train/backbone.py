"""The backbone every trainer starts from: loading a checkpoint (its dropout off where a method asks, its pooler frozen)
and the :class:`SentenceEncoder` a train module exports (the HF model plus a pooling)."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from usebench.errors import BenchError, ConfigError
from usebench.eval.pooling import POOLERS, needs_all_layers


class SentenceEncoder(nn.Module):
    """An HF ``AutoModel`` plus a pooling from ``usebench.eval.pooling.POOLERS``: ``forward -> (bsz, dim)``."""

    def __init__(self, model: nn.Module, pooling: str):
        super().__init__()
        if pooling not in POOLERS:
            raise ConfigError(POOLERS.unknown_message(pooling))
        self.model = model
        self.pooling = pooling
        self._pool = POOLERS.get(pooling)

    @property
    def dim(self) -> int:
        """Hidden size of the model (the embedding dimension of cls/mean/max poolings)."""
        return int(self.model.config.hidden_size)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        """Pooled sentence vectors (bsz, dim). Extra kwargs (token_type_ids, position_ids...) go to the model."""
        all_layers = needs_all_layers(self.pooling)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=all_layers or None,
                         return_dict=True, **kwargs)
        hidden = out.hidden_states if all_layers else (out.last_hidden_state,)
        return self._pool(hidden, attention_mask, input_ids)


def load_backbone(name: str, model_class: Any = None, *, dropout: bool = True, from_scratch: bool = False,
                  **model_kwargs: Any) -> tuple[nn.Module, Any, str]:
    """(model, tokenizer, resolved path) for ``name`` (alias ``minilm``, a local dir or an HF id).

    ``model_class`` defaults to ``AutoModel``; pass e.g. ``AutoModelForMaskedLM``. With ``dropout=False`` the
    config's dropout probabilities are 0 *before* the model is built (as ConSERT's ``--no_dropout`` does), so
    no transformers version can read a non-zero rate that was copied at construction, and then
    :func:`set_dropout` switches off whatever is left. The BERT pooler (dense+tanh, never used by our poolings)
    is frozen so optimizers and DDP ignore it, but it stays in the export. ``from_scratch=True`` builds the
    checkpoint's architecture with freshly initialised weights (the TSDAE paper's "Scratch" row, Table 4).
    Encoder-decoder checkpoints (BART, T5) are refused here: their encoder is what embeds sentences
    (:mod:`usebench.eval.encoder_only`), and only TSDAE trains them, with their own decoder.
    """
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from usebench.eval.encoder_only import is_encoder_decoder
    from usebench.eval.models import resolve_model

    info = resolve_model(name)
    local = {"local_files_only": True} if info.local else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(info.path, **local)
        config = AutoConfig.from_pretrained(info.path, **local)
        if model_class is None and is_encoder_decoder(config):
            raise ConfigError(f"{name} is an encoder-decoder checkpoint ({config.model_type}); only tsdae trains "
                              "one (its encoder, with the checkpoint's own decoder: TSDAE paper Table 4)")
        if not dropout:
            zero_dropout_fields(config)
        model_kwargs = {"config": config, **model_kwargs}
        model_class = model_class or AutoModel
        model = (model_class.from_config(config) if from_scratch
                 else model_class.from_pretrained(info.path, **local, **model_kwargs))
    except OSError as e:
        raise BenchError(f"cannot load base model {name!r}: {e}. Offline, pass --model minilm or a local "
                         f"directory (paper presets name bert-base-uncased, which needs the hub or a local copy).")
    set_dropout(model, dropout)
    pooler = getattr(getattr(model, "base_model", model), "pooler", None)
    if isinstance(pooler, nn.Module):
        pooler.requires_grad_(False)
    return model, tokenizer, info.path


# Float attributes that hold a dropout rate: HF configs (hidden_dropout_prob, attention_probs_dropout_prob,
# dropout, attention_dropout, activation_dropout...) and modules that copy one at construction (transformers
# 4.4x's BertSdpaSelfAttention.dropout_prob, torch's MultiheadAttention.dropout).
_DROPOUT_SUFFIXES = ("dropout", "dropout_prob")


def zero_dropout_fields(obj: Any) -> None:
    """Set every float attribute of ``obj`` whose name ends in ``dropout``/``dropout_prob`` to 0."""
    for key, value in list(vars(obj).items()):
        if key.endswith(_DROPOUT_SUFFIXES) and isinstance(value, float) and not isinstance(value, bool):
            setattr(obj, key, 0.0)


def set_dropout(module: nn.Module, enabled: bool) -> None:
    """With ``enabled=False``: every ``nn.Dropout`` gets p=0, and every dropout rate stored as a float (HF
    configs, attention modules that read a rate copied at init) is 0, so a train-mode forward is deterministic
    on every transformers version. ``enabled=True`` leaves the module as it is."""
    if enabled:
        return
    for m in module.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        zero_dropout_fields(m)
        if getattr(m, "config", None) is not None and hasattr(m.config, "to_dict"):
            zero_dropout_fields(m.config)
