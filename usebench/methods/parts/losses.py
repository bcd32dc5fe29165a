"""Losses shared by several method plugins, and the contrastive objectives a config can name.

- :func:`info_nce`: one-direction InfoNCE (SimCSE, eq. 3.1 of R. Wang's thesis; DenoSent's contrastive term).
- :func:`nt_xent_symmetric`: SimCLR's NT-Xent, both directions with 2N-2 in-batch negatives (thesis eq. 2.7-2.9;
  ConSERT's loss with ``cl_rate`` 0.5).
- :func:`bce_contrastive`: the binary cross-entropy of thesis eq. 2.10.

Each takes two views ``(bsz, dim)`` whose rows ``i`` are the same sentence and returns a scalar, computed in fp32
with autocast off (cosines over 0.05 temperatures need the precision).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F

ContrastiveLoss = Literal["infonce", "nt_xent", "bce"]


def info_nce(anchors: torch.Tensor, positives: torch.Tensor, temperature: float) -> torch.Tensor:
    """One-direction InfoNCE: cross-entropy over cos(anchor_i, positive_j) / tau with target i, in fp32, mean
    over anchors (SimCSE's loss; DenoSent's contrastive term; = sentence-transformers'
    MultipleNegativesRankingLoss with scale 1/tau). anchors, positives: (bsz, dim) -> scalar."""
    sim = F.cosine_similarity(anchors.float().unsqueeze(1), positives.float().unsqueeze(0), dim=-1)  # (bsz, bsz)
    return F.cross_entropy(sim / temperature, torch.arange(sim.shape[0], device=sim.device))


def nt_xent_symmetric(view1: torch.Tensor, view2: torch.Tensor, temperature: float) -> torch.Tensor:
    """Thesis eq. 2.9: (1 / 2N) * sum_i [l(i, i+) + l(i+, i)] over the 2N embeddings of both views.

    Anchor ``k`` of the stacked (2N, dim) views is scored against the other 2N-1 rows; its positive is the same
    sentence's other view, its negatives the 2N-2 views of the other sentences (eq. 2.7 / 2.8). Equals
    ConSERT's loss (:func:`usebench.methods.consert.nt_xent`, the sum of both directions' means) times 0.5.
    """
    with torch.autocast(view1.device.type, enabled=False):
        n = view1.shape[0]
        z = F.normalize(torch.cat([view1, view2]).float(), p=2, dim=-1)  # (2n, dim)
        logits = (z @ z.T / temperature).masked_fill(  # (2n, 2n): a row never scores itself
            torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
        positive = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)  # row k's other view
        return F.cross_entropy(logits, positive)


def bce_contrastive(view1: torch.Tensor, view2: torch.Tensor, temperature: float) -> torch.Tensor:
    """Thesis eq. 2.10: -(1/N) sum_i [log g(s(x_i, x_i+)) + sum_{x- in X_i-} log(1 - g(s(x_i, x-)))].

    Anchors x_i are the rows of ``view1``, positives the same rows of ``view2``; X_i- = {x_j, x_j+ : j != i}
    (the thesis' in-batch negatives, Sec. 2.4.2: 2N-2 of them); s = cosine; g(s) = sigmoid(s / tau) (the
    extracted text prints "sigma(x^tau)"; tau is the temperature that divides similarities everywhere else in
    the thesis). The negatives' terms are summed per anchor, as printed, not averaged.
    """
    with torch.autocast(view1.device.type, enabled=False):
        a = F.normalize(view1.float(), p=2, dim=-1)
        b = F.normalize(view2.float(), p=2, dim=-1)
        s_ab, s_aa = a @ b.T / temperature, a @ a.T / temperature  # (n, n) each
        off = ~torch.eye(a.shape[0], dtype=torch.bool, device=a.device)
        log_pos = F.logsigmoid(s_ab.diagonal())  # log g(s), stable
        log_neg = (F.logsigmoid(-s_ab) * off).sum(1) + (F.logsigmoid(-s_aa) * off).sum(1)  # log(1 - g(s))
        return -(log_pos + log_neg).mean()


CONTRASTIVE_LOSSES: dict[str, Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]] = {
    "infonce": info_nce, "nt_xent": nt_xent_symmetric, "bce": bce_contrastive}
