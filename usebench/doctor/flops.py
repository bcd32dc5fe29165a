"""The matmul work one training step needs, counted from the shapes of a real batch (for
``scripts/bench_train.py`` and ``bench doctor``).

A step is a list of :class:`Gemm` terms: ``batch`` independent (m x k) @ (k x n) products, run ``passes`` times
(3: forward, input gradient and weight/second-operand gradient; 1: forward only, e.g. BERT-flow's frozen
encoder). Only matrix products are counted: embedding look-ups, softmax, LayerNorm, GELU and the optimizer are
not FLOPs a GEMM floor can hold. The vocabulary projection is counted at the positions that carry a label only
(the loss needs nothing else), so the floor does not move when an implementation wastes work there.

Per transformer layer with r rows of t tokens, hidden h, FFN f, a heads and a memory of s vectors:
Q, K, V and output projections 4 x (r*t, h, h); scores (r*a, t, h/a, t) and context (r*a, t, t, h/a); FFN
(r*t, h, f) + (r*t, f, h); a cross-attention adds Q and output (r*t, h, h), K and V (r*s, h, h), scores and
context over s. A BERT MLM head on n labelled positions is (n, h, h) + (n, h, vocab). The thesis' autoencoders
(``clm-ae`` ... ``consert-mlm``) add their ``decoder_layers``-layer decoder of the backbone's shape and its head
on the labelled rows to the encoder passes of the method they extend.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Gemm:
    """``batch`` products (m x k) @ (k x n), each run ``passes`` times per step (forward + backward GEMMs)."""

    what: str
    batch: int
    m: int
    k: int
    n: int
    passes: int = 3

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.m * self.k * self.n * self.passes


@dataclass(frozen=True)
class Shape:
    """Width of a transformer stack."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int

    @classmethod
    def of(cls, config: Any) -> Shape:
        """From an HF BERT-style config."""
        return cls(int(config.hidden_size), int(config.num_hidden_layers), int(config.num_attention_heads),
                   int(config.intermediate_size), int(config.vocab_size))


def attention(what: str, rows: int, t: int, s: int, h: int, heads: int, passes: int) -> list[Gemm]:
    """Q/out projections on r*t query tokens, K/V on r*s memory tokens, scores and context."""
    dh = h // heads
    return [Gemm(f"{what} q,o", 1, rows * t, h, h, passes) for _ in range(2)] + \
        [Gemm(f"{what} k,v", 1, rows * s, h, h, passes) for _ in range(2)] + \
        [Gemm(f"{what} scores", rows * heads, t, dh, s, passes), Gemm(f"{what} context", rows * heads, t, s, dh, passes)]


def stack(what: str, shape: Shape, rows: int, t: int, *, layers: int | None = None, heads: int | None = None,
          ffn: int | None = None, memory: int = 0, passes: int = 3) -> list[Gemm]:
    """A transformer stack on (rows, t) tokens; ``memory`` > 0 adds cross-attention over that many vectors."""
    n_layers, a, f, h = layers or shape.layers, heads or shape.heads, ffn or shape.ffn, shape.hidden
    layer = attention(f"{what} self-attn", rows, t, t, h, a, passes)
    if memory:
        layer += attention(f"{what} cross-attn", rows, t, memory, h, a, passes)
    layer += [Gemm(f"{what} ffn in", 1, rows * t, h, f, passes), Gemm(f"{what} ffn out", 1, rows * t, f, h, passes)]
    return layer * n_layers


def lm_head(shape: Shape, positions: int, what: str = "lm head") -> list[Gemm]:
    """A BERT MLM head (dense h->h, then the vocabulary projection) on ``positions`` labelled tokens."""
    return [Gemm(f"{what} transform", 1, positions, shape.hidden, shape.hidden),
            Gemm(f"{what} vocab", 1, positions, shape.hidden, shape.vocab)]


def _rows_len(enc: dict[str, torch.Tensor]) -> tuple[int, int]:
    rows, t = enc["input_ids"].shape
    return int(rows), int(t)


def _labelled(labels: torch.Tensor) -> int:
    return int((labels != -100).sum())


# --- per method: (config, encoder shape, one collated batch) -> the step's GEMMs ---------------------------------

