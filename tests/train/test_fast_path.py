"""The fast path (issue 36) on the CPU: which path a run takes and where it is recorded, the compiled step against
eager and its fallback (its static shapes: test_static_shapes.py; around the step: test_fast_path_runtime.py).

Tolerance of the loss-curve comparisons: relative 1e-4 per logged step in fp32 (measured: 1e-7 to 1.5e-5), with every
dropout off. With dropout on the curves are different samples of the same process, not other math: the fast path
draws its dropout masks over bucket-padded tensors, and inductor draws them with its own generator.
The compiled tests cost one inductor compile each (~40 s on 2 cold cores, a few seconds with inductor's cache
warm). The sweep over every other registered method and the DDP run compile for 15-20 minutes on a cold cache: they
run with ``USEBENCH_LONG_TESTS=1`` (the three representative methods cover the same code on every run).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.errors import ConfigError
from usebench.registry import METHODS
from usebench.train import loop, static_shapes
from usebench.train.step_path import REFERENCE, resolve_step_path
from tests.methods.helpers import one_thread, tiny_config, toy_corpus
from tests.train.fast_path_helpers import (LONG, REPRESENTATIVE, assert_same_curve, losses,
                                          no_dropout_config, run)


# --- which path, and where it is recorded --------------------------------------------------------------------

def test_auto_is_the_reference_path_on_the_cpu_and_with_deterministic_kernels():
    assert resolve_step_path("auto", torch.device("cpu"), False, amp="off") == REFERENCE
    assert resolve_step_path("auto", torch.device("cuda"), True, amp="off") == REFERENCE
    assert resolve_step_path("off", torch.device("cuda"), False, amp="off") == REFERENCE


def test_the_fast_path_parts_per_device_and_precision():
    gpu = resolve_step_path("auto", torch.device("cuda"), False, amp="off")
    assert (gpu.fast, gpu.compile, gpu.static_shapes, gpu.fused_optimizer, gpu.tf32) == (True,) * 5
    assert gpu.compile_mode == "default"
    bf16 = resolve_step_path(None, torch.device("cuda"), False, amp="bf16")
    assert bf16.compile and not bf16.tf32 and any("amp=bf16" in n for n in bf16.notes)
    cpu = resolve_step_path("on", torch.device("cpu"), False, amp="off")
    assert (cpu.compile, cpu.static_shapes, cpu.fused_optimizer, cpu.tf32) == (True, True, True, False)
    assert "tf32: CUDA only (cpu)" in cpu.notes


def test_the_choice_comes_from_the_environment_and_a_bad_value_is_a_config_error(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCH_FAST_PATH", "on")
    assert resolve_step_path(None, torch.device("cpu"), False).compile
    monkeypatch.setenv("BENCH_FAST_PATH", "fast")
    with pytest.raises(ConfigError, match="expected one of auto, on, off"):
        resolve_step_path(None, torch.device("cpu"), False)
    monkeypatch.delenv("BENCH_FAST_PATH")
    method = METHODS.get("simcse")
    with pytest.raises(ConfigError, match="fast path 'sometimes'"):
        loop.train(method, method.config("smoke"), ["a"], tmp_path, device="cpu", fast_path="sometimes")
    monkeypatch.setenv("BENCH_COMPILE_MODE", "fastest")
    with pytest.raises(ConfigError, match="BENCH_COMPILE_MODE"):
        resolve_step_path("on", torch.device("cpu"), False)


def test_the_step_path_is_recorded_in_method_json_and_the_result(tiny_bert_dir, tmp_path):
    method = METHODS.get("simcse")
    result = run(method, tiny_config(method, tiny_bert_dir, max_steps=2), tmp_path, "auto")
    meta = json.loads((result.checkpoint / "method.json").read_text())
    assert meta["step_path"] == result.step_path == REFERENCE.record()


# --- the compiled step -----------------------------------------------------------------------------------------

def _compiled_against_eager(name, model_dir, tmp_path, without_dropout, **overrides):
    method = without_dropout(METHODS.get(name))
    cfg = no_dropout_config(method, model_dir, max_steps=4, log_every=1, **overrides)
    eager = run(method, cfg, tmp_path / "off", "off")
    fast = run(method, cfg, tmp_path / "on", "on")
    path = fast.step_path
    assert path["fast"] and path["static_shapes"], path
    if not path["compile"]:  # a method that cannot be compiled says why
        assert any(n.startswith(("compile: off", "compile failed")) for n in path["notes"]), path
    else:
        assert any(n.startswith("compiled: ") for n in path["notes"]), path
    assert_same_curve(losses(eager), losses(fast))
    return fast


@pytest.mark.parametrize("name", REPRESENTATIVE)
def test_the_compiled_step_trains_like_eager(name, tiny_bert_dir, tmp_path, without_dropout):
    overrides = {"batch_size": 4} if name == "tsdae" else {}  # one labelled-count bucket: one compile
    fast = _compiled_against_eager(name, tiny_bert_dir, tmp_path, without_dropout, **overrides)
    assert fast.step_path["compile"], fast.step_path


@pytest.mark.slow
@LONG
@pytest.mark.parametrize("name", [n for n in METHODS.names() if n not in REPRESENTATIVE])
def test_every_method_compiles_or_says_why(name, tiny_bert_dir, tmp_path, without_dropout):
    _compiled_against_eager(name, tiny_bert_dir, tmp_path, without_dropout)


def test_a_compile_failure_falls_back_to_eager_with_a_note(tiny_bert_dir, tmp_path, monkeypatch, without_dropout):
    """A backend that fails on the first step: that step and the rest run eagerly (the same curve as the static
    reference), and the record says so; the exported state keys are the reference's."""
    from usebench.train import compiled_step

    def failing_backend(gm, example_inputs):
        raise RuntimeError("inductor exploded\nsecond line")

    real_compile = torch.compile
    monkeypatch.setattr(compiled_step.torch, "compile",
                        lambda model, **kw: real_compile(model, backend=failing_backend, dynamic=kw.get("dynamic")))
    method = without_dropout(METHODS.get("simcse"))
    cfg = no_dropout_config(method, tiny_bert_dir, max_steps=3, log_every=1, optimizer="rmsprop")
    reference = run(method, cfg, tmp_path / "off", "off")
    fast = run(method, cfg, tmp_path / "on", "on")
    assert not fast.step_path["compile"] and fast.step_path["fast"]
    note = [n for n in fast.step_path["notes"] if n.startswith("compile failed")]
    assert note and "at step 1" in note[0] and "inductor exploded" in note[0], fast.step_path
    assert "second line" not in note[0]
    assert fast.step_path["fallbacks"] == [{"part": "compile", "step": 1, "error": "BackendCompilerFailed "
                                            "(RuntimeError: inductor exploded)"}]
    assert_same_curve(losses(reference), losses(fast))
    meta = json.loads((fast.checkpoint / "method.json").read_text())
    assert meta["step_path"] == fast.step_path
    assert fast.module.state_dict().keys() == reference.module.state_dict().keys()


