"""`bench doctor --quick` on the CPU (what CI runs): every section present, with finite numbers; and the pieces
it stands on (datasheet peaks, the FLOP counting moved into the package)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from usebench.run import doctor as D
from usebench.run.hardware import datasheet_peak

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory) -> tuple[dict, str]:
    """`python -m usebench.cli doctor --quick --device cpu --json FILE` (no installed entry point needed)."""
    out = tmp_path_factory.mktemp("doctor") / "doctor.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "usebench.cli", "doctor", "--quick", "--device", "cpu", "--json",
                           str(out)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text()), done.stdout


def test_quick_doctor_reports_every_section_with_finite_numbers(quick_report):
    report, stdout = quick_report
    assert set(D.SECTIONS) <= set(report)
    assert [name for name in D.SECTIONS if "error" in report[name]] == []
    assert D.finite_numbers(report) == []
    assert report["versions"]["device"] == "cpu" and report["versions"]["torch"]
    assert report["precision"]["tf32"] is False and isinstance(report["precision"]["bf16"], bool)
    assert isinstance(report["faiss"]["installed"], bool)
    assert report["matmul"]["tflops_bf16"] > 0 and report["matmul"]["tflops_fp32"] > 0
    assert report["encode"]["texts_per_s_fp32"] > 0 and report["encode"]["texts_per_s_bf16"] > 0
    assert "total" in stdout and "matmul TFLOP/s" in stdout


def test_quick_doctor_times_every_trainer_in_bf16_and_fp32(quick_report):
    rows = quick_report[0]["training"]["rows"]
    assert {(r["method"], r["precision"]) for r in rows} == {(m, p) for m in D.TRAINERS for p in ("bf16", "fp32")}
    for r in rows:
        assert "error" not in r, r
        assert r["step_ms"] > 0 and r["gflop"] > 0 and 0 < r["mfu_measured"], r
        assert r["mfu_datasheet"] is None  # a CPU has no datasheet peak in the table


def test_quick_doctor_searches_with_every_backend_and_the_same_answer(quick_report):
    rows = quick_report[0]["search"]["rows"]
    backends = {"numpy", "torch"} | ({"faiss-cpu"} if quick_report[0]["faiss"]["installed"] else set())
    for label in ("random", "anisotropic"):
        assert {r["backend"] for r in rows if r["set"] == label} == backends
    assert all(r["same_top_k_as_first"] and r["queries_per_s"] > 0 and 0 <= r["unsure_fraction"] <= 1
               for r in rows)
    assert min(r["mean_cos"] for r in rows if r["set"] == "anisotropic") > 0.8  # an untuned BERT's anisotropy
    assert max(abs(r["mean_cos"]) for r in rows if r["set"] == "random") < 0.1


def test_quick_doctor_resume_is_bit_identical_on_the_cpu(quick_report):
    """CPU kernels are deterministic: both modes give 0 run-to-run and 0 after a crash and resume."""
    det = quick_report[0]["determinism"]
    for mode in ("default", "deterministic"):
        assert det[mode] == {"run_to_run_max_abs": 0.0, "resume_max_abs": 0.0}


def test_datasheet_peaks_tell_the_variants_apart():
    assert datasheet_peak("NVIDIA H100 PCIe", "bf16") == ("H100 PCIe", 756.0)
    assert datasheet_peak("NVIDIA H100 80GB HBM3", "bf16") == ("H100", 989.4)
    assert datasheet_peak("NVIDIA H200", "fp32") == ("H200", 66.9)
    assert datasheet_peak("NVIDIA H200 NVL", "bf16") == ("H200 NVL", 835.5)
    assert datasheet_peak("NVIDIA L40S", "off") == ("L40S", 91.6)
    assert datasheet_peak("NVIDIA L4", "fp16") == ("L4", 121.0)
    assert datasheet_peak("Tesla V100-SXM2-16GB", "bf16") is None  # no bf16 tensor cores
    assert datasheet_peak("Some GPU", "bf16") is None


def test_the_flop_counting_script_reexports_the_package():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench_train_flops
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    from usebench.run import flops

    assert bench_train_flops.step_gemms is flops.step_gemms and bench_train_flops.GemmTimer is flops.GemmTimer
    g = flops.Gemm("x", batch=2, m=3, k=4, n=5)
    assert g.flops == 2 * 2 * 3 * 4 * 5 * 3 and math.isfinite(g.flops)


def test_finite_numbers_finds_nan_and_inf():
    assert D.finite_numbers({"a": [1.0, {"b": float("nan")}], "c": float("inf"), "d": None}) == [".a[1].b", ".c"]
