"""The whole ``bench doctor`` check: the sections in order (the report saved after each), the finite-number check
and the human summary."""
from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from usebench.doctor.common import FULL, QUICK, SECTIONS, TRAINERS, Size
from usebench.doctor.probes import faiss_info, matmul, precision, versions
from usebench.doctor.retrieval import encode, search
from usebench.doctor.trainers import determinism, random_bert
from usebench.doctor.training import COLUMNS, training


@dataclass(frozen=True)
class Choice:
    """What a doctor run covers: trainers, our step paths ("old", "new"), precisions, sections (None: defaults)."""

    trainers: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    precisions: tuple[str, ...] | None = None
    sections: tuple[str, ...] | None = None


def default_paths(device: str) -> tuple[str, ...]:
    """Both step paths on CUDA; the old one on a CPU, where the new path compiles with inductor (minutes on a
    small CPU): ``--paths new`` or ``old,new`` asks for it there."""
    return ("old", "new") if device.startswith("cuda") else ("old",)


def run_doctor(device: str = "cpu", quick: bool = False, trainers: tuple[str, ...] | None = None,
               log: Callable[[str], None] = print,
               save: Callable[[dict[str, Any]], None] | None = None, choice: Choice | None = None) -> dict[str, Any]:
    """Every section on ``device`` (``quick``: toy sizes); the report is JSON-able. ``save(report)`` runs after
    each section and each training row, so a run stopped by a time limit still leaves what it measured. The
    slowest section (training) runs last. ``choice`` narrows trainers, paths, precisions and sections. Call
    :func:`usebench.train.runtime.prepare_deterministic_env` before anything touches CUDA (the CLI does)."""
    import torch

    size = QUICK if quick else FULL
    choice = choice or Choice(trainers=trainers)
    threads = torch.get_num_threads()
    if quick:  # toy models: one thread avoids OpenMP oversubscription on a shared CI box (several times faster)
        torch.set_num_threads(1)
    try:
        return _run_sections(device, size, quick, choice, log, save or (lambda _: None))
    finally:
        torch.set_num_threads(threads)


def _run_sections(device: str, size: Size, quick: bool, choice: Choice, log: Callable[[str], None],
                  keep: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The sections of :func:`run_doctor`, in order (a section left out by ``choice.sections`` says so)."""
    import torch

    report: dict[str, Any] = {"quick": quick, "size": asdict(size), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                              "torch_threads": torch.get_num_threads()}
    t_all = time.perf_counter()

    def section(name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if choice.sections is not None and name not in choice.sections:
            report[name] = {"skipped": "not asked for (--sections)"}
            return report[name]
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

        paths = choice.paths or default_paths(device)
        section("training", lambda: training(device, size, model, rates, choice.trainers or TRAINERS, log, partial,
                                             paths, choice.precisions))
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
    if "skipped" in v or "skipped" in p:
        return ["matmul TFLOP/s: " + ", ".join(f"{k[7:]} {x:.1f}" for k, x in m.items() if k.startswith("tflops_"))]
    return [f"device {v.get('device_name')} ({v.get('device')}); torch {v.get('torch')} (CUDA {v.get('cuda')}), "
            f"transformers {v.get('transformers')}, sentence-transformers {v.get('sentence_transformers')}, "
            f"numpy {v.get('numpy')}, faiss {v.get('faiss')}, python {v.get('python')}",
            f"precision: bf16 {p.get('bf16')}, fp16 {p.get('fp16')}, tf32 {p.get('tf32')}; FAISS GPU usable: "
            f"{report.get('faiss', {}).get('usable_on_gpu')}",
            "matmul TFLOP/s: " + ", ".join(f"{k[7:]} {v:.1f}" for k, v in m.items() if k.startswith("tflops_"))]


def _training_lines(report: dict[str, Any]) -> list[str]:
    """The training table: per trainer and precision, ms/step (median) of ours on each path, ST and lean, the
    ratios, MFU of ours against the measured rate, and the notes (errors, skipped references, step path notes)."""
    t = report.get("training", {})
    rows = t.get("rows", [])
    if not rows:
        return []
    lines = [f"training: batch {t.get('batch')} x {t.get('seq')} tokens, {t.get('layers')} layers x "
             f"{t.get('hidden')}; ours on the {'/'.join(t.get('paths', []))} path(s); {t.get('clock', '')}"
             + (f"; NOTE: {t['note']}" if t.get("note") else ""),
             "| trainer | prec | old ms | new ms | ST ms | lean ms | old/ST | new/ST | old/lean | new/lean "
             "| MFU old | MFU new | notes |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['method']} | {r['precision']} | | | | | | | | | | | ERROR {r['error']} |")
            continue
        ratio = r.get("ratios", {})
        cells = [_ms(r.get(c)) for c in COLUMNS] + [_x(ratio.get(k)) for k in
                                                    ("old_over_st", "new_over_st", "old_over_lean", "new_over_lean")]
        cells += [_pct(r.get(c, {}).get("mfu_measured")) for c in ("old", "new")]
        lines.append(f"| {r['method']} | {r['precision']} | " + " | ".join(cells) + f" | {_row_notes(r)} |")
    return lines


def _ms(c: dict[str, Any] | None) -> str:
    if not c:
        return "-"
    return f"{c['median_ms']:.1f}" if "median_ms" in c else "ERR" if "error" in c else "-"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def _row_notes(r: dict[str, Any]) -> str:
    """A row's notes in one cell: column errors, a skipped reference, what a step path fell back to."""
    notes = list(r.get("notes", []))
    for name in COLUMNS:
        c = r.get(name) or {}
        if "error" in c:
            notes.append(f"{name}: {c['error']}")
        elif "skipped" in c:
            notes.append(f"{name}: {c['skipped']}")
        notes += [f"{name}: {n}" for n in c.get("notes", [])]
    return "; ".join(dict.fromkeys(notes)).replace("|", "/")


def _search_lines(report: dict[str, Any]) -> list[str]:
    """One line per search set and backend."""
    return [f"search {r['set']:11s} {r['backend']:9s} {r['device']:6s}: {r['queries_per_s']:9.0f} queries/s "
            f"({r['queries']} queries), unsure {r['unsure_fraction']:.2%}, peak GPU {r['peak_gpu_mb']} MB, "
            f"same top-k {r['same_top_k_as_first']}" for r in report.get("search", {}).get("rows", [])]
