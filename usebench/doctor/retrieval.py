"""``bench doctor``'s evaluation sections: exact top-k search at Quora's scale per backend (with the unsure-row
fraction of an anisotropic set) and the encoder's throughput."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from usebench.doctor.common import Size, peak_mb, reset_peak, sync, toy_sentences


def unit_vectors(n: int, d: int, mean_weight: float, base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``n`` unit vectors; ``mean_weight`` > 0 pulls them towards ``base`` (3.0 gives mean cosine ~0.9)."""
    x = rng.standard_normal((n, d), dtype=np.float32) / np.sqrt(d) + mean_weight * base
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def search_backends(device: str, has_faiss: bool, faiss_gpu: bool) -> list[tuple[str, str]]:
    """(backend, where) pairs to time: the device's own first on a GPU host (the reference answer), then the CPU
    ones."""
    backends: list[tuple[str, str]] = [("numpy", "cpu"), ("torch", "cpu")] + ([("faiss-cpu", "cpu")] if has_faiss
                                                                               else [])
    if device.startswith("cuda"):
        backends = [("torch", device)] + ([("faiss-gpu", device)] if faiss_gpu else []) + \
            [b for b in backends if b[0] != "torch"]
    return backends


def search(device: str, size: Size, log: Callable[[str], None]) -> dict[str, Any]:
    """Exact top-k per available backend on random unit vectors and on an anisotropic set (mean cosine ~0.9)."""
    from usebench.eval.retrieval import faiss_status, search_inner_product

    has_faiss, faiss_gpu = faiss_status()
    rng = np.random.default_rng(0)
    base = rng.standard_normal(size.dim).astype(np.float32)
    base /= np.linalg.norm(base)
    backends = search_backends(device, has_faiss, faiss_gpu)
    rows = []
    for label, weight in (("random", 0.0), ("anisotropic", 3.0)):
        corpus = unit_vectors(size.docs, size.dim, weight, base, rng)
        queries = unit_vectors(size.queries, size.dim, weight, base, rng)
        mean_cos = float((corpus[:1000] @ corpus[1000:2000].T).mean())
        reference = None
        for backend, where in backends:
            on_host = where == "cpu" and device.startswith("cuda")
            nq = min(size.cpu_queries, size.queries) if on_host else size.queries
            if label == "anisotropic" and on_host:
                continue  # the unsure fraction is the device's question; CPU backends were timed above
            reset_peak(device)
            t0 = time.perf_counter()
            result = search_inner_product(queries[:nq], corpus, size.k, backend=backend, device=where)
            seconds = time.perf_counter() - t0
            reference = result.indices if reference is None else reference
            same = bool((result.indices == reference[:nq]).all())
            rows.append({"set": label, "mean_cos": round(mean_cos, 3), "backend": result.backend,
                         "device": result.device, "queries": nq, "seconds": seconds, "queries_per_s": nq / seconds,
                         "unsure_fraction": result.unsure_rows / nq, "peak_gpu_mb": peak_mb(device),
                         "same_top_k_as_first": same})
            log(f"  search {label} {backend}/{result.device}: {nq / seconds:.0f} queries/s, "
                f"unsure {result.unsure_rows / nq:.2%}")
        del corpus, queries
    return {"docs": size.docs, "dim": size.dim, "k": size.k, "rows": rows}


def encode(device: str, size: Size, model: str) -> dict[str, Any]:
    """Texts per second of the suite's encoder (fp32 and bf16) on the device, after a warm-up batch."""
    from usebench.eval.encoder import HFEncoder

    texts = toy_sentences(size.encode_texts, 3)
    out: dict[str, Any] = {"texts": len(texts), "max_length": size.seq}
    for prec in ("fp32", "bf16"):
        enc = HFEncoder(model, device=device, show_progress=False, precision=prec, batch_size=min(128, len(texts)))
        enc.encode(texts[:32])
        reset_peak(device)
        t0 = time.perf_counter()
        enc.encode(texts)
        sync(device)
        out[f"texts_per_s_{prec}"] = len(texts) / (time.perf_counter() - t0)
        out[f"peak_gpu_mb_{prec}"] = peak_mb(device)
    return out