def _tsdae(cfg: Any, s: Shape, b: dict, pad_id: int) -> list[Gemm]:
    rows, t = _rows_len(b)
    target = b["target_ids"]
    labels = int((target[:, 1:] != pad_id).sum())  # the decoder predicts every non-pad token after the first
    return stack("encoder", s, rows, t) + stack("decoder", s, rows, int(target.shape[1]) - 1, memory=1) + \
        lm_head(s, labels)


def _simcse(cfg: Any, s: Shape, b: dict, pad_id: int) -> list[Gemm]:
    if "views" in b:
        rows, t = _rows_len(b["views"])
        mlp = cfg.pooling == "cls"  # SimCSEModule has its MLP on CLS only (the thesis' mean pooling has none)
        return stack("encoder", s, rows, t) + ([Gemm("mlp", 1, rows, s.hidden, s.hidden)] if mlp else [])
    return [g for col in ("a", "b") for g in stack(f"encoder {col}", s, *_rows_len(b[col]))]


def _ct(cfg: Any, s: Shape, b: dict, pad_id: int) -> list[Gemm]:
    second = b.get("b", b["a"])  # ct-ibn: both models read the same rows
    return stack("model1", s, *_rows_len(b["a"])) + stack("model2", s, *_rows_len(second))


def _consert(cfg: Any, s: Shape, b: dict, pad_id: int) -> list[Gemm]:
    rows, t = _rows_len(b)
    return stack("view 1", s, rows, t) + stack("view 2", s, rows, t)


def _bertflow(cfg: Any, s: Shape, b: dict, pad_id: int) -> list[Gemm]:
    return stack("frozen encoder", s, *_rows_len(b), passes=1)  # the Glow's 1x1 convolutions are < 1%


def _mlm(cfg: Any, s: Shape, b: dict, pad_id: int) -> list[Gemm]:
    return stack("encoder", s, *_rows_len(b)) + lm_head(s, _labelled(b["labels"]))


def _denosent(cfg: Any, s: Shape, b: dict, pad_id: int) -> list[Gemm]:
    from usebench.methods.parts.denoising_decoder import decoder_ffn_width

    rows, t = _rows_len(b)
    n, start = int(b["n"]), int(b["target_start"])
    gemms = stack("encoder", s, rows, t) + [Gemm("projector", 1, rows, s.hidden, s.hidden)]
    if cfg.generative_weight > 0:
        tokens = int(b["attention_mask"][start:start + n].sum())
        gemms += stack("decoder", s, n, t, layers=cfg.decoder_layers, heads=cfg.decoder_heads,
                       ffn=decoder_ffn_width(s.hidden, cfg.decoder_ffn), memory=1) + lm_head(s, tokens)
    return gemms


def _paser(cfg: Any, s: Shape, b: dict, pad_id: int) -> list[Gemm]:
    rows, t = _rows_len(b["views"])
    dec_rows, dec_t = (int(x) for x in b["decoder_input_ids"].shape)
    gemms = stack("encoder views", s, rows, t)
    gemms += stack("decoder", s, dec_rows, dec_t, layers=cfg.decoder_layers, heads=cfg.decoder_heads,
                   ffn=cfg.decoder_ffn or s.hidden, memory=4) + lm_head(s, _labelled(b["decoder_labels"]), "decoder head")
    if cfg.mlm_weight > 0:
        gemms += stack("encoder mlm view", s, *_rows_len(b["mlm"])) + lm_head(s, _labelled(b["mlm_labels"]), "mlm head")
    return gemms


def _ae_decoder(cfg: Any, s: Shape, ae: dict, pad_id: int) -> list[Gemm]:
    """The thesis' decoder (``usebench.methods.parts.autoencoders``): ``decoder_layers`` layers of the backbone's shape,
    CLM (teacher forcing on T-1 tokens, cross-attention to [s]) or MLM (the masked copy, T tokens, no memory),
    then its own MLM head on the labelled positions."""
    target = ae["target_ids"]
    rows, t = (int(x) for x in target.shape)
    if "masked_ids" in ae:  # mlm: the masked positions
        head = lm_head(s, _labelled(ae["labels"]), "ae head")
        return stack("ae decoder", s, rows, t, layers=cfg.decoder_layers) + head
    head = lm_head(s, int((target[:, 1:] != pad_id).sum()), "ae head")  # clm: every non-pad token after the first
    return stack("ae decoder", s, rows, t - 1, layers=cfg.decoder_layers, memory=1) + head


