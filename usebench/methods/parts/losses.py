"""The method plugins' losses, and the contrastive objectives a config can name.

- :func:`info_nce`: one-direction InfoNCE (SimCSE, eq. 3.1 of R. Wang's thesis; DenoSent's contrastive term).
- :func:`nt_xent_symmetric`: SimCLR's NT-Xent, both directions with 2N-2 in-batch negatives (thesis eq. 2.7-2.9;
  ConSERT's loss with ``cl_rate`` 0.5).
- :func:`bce_contrastive`: the binary cross-entropy of thesis eq. 2.10.
- :func:`nt_xent`: ConSERT's reference loss (the sum of both directions' means); :func:`ct_bce` and
  :func:`ct_in_batch`: Contrastive Tension's BCE on dot products and its in-batch-negatives form.
- :func:`mnrl_loss` and :func:`cosine_mse_loss`: the supervised SBERT stages' MultipleNegativesRankingLoss and
  CosineSimilarityLoss.

The contrastive ones take two views ``(bsz, dim)`` whose rows ``i`` are the same sentence and return a scalar,
computed in fp32 (cosines over 0.05 temperatures need the precision).
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
    ConSERT's loss (:func:`nt_xent`, the sum of both directions' means) times 0.5.
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


# --- ConSERT's NT-Xent as its reference sums it, and CT's two objectives ------------------------------------------

LARGE_NUM = 1e9  # the ConSERT reference's mask for self-similarity


def nt_xent(view1: torch.Tensor, view2: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    """loss_a + loss_b of SimCLR's NT-Xent. view1, view2: (bsz, dim), row i of both = sentence i.

    Anchor i of view a is scored against all of view b (positive: i) and all of view a except itself, i.e.
    2*bsz - 2 negatives; direction b symmetrically. Each direction is a mean over anchors.
    """
    with torch.autocast(view1.device.type, enabled=False):  # fp32 logits even under bf16 autocast
        a = F.normalize(view1.float(), p=2, dim=-1)
        b = F.normalize(view2.float(), p=2, dim=-1)
        bsz = a.shape[0]
        self_mask = torch.eye(bsz, dtype=a.dtype, device=a.device) * LARGE_NUM  # (bsz, bsz)
        labels = torch.arange(bsz, device=a.device)
        logits_ab = a @ b.T / temperature  # (bsz, bsz)
        logits_ba = b @ a.T / temperature
        logits_aa = a @ a.T / temperature - self_mask
        logits_bb = b @ b.T / temperature - self_mask
        loss_a = F.cross_entropy(torch.cat([logits_ab, logits_aa], dim=1), labels)
        loss_b = F.cross_entropy(torch.cat([logits_ba, logits_bb], dim=1), labels)
    return loss_a + loss_b


def ct_bce(e1: torch.Tensor, e2: torch.Tensor, labels: torch.Tensor, reduction: str) -> torch.Tensor:
    """BCE-with-logits of the raw dot products e1_i·e2_i (no normalisation, no temperature). (bsz, dim) x 2."""
    logits = (e1.float() * e2.float()).sum(-1)  # (bsz,)
    return F.binary_cross_entropy_with_logits(logits, labels.float(), reduction=reduction)


def ct_in_batch(e1: torch.Tensor, e2: torch.Tensor, log_scale: torch.Tensor,
                similarity: str = "cos") -> torch.Tensor:
    """Symmetric InfoNCE over sim(e1_i, e2_j) * exp(log_scale) (sim: cosine or raw dot product), targets on the
    diagonal."""
    a, b = e1.float(), e2.float()
    if similarity == "cos":
        a, b = F.normalize(a, dim=-1), F.normalize(b, dim=-1)
    s = a @ b.T * log_scale.exp()  # (bsz, bsz)
    target = torch.arange(s.shape[0], device=s.device)
    return (F.cross_entropy(s, target) + F.cross_entropy(s.T, target)) / 2


# --- the supervised stages' pair losses (sentence-transformers' MNRL and CosineSimilarityLoss) ---------------------

def mnrl_loss(anchors: torch.Tensor, candidates: torch.Tensor, scale: float) -> torch.Tensor:
    """anchors (bsz, dim), candidates (bsz [+ bsz negatives], dim): CE over scale * cos with target i."""
    a = F.normalize(anchors.float(), p=2, dim=1)
    c = F.normalize(candidates.float(), p=2, dim=1)
    scores = a @ c.T * scale  # (bsz, n_candidates)
    return F.cross_entropy(scores, torch.arange(scores.shape[0], device=scores.device))


def cosine_mse_loss(u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """u, v (bsz, dim), labels (bsz,): mean of (cos(u_i, v_i) - label_i)^2."""
    return F.mse_loss(torch.cosine_similarity(u.float(), v.float()), labels.float().view(-1))


CONTRASTIVE_LOSSES: dict[str, Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]] = {
    "infonce": info_nce, "nt_xent": nt_xent_symmetric, "bce": bce_contrastive}
