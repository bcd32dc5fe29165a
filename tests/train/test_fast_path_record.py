"""What a run's record says about its step path (issue 50): the precision the matmuls ran in (TF32 apart from fp32),
a part that failed mid-run (recorded at its step, in log.jsonl and ``bench status``), the compiled BertAdam update's
fallback, a resume on another step path refused, fp16's skipped steps counted, and dev selection at full fp32.

No test here runs inductor: failing or pass-through torch.compile backends stand in for it (the compiled step against
inductor is tests/train/test_fast_path.py's), except one subprocess with no C++ compiler at all.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.registry import METHODS
from usebench.train import compiled_step, loop, optim
from usebench.train.loop_state import StepPathMismatchError
from usebench.train.step_path import StepPath, resolve_step_path
from tests.methods.helpers import one_thread, tiny_config, toy_corpus
from tests.train.test_fast_path import assert_same_curve, losses, no_dropout_config, run

ROOT = Path(__file__).resolve().parents[2]


def _log_lines(out: Path) -> list[dict]:
    return [json.loads(ln) for ln in (out / "log.jsonl").read_text().splitlines() if ln.strip()]


def _force_path(monkeypatch, **parts) -> None:
    """Runs asked for ``on`` take exactly this fast path (no inductor compile unless ``compile``)."""
    monkeypatch.setattr(loop, "resolve_step_path", lambda *a, **k: StepPath(fast=True, **parts))


def _backend(fail_at: int | None, error: Exception, calls: list[int]):
    """A torch.compile backend that runs dynamo's graph as it is, raising ``error`` on call ``fail_at`` (1-based)
    of the compiled code (a CUDA out-of-memory mid-run), or at compile time when ``fail_at`` is None."""
    def backend(gm, example_inputs):
        if fail_at is None:
            raise error

        def compiled(*args):
            calls.append(1)
            if len(calls) == fail_at:
                raise error
            return gm.forward(*args)
        return compiled
    return backend


def _compile_with(monkeypatch, backend) -> None:
    real = torch.compile
    monkeypatch.setattr(compiled_step.torch, "compile",
                        lambda model, **kw: real(model, backend=backend, dynamic=kw.get("dynamic")))


# --- the precision --------------------------------------------------------------------------------------------

def test_the_record_says_which_precision_the_matmuls_ran_in(monkeypatch):
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    monkeypatch.delenv("BENCH_TF32", raising=False)
    assert resolve_step_path("auto", cuda, False, amp="off").precision == "tf32"  # the fast path's TF32 policy
    assert resolve_step_path("auto", cuda, False, amp="bf16").precision == "bf16"
    assert resolve_step_path("auto", cuda, False, amp="auto").precision == "bf16"
    assert resolve_step_path("auto", cuda, False, amp="fp16").precision == "fp16"
    assert resolve_step_path("on", cpu, False, amp="off").precision == "fp32"
    assert resolve_step_path("on", cpu, False, amp="auto").precision == "fp32"
    assert resolve_step_path("off", cuda, False, amp="off").precision == "fp32"  # torch's default: no TF32
    monkeypatch.setenv("BENCH_TF32", "off")
    assert resolve_step_path("auto", cuda, False, amp="off").precision == "fp32"
    # the reference path leaves a process's own TF32 setting alone, and says so
    from usebench.fp32_policy import fp32_matmul_policy

    with fp32_matmul_policy(tf32=True):
        assert resolve_step_path("off", cuda, False, amp="off").precision == "tf32"
        assert resolve_step_path("off", cpu, False, amp="off").precision == "fp32"


def test_dev_selection_runs_at_full_fp32_in_a_tf32_run_and_says_so(tiny_bert_dir, tmp_path, monkeypatch):
    """The TF32 policy is on for the steps (forced here on the CPU) and off while the dev evaluation scores."""
    from usebench.fp32_policy import tf32_matmuls_on

    method = METHODS.get("simcse")
    _force_path(monkeypatch, tf32=True, precision="tf32")
    in_steps, in_dev = [], []

    def dev_eval(checkpoint: Path) -> float:
        in_dev.append(tf32_matmuls_on())
        return float(len(in_dev))

    result = run(method, tiny_config(method, tiny_bert_dir, max_steps=2, dev_every=1, dev_task="stsb"), tmp_path,
                 "on",
                 dev_eval=dev_eval, on_step=lambda step: in_steps.append(tf32_matmuls_on()))
    assert in_steps == [True, True] and in_dev == [False, False]
    meta = json.loads((result.checkpoint / "method.json").read_text())
    assert meta["dev"]["tf32"] is False and meta["step_path"]["precision"] == "tf32"


# --- a part that fails mid-run ----------------------------------------------------------------------------------

def test_a_compiled_step_failing_mid_run_is_recorded_at_its_step(tiny_bert_dir, tmp_path, monkeypatch,
                                                                 without_dropout):
    """A compiled step that runs out of memory at step 3: steps 1-2 compiled, step 3 on eagerly (the same curve as
    the reference), and the switch is in the record (with its step), in log.jsonl at once and in `bench status`."""
    from usebench.store.unit_state import unit_state

    calls: list[int] = []
    _compile_with(monkeypatch, _backend(3, torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"),
                                        calls))
    method = without_dropout(METHODS.get("simcse"))
    cfg = no_dropout_config(method, tiny_bert_dir, max_steps=5, log_every=2, optimizer="rmsprop")
    reference = run(method, cfg, tmp_path / "off", "off")
    fast = run(method, cfg, tmp_path / "on", "on")
    assert len(calls) == 3  # compiled twice, failed once, eager after
    assert fast.step_path["fallbacks"] == [{"part": "compile", "step": 3,
                                            "error": "OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB"}]
    assert not fast.step_path["compile"] and any(n.startswith("compile failed at step 3") for n in
                                                 fast.step_path["notes"])
    lines = _log_lines(tmp_path / "on")
    assert [ln["step"] for ln in lines] == [2, 3, 4, 5] and lines[1]["event"] == "fallback"
    assert lines[1]["part"] == "compile" and "out of memory" in lines[1]["error"]
    assert_same_curve(losses(reference), losses(fast))
    state = unit_state(tmp_path / "on")
    assert state.warning == "compile eager from step 3 (OutOfMemoryError: CUDA out of memory. Tried to allocate " \
                            "2 GiB)" and state.step == 5 and state.last_loss == lines[-1]["loss"]


def test_the_compiled_bert_adam_update_falls_back_to_eager_when_it_cannot_compile(tiny_bert_dir, tmp_path,
                                                                                 monkeypatch, without_dropout):
    """Issue 50, defect 3: the update could not be compiled (no C++ compiler, here a failing backend); the run goes
    on with the same update run eagerly (the reference's curve), and says so."""
    def failing(gm, example_inputs):
        raise RuntimeError("No working C++ compiler found")

    monkeypatch.setattr(optim, "_COMPILED_UPDATE", [torch.compile(optim.bert_adam_update, backend=failing)])
    method = without_dropout(METHODS.get("simcse"))
    cfg = no_dropout_config(method, tiny_bert_dir, max_steps=3, log_every=1, optimizer="bert_adam")
    reference = run(method, cfg, tmp_path / "off", "off")
    _force_path(monkeypatch, static_shapes=True, fused_optimizer=True)
    fast = run(method, cfg, tmp_path / "on", "on")
    assert_same_curve(losses(reference), losses(fast))
    assert [f["part"] for f in fast.step_path["fallbacks"]] == ["optimizer"]
    assert fast.step_path["fallbacks"][0]["step"] == 1 and not fast.step_path["fused_optimizer"]
    assert "No working C++ compiler" in fast.step_path["fallbacks"][0]["error"]
    assert any(ln.get("event") == "fallback" and ln["part"] == "optimizer" for ln in _log_lines(tmp_path / "on"))


def test_an_error_of_the_running_update_is_not_rerun(monkeypatch):
    """An error from the compiled update's own code (not from compiling it) may come after some parameters were
    written: running the update again would apply it twice, so it is raised."""
    def broken(*args):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(optim, "_COMPILED_UPDATE", [broken])
    p = torch.nn.Parameter(torch.ones(3))
    p.grad = torch.ones(3)
    opt = optim.BertAdam([p], lr=0.1, compiled=True)
    with pytest.raises(torch.OutOfMemoryError):
        opt.step()
    assert opt.update_failure is None


def test_bert_adam_without_a_cxx_compiler(tmp_path):
    """The review's reproduction: ``CXX=/bin/false`` and an empty inductor cache, in a process of its own; the
    compiled update cannot be built, the step updates eagerly and names the reason."""
    code = ("import torch\nfrom usebench.train.optim import BertAdam\n"
            "p = torch.nn.Parameter(torch.ones(4, 3)); p.grad = torch.full((4, 3), 0.5)\n"
            "opt = BertAdam([p], lr=0.1, compiled=True); opt.step()\n"
            "print(repr(opt.update_failure)); print(p.detach().flatten().tolist())\n")
    env = {**os.environ, "CXX": "/bin/false", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
           "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    failure, values = proc.stdout.strip().splitlines()[-2:]
    assert "C++ compiler" in failure
    # BertAdam's first step by hand: m = 0.05, v = 0.00025*... -> p - lr * m / (sqrt(v) + eps) = 1 - 0.1 * ~3.1623
    m, v = 0.1 * 0.5, 0.001 * 0.25
    expected = 1.0 - 0.1 * m / (v**0.5 + 1e-6)
    assert json.loads(values) == pytest.approx([expected] * 12, rel=1e-6)


# --- a resume on another step path ------------------------------------------------------------------------------

def _crash_after(step: int):
    def on_step(done: int) -> None:
        if done == step:
            raise KeyboardInterrupt
    return on_step


def _train(method, cfg, out: Path, **kwargs):
    with one_thread():
        return loop.train(method, cfg, toy_corpus(40), out, seed=3, show_progress=False, device="cpu", workers=0,
                          **kwargs)


def test_a_resume_on_another_step_path_is_refused(tiny_bert_dir, tmp_path, monkeypatch):
    """Issue 50, defect 4: a state saved on the reference path, resumed on the fast path (and the other way):
    refused, naming what differs and the two ways out; on the same path it resumes."""
    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=4, save_every=2)
    with pytest.raises(KeyboardInterrupt):
        _train(method, cfg, tmp_path, fast_path="off", on_step=_crash_after(3))
    _force_path(monkeypatch, static_shapes=True, fused_optimizer=True)
    with pytest.raises(StepPathMismatchError) as refused:
        _train(method, cfg, tmp_path, fast_path="on")
    message = str(refused.value)
    assert "after step 2" in message and "fast False -> True" in message and "fused_optimizer False -> True" in message
    assert "--fast-path" in message and "delete" in message and "train_state" in message
    with pytest.raises(KeyboardInterrupt):  # the other way round: saved on the fast path, resumed on the reference
        _train(method, cfg, tmp_path / "fast", fast_path="on", on_step=_crash_after(3))
    monkeypatch.undo()
    with pytest.raises(StepPathMismatchError, match="fast True -> False"):
        _train(method, cfg, tmp_path / "fast", fast_path="off")
    resumed = _train(method, cfg, tmp_path, fast_path="off")  # the path it was saved on
    assert resumed.resumed_from == 2 and "resumed at step 2" in resumed.step_path["notes"]


def test_a_resume_keeps_a_part_that_failed_off_and_its_record(tiny_bert_dir, tmp_path, monkeypatch):
    """A compiled step that failed at step 1 before the state of step 2 was saved: the resumed run carries the
    record (one fallback, at step 1) and runs eagerly from its first step, without compiling again."""
    calls: list[int] = []
    _compile_with(monkeypatch, _backend(1, RuntimeError("graph replay failed"), calls))
    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=4, save_every=2, optimizer="rmsprop")
    with pytest.raises(KeyboardInterrupt):
        _train(method, cfg, tmp_path, fast_path="on", on_step=_crash_after(3))
    assert len(calls) == 1
    resumed = _train(method, cfg, tmp_path, fast_path="on")
    assert len(calls) == 1  # nothing compiled or called again
    path = resumed.step_path
    assert [(f["part"], f["step"]) for f in path["fallbacks"]] == [("compile", 1)] and not path["compile"]
    assert "resumed at step 2" in path["notes"]
    assert json.loads((resumed.checkpoint / "method.json").read_text())["step_path"] == path


