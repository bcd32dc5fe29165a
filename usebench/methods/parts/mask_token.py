"""DenoSent's prompt and [MASK]-token pooling, shared by its trainer (usebench.methods.denosent) and the
sentence-transformers modules its export loads with (usebench.methods.parts.denosent_st): each sentence is cut to
``max_length`` tokens, decoded and put into the prompt (``"[X]" means [MASK].``), and the sentence vector is the hidden
state at the prompt's [MASK]. The export states the same prompt in its method.json and ``sentence_bert_config.json``.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from usebench.errors import BenchError
from usebench.eval.encoder import truncate_texts
from usebench.store import write_json_atomic
from usebench.train.backbone import SentenceEncoder
from usebench.train.tokenization import tokenize

MASK_POOLING_DIR = "1_MaskTokenPooling"


def mask_positions(input_ids: torch.Tensor, mask_id: int) -> torch.Tensor:
    """Index of the last ``[MASK]`` in each row (the prompt's; a [MASK] typed inside the text comes earlier).
    input_ids: (bsz, seq) -> (bsz,). A row without one is an error (the prompt was not applied)."""
    is_mask = input_ids == mask_id  # (bsz, seq)
    if not bool(is_mask.any(dim=1).all()):
        raise BenchError("mask_token pooling: a sequence has no [MASK] token; it needs the checkpoint's prompt "
                         "(method.json 'prompt', e.g. '\"{text}\" means [MASK].')")
    seq = input_ids.shape[1]
    positions = torch.arange(seq, device=input_ids.device).expand_as(input_ids)
    return torch.where(is_mask, positions, -1).max(dim=1).values


def pool_mask_token(hidden: torch.Tensor, input_ids: torch.Tensor, mask_id: int) -> torch.Tensor:
    """Hidden state at the prompt's [MASK]. hidden: (bsz, seq, dim) -> (bsz, dim)."""
    rows = torch.arange(hidden.shape[0], device=hidden.device)
    return hidden[rows, mask_positions(input_ids, mask_id)]


class MaskTokenEncoder(SentenceEncoder):
    """:class:`SentenceEncoder` pooling the prompt's [MASK] state (its id comes from the tokenizer)."""

    def __init__(self, model: nn.Module, mask_id: int):
        nn.Module.__init__(self)  # SentenceEncoder only knows stateless poolers; this one carries an id
        self.model, self.pooling, self.mask_id = model, "mask_token", int(mask_id)
        self._pool = self._pool_mask

    def _pool_mask(self, hidden_states, attention_mask, input_ids) -> torch.Tensor:
        return pool_mask_token(hidden_states[-1], input_ids, self.mask_id)


# --- the prompt -------------------------------------------------------------------------------------------------

def encoder_prompt(template: str, mask_token: str) -> str:
    """The method.json prompt for :class:`usebench.eval.encoder.HFEncoder`: ``[X]`` -> ``{text}``, ``[MASK]`` ->
    the tokenizer's mask token."""
    if template.count("[X]") != 1 or template.count("[MASK]") != 1:
        raise BenchError(f"DenoSent prompt {template!r} must contain [X] and [MASK] exactly once")
    return template.replace("[X]", "{text}").replace("[MASK]", mask_token)


def prompt_length(tokenizer: Any, template: str) -> int:
    """Tokens of the template itself (with ``[X]`` as written), added to ``max_length`` as the reference does."""
    return len(tokenizer(template.replace("[MASK]", tokenizer.mask_token), add_special_tokens=False)["input_ids"])


def prompted_batch(tokenizer: Any, texts: Sequence[str], template: str, max_length: int) -> dict[str, torch.Tensor]:
    """Ids and attention mask of the prompted sentences: each sentence cut to ``max_length`` tokens, decoded,
    put into the prompt, then tokenized (pad to the longest). The reference truncates the prompted text at
    ``max_length`` + the prompt's length, which re-tokenizing a decoded text can in rare cases exceed, cutting
    off the [MASK]; the cap here has slack (as at evaluation, where the export's max_length applies)."""
    prompt = encoder_prompt(template, tokenizer.mask_token)
    filled = [prompt.replace("{text}", t) for t in truncate_texts(tokenizer, texts, max_length)]
    cap = 2 * max_length + prompt_length(tokenizer, template)
    return tokenize(tokenizer, filled, cap)


# --- the export's sentence-transformers files ------------------------------------------------------------------

def write_mask_pooling(out_dir: Path, hf_config: Any) -> list[dict[str, Any]]:
    """sentence-transformers module 1 for ``mask_token`` (the [MASK] id is read from the saved tokenizer)."""
    from transformers import AutoTokenizer

    mask_id = AutoTokenizer.from_pretrained(out_dir).mask_token_id
    write_json_atomic(out_dir / MASK_POOLING_DIR / "config.json",
                      {"dimension": int(hf_config.hidden_size), "mask_token_id": int(mask_id)})
    return [{"idx": 1, "name": "1", "path": MASK_POOLING_DIR,
             "type": "usebench.methods.parts.denosent_st.MaskTokenPooling"}]


def write_prompted_st_pipeline(out_dir: Path, meta: dict[str, Any]) -> None:
    """Make module 0 the prompt-filling Transformer with the prompt settings of method.json (``export_extra``)."""
    modules = json.loads((out_dir / "modules.json").read_text(encoding="utf-8"))
    modules[0]["type"] = "usebench.methods.parts.denosent_st.PromptedTransformer"
    write_json_atomic(out_dir / "modules.json", modules)
    st_config = json.loads((out_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
    st_config.update({"prompt_template": meta["prompt"], "prompt_text_max_length": meta["prompt_text_max_length"]})
    write_json_atomic(out_dir / "sentence_bert_config.json", st_config)
