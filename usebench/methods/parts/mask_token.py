"""DenoSent's [MASK]-token pooling, shared by its trainer (usebench.methods.denosent) and the
sentence-transformers module its export loads with (usebench.methods.parts.denosent_st): the sentence vector is
the hidden state at the prompt's [MASK]."""
from __future__ import annotations

import torch

from usebench.errors import BenchError


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