# --- fp16: skipped steps ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("fast", [False, True])
def test_fp16_counts_skipped_steps_in_log_jsonl_on_either_path(tiny_bert_dir, tmp_path, monkeypatch, fast):
    """Issue 50, defect 7's bookkeeping: every log line of an fp16 run says how many optimizer steps the loss
    scaler skipped so far (a scale of 2^127 overflows every step: 2 per line of 2 steps); a resume carries it."""
    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, amp="fp16", max_steps=4, log_every=2, save_every=2)
    if fast:  # the fast path's late scale read (compile off here)
        _force_path(monkeypatch, fused_optimizer=True, precision="fp16")
    monkeypatch.setattr(loop, "grad_scaler", lambda cfg, dev: torch.amp.GradScaler(dev.type, init_scale=2.0**127))
    with pytest.raises(KeyboardInterrupt):
        _train(method, cfg, tmp_path, fast_path="on" if fast else "off", on_step=_crash_after(3))
    _train(method, cfg, tmp_path, fast_path="on" if fast else "off")
    assert [(ln["step"], ln["skipped_steps"]) for ln in _log_lines(tmp_path)] == [(2, 2), (4, 4)]
    monkeypatch.setattr(loop, "grad_scaler", lambda cfg, dev: torch.amp.GradScaler(dev.type))
    _train(method, cfg, tmp_path / "default", fast_path="on" if fast else "off", resume=False)
    assert [ln["skipped_steps"] for ln in _log_lines(tmp_path / "default")] == [0, 0]
