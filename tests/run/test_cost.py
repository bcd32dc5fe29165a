"""The cost estimate of `bench run`'s paper presets: timed at the precision the stages train in, after a warm-up,
with the utilisation `bench doctor` measured (issue 30 item 7)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from usebench.run import cost


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
