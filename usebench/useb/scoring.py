"""The useb kit's call pattern and cosine arithmetic around ``semb_fn``.

:class:`RecordingEncoder` calls ``semb_fn`` as the kit does (batches of at most ``bsz`` stripped texts, under
``torch.no_grad``) and keeps each text's raw vector. :class:`KitScorer` computes every score from those raw
vectors with the kit's own torch operations, in its shapes, so that equal vectors give bit-equal scores and
tied cosines stay tied (or untied) exactly as in the kit; tie-breaking then follows the same rules (usebench's
stable sorts and sklearn's grouped thresholds are the kit's):

- TwitterPara: ``F.cosine_similarity`` of the raw pair vectors, over all pairs of a corpus at once;
- AskUbuntu: ``F.normalize`` of [query, *candidates], then ``torch.matmul`` of the query row with the others;
- SciDocs: ``F.cosine_similarity`` of the query with its candidates (and ``-torch.norm`` of their difference);
- CQADupStack: ``F.normalize`` of queries and pool, ``torch.matmul``, then ``topk`` over the score matrix.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

KIT_BATCH_SIZE = 32  # every evaluator of the kit: bsz=32

SembFn = Callable[[list[str]], Any]


class RecordingEncoder:
    """The kit's call pattern around ``semb_fn`` (usebench/eval/encoder_adapter.py ``FunctionEncoder``), keeping each
    text's raw vector for :class:`KitScorer`."""

    def __init__(self, semb_fn: SembFn, show_progress: bool, bsz: int = KIT_BATCH_SIZE):
        from usebench.eval.encoder_adapter import FunctionEncoder

        self.inner = FunctionEncoder(semb_fn, "semb_fn", batch_size=bsz, show_progress=show_progress,
                                     kind="useb-kit semb_fn", strip=True)
        self.name, self.device = self.inner.name, None
        self.raw: dict[str, np.ndarray] = {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        with torch.no_grad():
            out = self.inner.encode(texts)
        self.raw.update(zip(texts, out))
        return out

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


class KitScorer:
    """Cosine scores computed as the kit computes them (see the module docstring) for dataset ``dataset``."""

    def __init__(self, encoder: RecordingEncoder, dataset: str):
        self.encoder, self.dataset, self.name = encoder, dataset, encoder.name

    def prepare(self, texts: Sequence[str]) -> None:
        from usebench.eval.scorer import finite_embeddings

        unique = [t for t in dict.fromkeys(texts) if t not in self.encoder.raw]
        if unique:
            finite_embeddings(self.encoder.encode(unique), self.name)

    def use_collection(self, name: str, texts: Sequence[str]) -> None:
        """Nothing: a cosine has no collection statistics."""

    def raw(self, texts: Sequence[str]):
        """The raw vectors of ``texts`` as one float32 tensor ``(n, d)``."""
        import torch

        self.prepare(texts)
        return torch.from_numpy(np.stack([self.encoder.raw[t] for t in texts]))

    def pairs(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        from torch.nn import functional as F

        return F.cosine_similarity(self.raw(a), self.raw(b), dim=-1).numpy()

    def rerank(self, query: str, candidates: Sequence[str]) -> np.ndarray:
        import torch
        from torch.nn import functional as F

        embs = self.raw([query, *candidates])
        if self.dataset == "askubuntu":  # normalized, then one matmul (1, d) x (d, n)
            embs = F.normalize(embs, dim=-1)
            return torch.matmul(embs[0:1], embs[1:].t()).squeeze(0).numpy()
        return F.cosine_similarity(embs[0:1], embs[1:], dim=-1).numpy()

    def neg_distances(self, query: str, candidates: Sequence[str]) -> np.ndarray:
        """SciDocs' euclidean score: ``-||q - d||`` (higher is better)."""
        import torch

        if not candidates:
            return np.zeros(0, dtype=np.float64)
        embs = self.raw([query, *candidates])
        return (-torch.norm(embs[0:1] - embs[1:], dim=-1)).numpy().astype(np.float64)

    def search(self, queries: Sequence[str], corpus: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        import torch
        from torch.nn import functional as F

        matrix = torch.matmul(F.normalize(self.raw(queries), dim=-1), F.normalize(self.raw(corpus), dim=-1).t())
        top = torch.Tensor(matrix.numpy()).topk(min(k, len(corpus)), dim=-1)
        return top.values.numpy(), top.indices.numpy()

    def describe(self) -> dict[str, Any]:
        return {"kind": "dense", "similarity": "cosine (the useb kit's torch arithmetic)", **self.encoder.describe()}
