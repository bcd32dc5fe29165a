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

from usebench import doctor as D
from usebench.doctor.hardware import datasheet_peak

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory) -> tuple[dict, str]:
    """`python -m usebench.cli doctor --quick --device cpu --json FILE` (no installed entry point needed)."""
    out = tmp_path_factory.mktemp("doctor") / "doctor.json"
    done = subprocess.run([sys.executable, "-m", "usebench.cli", "doctor", "--quick", "--device", "cpu", "--json",
                           str(out)], capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=600)
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


WITH_REFERENCE = {"tsdae", "simcse", "ct", "ct-ibn", "mlm", "sbert-mnrl", "sbert-nli", "sbert-cosine", "sbert-stsb"}


def _timed(column: dict, steps: int) -> None:
    """A timed column: the median of ``steps`` synced steps, the window mean, a warm-up over every shape."""
    assert column["steps"] == steps == column["window_steps"], column
    assert 0 < column["min_ms"] <= column["median_ms"] <= column["max_ms"], column
    assert column["window_mean_ms"] > 0 and column["warmup_s"] > 0, column
    assert column["warmup_steps"] >= column["distinct_shapes"] >= 1, column  # every shape met before the clock


def test_quick_doctor_times_every_trainer_on_each_column(quick_report):
    """Every trainer in fp32 and bf16 (the CPU's default precisions), ours on the old path (the CPU's default),
    sentence-transformers' step where it has the loss (transformers' for MLM), the lean loop; the ratios; MFU;
    real batch x seq batches (every row full but TSDAE's noisy encoder input)."""
    training = quick_report[0]["training"]
    assert training["paths"] == ["old"] and training["precisions"] == ["fp32", "bf16"]
    assert training["timed_steps"] == D.QUICK.timed_steps and "note" in training  # quick says it is a smoke run
    rows = training["rows"]
    assert [(r["method"], r["precision"]) for r in rows] == [(m, p) for m in D.TRAINERS for p in ("fp32", "bf16")]
    for r in rows:
        assert "error" not in r, r
        for name in ("old", "lean"):
            _timed(r[name], D.QUICK.timed_steps)
        assert "new" not in r and r["ratios"]["new_over_lean"] is None
        assert r["gflop"] > 0 and r["old"]["mfu_measured"] > 0 and r["old"]["mfu_datasheet"] is None, r
        assert r["old"]["step_path"]["fast"] is False and r["old"]["optimizer"], r["old"]
        assert r["lean"]["optimizer"].startswith("AdamW") and r["ratios"]["old_over_lean"] > 0
        if r["method"] in WITH_REFERENCE:
            _timed(r["st"], D.QUICK.timed_steps)
            assert r["st"]["label"] and r["st"]["library"] in ("sentence-transformers", "transformers"), r["st"]
            assert r["ratios"]["old_over_st"] > 0
        else:
            assert "no installable reference" in r["st"]["skipped"] and r["ratios"]["old_over_st"] is None
        if r["method"] != "tsdae":  # every attention mask full (TSDAE's encoder reads the noisy, shorter text)
            assert r["fill"] == 1.0 and max(s[-1] for s in r["batch_shapes"].values()) >= D.QUICK.seq, r
    tsdae = next(r for r in rows if r["method"] == "tsdae")
    assert tsdae["batch_shapes"]["target_ids"] == [D.QUICK.batch, D.QUICK.seq]
    assert tsdae["old"]["distinct_shapes"] >= 1


def test_quick_doctor_prints_the_training_table(quick_report):
    stdout = quick_report[1]
    assert "| trainer | prec | old ms | new ms | ST ms | lean ms | old/ST | new/ST | old/lean | new/lean" in stdout
    assert "| tsdae | fp32 |" in stdout and "median of per-step times" in stdout