def _autoencoder(cfg: Any, s: Shape, b: dict, pad_id: int) -> list[Gemm]:
    """``clm-ae`` / ``mlm-ae``: the encoder on the clean sentences, then the decoder."""
    ae = b["ae"]
    return stack("encoder", s, *_rows_len({"input_ids": ae["target_ids"]})) + _ae_decoder(cfg, s, ae, pad_id)


def _with_autoencoder(contrastive: Callable[[Any, Shape, dict, int], list[Gemm]]
                      ) -> Callable[[Any, Shape, dict, int], list[Gemm]]:
    """``simcse-*`` / ``consert-*``: the contrastive method's own step, plus the decoder reading its first view."""
    return lambda cfg, s, b, pad_id: contrastive(cfg, s, b, pad_id) + _ae_decoder(cfg, s, b["ae"], pad_id)


def _supervised(cfg: Any, s: Shape, b: dict, pad_id: int) -> list[Gemm]:
    return [g for i, col in enumerate(b["texts"]) for g in stack(f"encoder column {i}", s, *_rows_len(col))]


STEP_GEMMS: dict[str, Callable[[Any, Shape, dict, int], list[Gemm]]] = {
    "tsdae": _tsdae, "simcse": _simcse, "ct": _ct, "ct-ibn": _ct, "consert": _consert, "bertflow": _bertflow,
    "mlm": _mlm, "denosent": _denosent, "paser": _paser, "sbert-mnrl": _supervised, "sbert-cosine": _supervised,
    "sbert-nli": _supervised, "sbert-stsb": _supervised,
    "clm-ae": _autoencoder, "mlm-ae": _autoencoder, "simcse-clm": _with_autoencoder(_simcse),
    "simcse-mlm": _with_autoencoder(_simcse), "consert-clm": _with_autoencoder(_consert),
    "consert-mlm": _with_autoencoder(_consert),
}


def step_gemms(method: str, cfg: Any, config: Any, batch: dict, pad_id: int = 0) -> list[Gemm] | None:
    """The GEMMs of one step of ``method`` on ``batch`` (collated by the method), or None for a method whose
    architecture is not modelled here (a new plugin: the table then says "no floor")."""
    fn = STEP_GEMMS.get(method)
    return None if fn is None else fn(cfg, Shape.of(config), batch, pad_id)


# --- the GEMM rate of this machine at those shapes -----------------------------------------------------------

class GemmTimer:
    """Seconds of torch matmuls at given shapes on a device and dtype, each shape measured once per run (best
    of a few repeats, each long enough to time). A term with 3 passes is timed as its forward product and the
    two backward products, (m x n) @ (n x k) and (k x m) @ (m x n), which BLAS runs at different speeds."""

    def __init__(self, device: str = "cpu", dtype: torch.dtype = torch.float32, min_seconds: float = 0.02):
        self.device, self.dtype, self.min_seconds = torch.device(device), dtype, min_seconds
        self._cache: dict[tuple[int, int, int, int], float] = {}

    def product(self, batch: int, m: int, k: int, n: int) -> float:
        """Best seconds of one (batch x m x k) @ (batch x k x n) product."""
        key = (batch, m, k, n)
        if key not in self._cache:
            a = torch.randn(batch, m, k, device=self.device, dtype=self.dtype)
            b = torch.randn(batch, k, n, device=self.device, dtype=self.dtype)
            self._cache[key] = self._best(lambda: torch.matmul(a, b))
        return self._cache[key]

    def _best(self, fn: Callable[[], Any]) -> float:
        import time

        fn()
        best = float("inf")
        for _ in range(3):
            reps, t0 = 0, time.perf_counter()
            while True:
                fn()
                reps += 1
                if self.device.type == "cuda":
                    torch.cuda.synchronize()
                elapsed = time.perf_counter() - t0
                if elapsed >= self.min_seconds:
                    break
            best = min(best, elapsed / reps)
        return best

    def seconds(self, gemms: list[Gemm]) -> float:
        """The step's GEMM time at this machine's measured rates (the floor)."""
        total = 0.0
        for g in gemms:
            if min(g.batch, g.m, g.k, g.n) == 0:
                continue
            total += self.product(g.batch, g.m, g.k, g.n)
            if g.passes >= 2:
                total += self.product(g.batch, g.m, g.n, g.k)
            if g.passes >= 3:
                total += self.product(g.batch, g.k, g.m, g.n)
        return total