@pytest.mark.parametrize("mode, graphs", [("default", False), ("reduce-overhead", True), ("max-autotune", True),
                                          ("max-autotune-no-cudagraphs", False)])
def test_every_mode_with_cuda_graphs_marks_each_step_and_clones_its_outputs(mode, graphs, monkeypatch):
    """Issue 50, defect 2: ``max-autotune`` records CUDA graphs too (torch's ``triton.cudagraphs``); without the step
    mark and the copy, a loss kept until the next log point is overwritten by the next replay."""
    from usebench.train.compiled_step import CompiledStep

    marks: list[int] = []
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marks.append(1))
    step = CompiledStep(torch.nn.Linear(2, 2), mode=mode)
    held = torch.ones(3)  # stands for a tensor in the graphs' memory
    step.__dict__["compiled"] = lambda inputs: {"loss": held, "n": 2}
    out = step({"x": torch.zeros(1)})
    assert step.cuda_graphs is graphs and len(marks) == int(graphs)
    assert torch.equal(out["loss"], held) and (out["loss"] is not held) is graphs and out["n"] == 2


def test_the_compiled_backward_overflows_fp16_where_eager_does(tiny_bert_dir, without_dropout):
    """Issue 50, defect 7: NT-Xent's logits are computed in fp32 (an ``autocast(enabled=False)`` region), and their
    gradient, the loss scale x 1/temperature, must stay fp32 through their matmuls' backward. AOTAutograd traced the
    backward under the forward's fp16 autocast, so those matmuls ran in fp16 and overflowed at 2^18 where eager
    first overflows at 2^20 (consert's 5-row batch). The compiled step (AOTAutograd without inductor here: the
    backward graph is AOTAutograd's) overflows at the same loss scales as eager."""
    from usebench.train.compiled_step import compile_settings, step_inputs

    method = without_dropout(METHODS.get("consert"))
    cfg = no_dropout_config(method, tiny_bert_dir, amp="fp16", batch_size=5)
    module = method.build(cfg, torch.device("cpu"))
    with static_shapes.static_shapes():
        batch = method.collate(cfg, module.tokenizer, toy_corpus(5, seed=1), np.random.default_rng(0))
    inputs = step_inputs(module, batch, torch.device("cpu"))

    def finite_at(forward, scales: range) -> list[bool]:
        out = []
        for k in scales:
            module.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.float16):
                loss = forward(inputs)
            (loss.float() * 2.0**k).backward()  # outside autocast, as the loop does
            out.append(all(torch.isfinite(p.grad).all() for p in module.parameters() if p.grad is not None))
        return out

    torch._dynamo.reset()
    with one_thread(), compile_settings():
        eager = finite_at(module, range(16, 22))
        compiled = finite_at(torch.compile(module, backend="aot_eager", dynamic=False), range(16, 22))
    assert True in eager and False in eager, eager  # the scales straddle eager's first overflow
    assert compiled == eager