def test_the_doctor_times_both_step_paths_side_by_side(tmp_path):
    """--paths both on the CPU: one trainer, one precision, the training section only. A new path that fails is a
    row note, not the end of the doctor. Dynamo is switched off in this process (``TORCHDYNAMO_DISABLE``): the test
    is about the doctor's columns, and the compiled step itself is held to eager in tests/train/test_fast_path.py
    (an inductor compile here would add ~40 s to CI)."""
    out = tmp_path / "doctor.json"
    done = subprocess.run([sys.executable, "-m", "usebench.cli", "doctor", "--quick", "--device", "cpu", "--json",
                           str(out), "--methods", "simcse", "--precisions", "fp32", "--paths", "both",
                           "--sections", "matmul,training"], capture_output=True, text=True, cwd=ROOT,
                          env={**_env(), "TORCHDYNAMO_DISABLE": "1"}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["versions"] == {"skipped": "not asked for (--sections)"}
    (row,) = report["training"]["rows"]
    assert report["training"]["paths"] == ["old", "new"]
    _timed(row["old"], D.QUICK.timed_steps)
    assert row["old"]["step_path"]["fast"] is False
    if "error" in row["new"]:  # recorded, and the other columns still ran
        assert row["lean"]["median_ms"] > 0 and f"new: {row['new']['error']}"[:40] in done.stdout.replace("|", "/")
    else:
        _timed(row["new"], D.QUICK.timed_steps)
        assert row["new"]["step_path"]["fast"] is True and row["ratios"]["new_over_st"] > 0
    assert D.finite_numbers(report) == []


def test_the_warm_up_meets_every_shape_the_timed_steps_use():
    import torch

    from usebench.doctor.steptime import LoopHooks, shape_key, warmup_order

    batches = [{"input_ids": torch.zeros(2, n)} for n in (5, 7, 5, 9, 7)]
    assert warmup_order(batches, 1) == ([0, 1, 3], 3)
    assert warmup_order(batches, 5) == ([0, 1, 3, 2, 4], 3)  # topped up with the other batches, in order
    hooks = LoopHooks(n=5, min_warmup=2, device="cpu")
    served = list(hooks.wrap_batches(lambda data, workers, pin=False: iter(enumerate(batches)))(None, 2, pin=False))
    keys = [shape_key(b) for _, b in served]
    assert hooks.warm == 3 and [s for s, _ in served] == list(range(3 + 5 + 5 + 1))
    assert keys[3:8] == keys[8:13] == [shape_key(b) for b in batches]  # the timed passes: the same batches twice
    assert set(keys[3:]) <= set(keys[:3])  # no timed step meets a new shape


def test_ours_is_timed_with_collate_and_the_loss_read_back_off_the_clock(tiny_bert_dir, tmp_path, monkeypatch):
    """The real loop: every batch is collated before the warm-up ends, no step reads its loss back (no settle: the
    run stops before its last step), and the per-step and window times cover exactly n steps each."""
    import time

    import usebench.train.loop as loop
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS
    from usebench.doctor.steptime import LoopHooks, time_train
    from usebench.doctor.trainers import method_config

    method = METHODS.get("simcse")
    cfg = method_config(method, str(tiny_bert_dir), D.QUICK, "off", 4)
    collated, boundaries, settled = [], [], []
    real_collate, real_on_step = method.collate, LoopHooks.on_step
    monkeypatch.setattr(method, "collate", lambda *a: collated.append(time.perf_counter()) or real_collate(*a))
    monkeypatch.setattr(LoopHooks, "on_step", lambda self, done: boundaries.append((done, time.perf_counter(),
                                                                                    self.warm))
                        or real_on_step(self, done))
    monkeypatch.setattr(loop, "settle", lambda *a, **k: settled.append(1))
    timing, facts = time_train(method, cfg, D.training_data(method, 64, (20, 24)), "cpu", "off", 4, 2, tmp_path)
    warm = boundaries[0][2]
    end_of_warmup = next(t for done, t, _ in boundaries if done == warm)
    assert len(collated) == 4 and max(collated) < end_of_warmup
    assert settled == [] and [d for d, _, _ in boundaries] == list(range(1, warm + 2 * 4 + 1))
    assert len(timing.per_step) == 4 and timing.window > 0 and timing.warmup_steps == warm >= 2
    # the CPU's reference path steps torch's per-parameter AdamW over cache-sized blocks (usebench.train.blocked_optim)
    assert facts["step_path"]["fast"] is False and facts["optimizer"] == "BlockedAdamW" and not timing.notes


@pytest.mark.parametrize("path", ["off", "on"])
def test_ours_counts_the_steps_the_fp16_loss_scaler_skipped_on_each_path(tiny_bert_dir, tmp_path, monkeypatch, path):
    """fp16 (issue 50): each path's column says how many steps overflowed (a scale of 2^127: every step); the new
    path reads the scale one step late, so its last step is not counted yet. The fast path here is fused AdamW and
    the late read alone (no inductor compile)."""
    import torch

    import usebench.train.loop as loop
    from usebench import methods  # noqa: F401
    from usebench.cli.doctor import _listed
    from usebench.registry import METHODS
    from usebench.doctor.steptime import time_train
    from usebench.doctor.trainers import method_config
    from usebench.train.step_path import StepPath

    assert _listed("fp32,fp16", "--precisions", ("fp32", "tf32", "bf16", "fp16")) == ("fp32", "fp16")
    method = METHODS.get("simcse")
    cfg = method_config(method, str(tiny_bert_dir), D.QUICK, "fp16", 3)
    monkeypatch.setattr(loop, "grad_scaler", lambda cfg, dev: torch.amp.GradScaler(dev.type, init_scale=2.0**127))
    monkeypatch.setattr(loop, "resolve_step_path",
                        lambda *a, **k: StepPath(fast=True, fused_optimizer=True, precision="fp16"))
    if path == "off":
        monkeypatch.undo()
        monkeypatch.setattr(loop, "grad_scaler", lambda cfg, dev: torch.amp.GradScaler(dev.type, init_scale=2.0**127))
    timing, facts = time_train(method, cfg, D.training_data(method, 64, (20, 24)), "cpu", path, 3, 2, tmp_path)
    steps = timing.warmup_steps + 2 * 3  # the warm-up and the two timed passes (the run stops after them)
    assert facts["skipped_steps"] == (steps if path == "off" else steps - 1)


def test_ratios_are_ours_over_the_other_medians():
    from usebench.doctor.training import ratios

    row = {"old": {"median_ms": 30.0}, "new": {"error": "x"}, "st": {"median_ms": 20.0}, "lean": {"median_ms": 10.0}}
    assert ratios(row) == {"old_over_st": 1.5, "old_over_lean": 3.0, "new_over_st": None, "new_over_lean": None}


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
    from usebench.doctor import flops

    assert bench_train_flops.step_gemms is flops.step_gemms and bench_train_flops.GemmTimer is flops.GemmTimer
    g = flops.Gemm("x", batch=2, m=3, k=4, n=5)
    assert g.flops == 2 * 2 * 3 * 4 * 5 * 3 and math.isfinite(g.flops)


def test_finite_numbers_finds_nan_and_inf():
    assert D.finite_numbers({"a": [1.0, {"b": float("nan")}], "c": float("inf"), "d": None}) == [".a[1].b", ".c"]
