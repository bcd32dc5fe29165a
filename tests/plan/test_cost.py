"""The cost estimate of `bench run`'s paper presets: timed at the precision the stages train in, after a warm-up,
with the utilisation `bench doctor` measured (issue 30 item 7)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from usebench.plan import cost


def _stage(amp: str, steps: int):
    return SimpleNamespace(identity={"config": {"amp": amp, "batch_size": 8}}, steps=steps, data={"kind": "corpus"})


def test_the_estimate_times_the_precision_the_stages_train_in():
    stages = [(_stage("auto", 100_000), "bert-base-uncased"), (_stage("off", 1_000), "bert-base-uncased")]
    assert cost.training_precision(stages, "cuda") == "bf16"  # amp=auto trains in bf16 on a GPU
    assert cost.training_precision(stages, "cpu") == "fp32"
    assert cost.training_precision([(_stage("fp16", 10), "m"), (_stage("off", 20), "m")], "cuda:1") == "fp32"
    assert set(cost.UTILISATION) == {"fp32", "bf16", "fp16"}


def test_the_matmul_rate_is_measured_after_a_warm_up(monkeypatch):
    import torch

    calls = []
    real = torch.Tensor.__matmul__
    monkeypatch.setattr(torch.Tensor, "__matmul__", lambda a, b: calls.append(1) or real(a, b))
    rate, where = cost._matmul_flops("cpu", "bf16")
    assert rate > 0 and "fp32 measured" in where  # a CPU times fp32 whatever the stages ask for
    assert len(calls) > 3  # three untimed warm-up products, then the timed ones


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_note_names_the_measured_precision(precision, monkeypatch):
    monkeypatch.setattr(cost, "_matmul_flops", lambda device, p: (1e12, f"this CUDA (1000 GFLOP/s {p} measured)"))
    monkeypatch.setattr(cost, "distinct_paper_stages",
                        lambda plan: [(_stage("auto" if precision == "bf16" else "off", 1000), "bert-base-uncased")])
    note = cost.paper_preset_note(SimpleNamespace(units=[]), "cuda", "local")
    assert f"{precision} measured" in note


# --- measured step times (issue 36): a `bench doctor --json` report instead of the assumed utilisation ----------

def doctor_report(rows: dict[tuple[str, str], dict[str, float]], quick: bool = False) -> dict:
    """A doctor report holding only what the estimate reads (numbers made up for the arithmetic)."""
    return {"quick": quick, "versions": {"device_name": "NVIDIA H200"}, "matmul": {"tflops_fp32": 50.0,
                                                                                   "tflops_bf16": 700.0},
            "training": {"batch": 32, "seq": 64, "hidden": 768, "layers": 12,
                         "rows": [{"method": m, "precision": p, **{c: {"median_ms": v} for c, v in cols.items()},
                                   "st": {"skipped": "no reference"}} for (m, p), cols in rows.items()]}}


def _write(tmp_path, report: dict):
    import json

    path = tmp_path / "doctor.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def _paper_stage(method: str, amp: str, steps: int, batch: int = 8, max_length: int = 64):
    return SimpleNamespace(method=method, steps=steps, data={"kind": "corpus"},
                           identity={"config": {"amp": amp, "batch_size": batch, "max_length": max_length}})


def test_step_times_are_read_from_a_doctor_report_and_a_quick_one_is_refused(tmp_path):
    from usebench.errors import ConfigError
    from usebench.plan.step_times import load_step_times

    rows = {("tsdae", "fp32"): {"old": 140.0, "new": 70.0, "lean": 60.0}}
    times = load_step_times(_write(tmp_path, doctor_report(rows)))
    assert times.rows == {("tsdae", "fp32"): {"old": 140.0, "new": 70.0, "lean": 60.0}}
    assert (times.batch, times.seq, times.device, times.rates["fp32"]) == (32, 64, "NVIDIA H200", 50.0)
    with pytest.raises(ConfigError, match="--quick"):
        load_step_times(_write(tmp_path, doctor_report(rows, quick=True)))
    with pytest.raises(ConfigError, match="no measured training rows"):
        load_step_times(_write(tmp_path, {"quick": False, "training": {"rows": [{"method": "tsdae",
                                                                                "precision": "fp32",
                                                                                "old": {"error": "x"}}]}}))


def test_the_measured_estimate_takes_the_path_a_run_would_take(tmp_path, monkeypatch):
    """auto: the new path (the old one under --deterministic); off: the old one; each stage's steps x its trainer's
    median at its precision; the lean loop's figure beside it."""
    from usebench.plan.cost import measured_cost
    from usebench.plan.step_times import load_step_times

    times = load_step_times(_write(tmp_path, doctor_report({("tsdae", "fp32"): {"old": 144.0, "new": 72.0,
                                                                                "lean": 36.0},
                                                            ("simcse", "bf16"): {"old": 90.0, "lean": 45.0}})))
    stages = [(_paper_stage("tsdae", "off", 100_000), "bert-base-uncased"),
              (_paper_stage("simcse", "bf16", 40_000), "bert-base-uncased")]
    monkeypatch.delenv("BENCH_DETERMINISTIC", raising=False)
    monkeypatch.setenv("BENCH_FAST_PATH", "auto")
    auto = measured_cost(stages, times)
    assert auto.path == "new" and auto.measured == 2 and not auto.assumed
    assert auto.hours == pytest.approx((100_000 * 0.072 + 40_000 * 0.090) / 3600)  # simcse: no new row, old's
    assert auto.lean_hours == pytest.approx((100_000 * 0.036 + 40_000 * 0.045) / 3600)
    assert "simcse bf16: the old path's figure" in auto.text() and "NVIDIA H200" in auto.text()
    monkeypatch.setenv("BENCH_FAST_PATH", "off")
    assert measured_cost(stages, times).hours == pytest.approx((100_000 * 0.144 + 40_000 * 0.090) / 3600)
    monkeypatch.setenv("BENCH_FAST_PATH", "auto")
    monkeypatch.setenv("BENCH_DETERMINISTIC", "1")
    assert measured_cost(stages, times).path == "old"


