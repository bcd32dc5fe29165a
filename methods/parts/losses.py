"""Losses shared by several method plugins."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def info_nce(anchors: torch.Tensor, positives: torch.Tensor, temperature: float) -> torch.Tensor:
    """One-direction InfoNCE: cross-entropy over cos(anchor_i, positive_j) / tau with target i, in fp32, mean
    over anchors (SimCSE's loss; DenoSent's contrastive term; = sentence-transformers'
    MultipleNegativesRankingLoss with scale 1/tau). anchors, positives: (bsz, dim) -> scalar."""
    sim = F.cosine_similarity(anchors.float().unsqueeze(1), positives.float().unsqueeze(0), dim=-1)  # (bsz, bsz)
    return F.cross_entropy(sim / temperature, torch.arange(sim.shape[0], device=sim.device))
