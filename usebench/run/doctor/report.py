"""The whole ``bench doctor`` check: the sections in order (the report saved after each), the finite-number check
and the human summary."""
from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from usebench.run.doctor.common import FULL, QUICK, SECTIONS, TRAINERS, Size
from usebench.run.doctor.probes import faiss_info, matmul, precision, versions
from usebench.run.doctor.retrieval import encode, search
from usebench.run.doctor.trainers import determinism, random_bert, training


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
    lines = _machine_lines(report) + _training_lines(report) + _search_lines(report)
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


def _machine_lines(report: dict[str, Any]) -> list[str]:
    """Versions and device, precisions and FAISS, the matmul rates."""
    v = report.get("versions", {})
    p = report.get("precision", {})
    m = report.get("matmul", {})
    return [f"device {v.get('device_name')} ({v.get('device')}); torch {v.get('torch')} (CUDA {v.get('cuda')}), "
            f"transformers {v.get('transformers')}, sentence-transformers {v.get('sentence_transformers')}, "
            f"numpy {v.get('numpy')}, faiss {v.get('faiss')}, python {v.get('python')}",
            f"precision: bf16 {p.get('bf16')}, fp16 {p.get('fp16')}, tf32 {p.get('tf32')}; FAISS GPU usable: "
            f"{report.get('faiss', {}).get('usable_on_gpu')}",
            "matmul TFLOP/s: " + ", ".join(f"{k[7:]} {v:.1f}" for k, v in m.items() if k.startswith("tflops_"))]


def _training_lines(report: dict[str, Any]) -> list[str]:
    """One line per trainer and precision: step time, GFLOP, MFU (or the row's error)."""
    lines = []
    for r in report.get("training", {}).get("rows", []):
        if "error" in r:
            lines.append(f"train {r['method']:12s} {r['precision']}: ERROR {r['error']}")
            continue
        mfu = f"{r['mfu_measured']:.1%}" if r.get("mfu_measured") is not None else "-"
        sheet = f"{r['mfu_datasheet']:.1%}" if r.get("mfu_datasheet") is not None else "-"
        lines.append(f"train {r['method']:12s} {r['precision']}: {r['step_ms']:8.1f} ms/step, "
                     f"{r['gflop'] or 0:8.1f} GFLOP, MFU {mfu} of measured, {sheet} of datasheet")
    return lines


def _search_lines(report: dict[str, Any]) -> list[str]:
    """One line per search set and backend."""
    return [f"search {r['set']:11s} {r['backend']:9s} {r['device']:6s}: {r['queries_per_s']:9.0f} queries/s "
            f"({r['queries']} queries), unsure {r['unsure_fraction']:.2%}, peak GPU {r['peak_gpu_mb']} MB, "
            f"same top-k {r['same_top_k_as_first']}" for r in report.get("search", {}).get("rows", [])]