def test_a_larger_step_scales_and_an_unmeasured_trainer_falls_back_to_the_flop_model(tmp_path, monkeypatch):
    from usebench.plan.cost import measured_cost
    from usebench.plan.step_times import load_step_times

    monkeypatch.setenv("BENCH_FAST_PATH", "off")
    times = load_step_times(_write(tmp_path, doctor_report({("simcse", "bf16"): {"old": 100.0, "lean": 50.0}})))
    big = [(_paper_stage("simcse", "bf16", 3600, batch=128, max_length=64), "bert-base-uncased")]
    assert measured_cost(big, times).hours == pytest.approx(3600 * 0.1 * 4 / 3600)  # 4x the doctor's 32 x 64 step
    small = [(_paper_stage("simcse", "bf16", 3600, batch=8, max_length=32), "bert-base-uncased")]
    assert measured_cost(small, times).hours == pytest.approx(0.1)  # a smaller step: as long (launch-bound)
    other = measured_cost([(_paper_stage("paser", "off", 1000), "bert-base-uncased")], times)
    assert other.assumed == {"paser": 1} and other.hours > 0 and "not measured there" in other.text()


def test_the_cost_line_says_what_it_measured_or_assumed(tmp_path, monkeypatch):
    from usebench.plan.cost import Cost
    from usebench.plan.cost import measured_cost
    from usebench.plan.step_times import load_step_times

    assumed = Cost(1, 1000, 1e15, 0.0, "cpu", 0.1, 2.0)
    assert "assumed: training FLOPs" in assumed.text() and "--step-times" in assumed.text()
    times = load_step_times(_write(tmp_path, doctor_report({("tsdae", "fp32"): {"old": 100.0, "lean": 50.0}})))
    measured = Cost(1, 1000, 1e15, 0.0, "cpu", 0.1, 2.0,
                    measured_cost([(_paper_stage("tsdae", "off", 36_000), "bert-base-uncased")], times))
    assert "at the measured steps" in measured.text() and "assumed:" not in measured.text()
    assert measured.measured_hours == pytest.approx(1.0)


def test_reproduce_dry_run_estimates_gpu_hours_from_the_doctor_report(tmp_path, tiny_bert_dir, monkeypatch):
    """`bench reproduce tsdae --dry-run --step-times doctor.json` on the fixture root: the cost line and each
    table's line carry the measured GPU-hours; without the file the cost line names what it assumed."""
    from click.testing import CliRunner

    from tests.reproduce.reproduce_root import build_reproduce_root
    from usebench.cli.main import main

    monkeypatch.delenv("BENCH_STEP_TIMES", raising=False)
    root = build_reproduce_root(tmp_path / "root")
    report = _write(tmp_path, doctor_report({("tsdae", "fp32"): {"old": 140.0, "new": 70.0, "lean": 50.0}}))
    args = ["reproduce", "tsdae", "--tables", "table2", "--dry-run", "--model", str(tiny_bert_dir),
            "--data-root", str(root), "--results-dir", str(tmp_path / "r"), "--methods", "tsdae"]
    with_times = CliRunner().invoke(main, [*args, "--step-times", str(report)], catch_exceptions=False)
    assert with_times.exit_code == 0, with_times.output
    cost = next(line for line in with_times.output.splitlines() if line.startswith("cost"))
    assert "at the measured steps" in cost and "NVIDIA H200" in cost
    # issue 53: the per-table GPU-hours and the whole plan's other cost models only with -v
    assert "GPU-hours at the floor below" not in with_times.output
    verbose = CliRunner().invoke(main, [*args, "--step-times", str(report), "-v"], catch_exceptions=False)
    assert "GPU-hours at the floor below; " in verbose.output and "at the measured steps)" in verbose.output
    without = CliRunner().invoke(main, args, catch_exceptions=False)
    assert "an assumed 10% utilisation" in next(line for line in without.output.splitlines()
                                                if line.startswith("cost"))
