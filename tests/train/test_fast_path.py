"""The fast path (issue 36) on the CPU: which path a run takes and where it is recorded, static shapes, the compiled
step against eager, its fallback, the fused optimizers and fp16's late scale read.

Tolerance of the loss-curve comparisons: relative 1e-4 per logged step in fp32 (measured: 1e-7 to 1.5e-5), with every
dropout off. With dropout on the curves are different samples of the same process, not other math: the fast path
draws its dropout masks over bucket-padded tensors, and inductor draws them with its own generator.
The compiled tests cost one inductor compile each (~40 s on 2 cold cores, a few seconds with inductor's cache
warm). The sweep over every other registered method and the DDP run compile for 15-20 minutes on a cold cache: they
run with ``USEBENCH_LONG_TESTS=1`` (the three representative methods cover the same code on every run).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.errors import ConfigError
from usebench.registry import METHODS
from usebench.train import loop, static_shapes
from usebench.train.batches import StepBatches
from usebench.train.tokenization import tokenize
from usebench.train.step_path import REFERENCE, StepPath, resolve_step_path
from tests.methods.helpers import one_thread, tiny_config, toy_corpus, toy_data

RTOL = 1e-4  # per logged loss, fp32
LONG = pytest.mark.skipif(not os.environ.get("USEBENCH_LONG_TESTS"),
                          reason="minutes of inductor compiles on a CPU: set USEBENCH_LONG_TESTS=1 to run")
REPRESENTATIVE = ["tsdae", "simcse", "mlm"]  # a decoder + labelled head, dropout views, BertAdam (CT: the sweep)
PROBE = ["the river runs past the house", "a dog and a fish", "mountain night ocean", "kite"]


def no_dropout_config(method, model_dir: Path, **overrides):
    """The tiny-run config with every dropout of the config off (DenoSent's noise and decoder too)."""
    extra = {"noise_dropout": 0.0, "decoder_dropout": 0.0} if method.name == "denosent" else {}
    return tiny_config(method, model_dir, dropout=False, **{**extra, **overrides})


def losses(result) -> list[float]:
    return [line["loss"] for line in result.history if "loss" in line]


def run(method, cfg, out: Path, fast_path: str, **kwargs):
    with one_thread():
        return loop.train(method, cfg, toy_data(method), out, seed=3, show_progress=False, resume=False,
                          device="cpu", workers=0, fast_path=fast_path, **kwargs)


def assert_same_curve(a: list[float], b: list[float]) -> None:
    assert len(a) == len(b) >= 3
    np.testing.assert_allclose(b, a, rtol=RTOL, atol=0)


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


# --- static shapes ---------------------------------------------------------------------------------------------

def test_buckets():
    assert [static_shapes.bucket(n, 16, 128) for n in (1, 16, 17, 33, 100, 128)] == [16, 16, 32, 64, 128, 128]
    assert static_shapes.bucket(70, 16, 75) == 75  # capped at max_length
    with pytest.raises(ValueError, match="exceeds its cap"):
        static_shapes.bucket(80, 16, 75)


def test_tokenize_pads_to_a_bucket_only_inside_a_static_collate(tiny_bert_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    texts = ["a dog", "the river runs past the old house and the tree"]
    plain = tokenize(tok, texts, 64, special_tokens_mask=True, word_ids=True)
    with static_shapes.static_shapes():
        padded = tokenize(tok, texts, 64, special_tokens_mask=True, word_ids=True)
    width = plain["input_ids"].shape[1]
    assert width < 16 and padded["input_ids"].shape == (2, 16)
    assert torch.equal(padded["input_ids"][:, :width], plain["input_ids"])
    assert (padded["input_ids"][:, width:] == tok.pad_token_id).all()
    assert (padded["attention_mask"][:, width:] == 0).all()
    assert padded["special_tokens_mask"][:, width:].all() and padded["word_ids"][1][width:] == [None] * (16 - width)
    assert static_shapes.natural_width(padded["attention_mask"]) == width


def test_a_left_padding_tokenizer_keeps_its_columns_and_its_masking_draws(left_padding_bert_dir):
    """Issue 50, defect 5: the bucket's extra columns go on the right of a left-padded batch too, so the first
    ``width`` columns are the pad-to-longest batch (where the masking draws are made) and every token keeps its
    column and position id. Extra pads on the left had masked other tokens than the eager collate."""
    from transformers import AutoTokenizer

    from usebench.methods.parts.noise import mask_tokens

    tok = AutoTokenizer.from_pretrained(left_padding_bert_dir)
    assert tok.padding_side == "left"
    texts = ["a dog", "the river runs past the old house and the tree", "kite"]
    plain = tokenize(tok, texts, 64, special_tokens_mask=True, word_ids=True)
    with static_shapes.static_shapes():
        padded = tokenize(tok, texts, 64, special_tokens_mask=True, word_ids=True)
    width = plain["input_ids"].shape[1]
    assert plain["attention_mask"][0, 0] == 0 and padded["input_ids"].shape == (3, 16)  # left-padded rows
    for key in ("input_ids", "attention_mask", "special_tokens_mask"):
        assert torch.equal(padded[key][:, :width], plain[key]), key
    assert (padded["attention_mask"][:, width:] == 0).all() and padded["word_ids"][1][width:] == [None] * (16 - width)
    draws = [mask_tokens(enc["input_ids"], enc["special_tokens_mask"], np.random.default_rng(0), mask_id=103,
                         vocab_size=3000, prob=0.5, width=static_shapes.natural_width(enc["attention_mask"]))
             for enc in (plain, padded)]
    assert torch.equal(draws[1][1][:, :width], draws[0][1]) and (draws[1][1][:, width:] == -100).all()


@pytest.mark.parametrize("name", ["mlm", "tsdae", "ct"])
def test_static_shapes_give_the_same_losses_with_a_left_padding_tokenizer(name, left_padding_bert_dir, tmp_path,
                                                                          monkeypatch, without_dropout):
    """Masking noise (MLM), a decoder's shifted targets (TSDAE), [CLS] pooling (CT) with left padding: bucket
    padding is still the same math (measured over every trainer: within 4e-6; 0.1% to 56% apart before)."""
    method = without_dropout(METHODS.get(name))
    cfg = no_dropout_config(method, left_padding_bert_dir, max_steps=3, log_every=1, max_length=40)
    reference = run(method, cfg, tmp_path / "ref", "off")
    _static_only(monkeypatch)
    assert_same_curve(losses(reference), losses(run(method, cfg, tmp_path / "static", "on")))


def test_labelled_positions_pad_to_a_count_bucket_with_ignored_targets():
    from usebench.methods.parts.heads import label_positions

    labels = torch.full((3, 5), -100)
    labels[0, 1], labels[2, 4] = 7, 9
    with static_shapes.static_shapes():
        positions, targets = label_positions(labels)
        empty = label_positions(torch.full((2, 2), -100))
    assert positions.tolist()[:2] == [1, 14] and positions.numel() == static_shapes.MIN_LABELS
    assert targets.tolist()[:2] == [7, 9] and (targets[2:] == -100).all() and (positions[2:] == 0).all()
    assert empty[0].numel() == 0  # no labels stay no labels


def test_masking_draws_are_the_same_on_padded_batches():
    from usebench.methods.parts.noise import mask_tokens

    ids = torch.randint(1000, 2000, (4, 9))
    special = torch.zeros(4, 9, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    plain = mask_tokens(ids, special, np.random.default_rng(0), mask_id=103, vocab_size=3000)
    wide_ids = torch.cat([ids, torch.zeros(4, 7, dtype=ids.dtype)], dim=1)
    wide_special = torch.cat([special, torch.ones(4, 7, dtype=torch.bool)], dim=1)
    wide = mask_tokens(wide_ids, wide_special, np.random.default_rng(0), mask_id=103, vocab_size=3000, width=9)
    assert torch.equal(wide[0][:, :9], plain[0]) and torch.equal(wide[1][:, :9], plain[1])
    assert (wide[1][:, 9:] == -100).all()


def _token_widths(batch, found: list[int], counts: list[int], key: str = "") -> None:
    """Collect the widths of token tensors and the lengths of labelled-position tensors anywhere in ``batch``."""
    if isinstance(batch, dict):
        for k, v in batch.items():
            _token_widths(v, found, counts, k)
    elif isinstance(batch, (list, tuple)):
        if key.endswith("_targets") and len(batch) == 2 and all(isinstance(t, torch.Tensor) for t in batch):
            counts.append(batch[0].numel())  # PaSeR's (positions, targets) pairs
        else:
            for v in batch:
                _token_widths(v, found, counts, key)
    elif isinstance(batch, torch.Tensor):
        if key in ("input_ids", "attention_mask", "target_ids", "masked_ids", "decoder_input_ids"):
            found.append(batch.shape[1] + (1 if key == "decoder_input_ids" else 0))
        elif key in ("label_positions", "label_targets"):
            counts.append(batch.numel())


@pytest.mark.parametrize("name", METHODS.names())
def test_batches_carry_bucketed_shapes(name, tiny_bert_dir):
    from transformers import AutoTokenizer

    method = METHODS.get(name)
    cfg = tiny_config(method, tiny_bert_dir)
    data = StepBatches(method, cfg, AutoTokenizer.from_pretrained(tiny_bert_dir), toy_data(method), 0, 0, 1, 0, 3)
    data.static_shapes = True
    widths: list[int] = []
    counts: list[int] = []
    for step in range(3):
        _token_widths(data.batch(step), widths, counts)
    assert widths and set(widths) <= {16, 32}, widths  # buckets of max_length 32
    assert all(c == 0 or (c >= static_shapes.MIN_LABELS and c & (c - 1) == 0) for c in counts), counts


def _static_only(monkeypatch) -> None:
    """Runs asked for ``on`` take a fast path with static shapes alone: no compile, the reference optimizers."""
    monkeypatch.setattr(loop, "resolve_step_path",
                        lambda *a, **k: StepPath(fast=True, static_shapes=True, notes=("static shapes only",)))


@pytest.mark.parametrize("name", METHODS.names())
def test_static_shapes_alone_give_the_same_losses(name, tiny_bert_dir, tmp_path, monkeypatch, without_dropout):
    """Bucket padding (with the skipped pooler and padded vocabulary heads) is the same math: the loss of every step
    within RTOL of pad-to-longest, dropout off."""
    method = without_dropout(METHODS.get(name))
    cfg = no_dropout_config(method, tiny_bert_dir, max_steps=3, log_every=1, max_length=40)
    reference = run(method, cfg, tmp_path / "ref", "off")
    _static_only(monkeypatch)
    result = run(method, cfg, tmp_path / "static", "on")
    assert result.step_path["static_shapes"] and not result.step_path["compile"]
    assert_same_curve(losses(reference), losses(result))
    # and the exported encoders embed alike, so they score alike (not weight by weight: Adam's m / sqrt(v) turns a
    # rounding-sized gradient into a full-sized step of either sign, e.g. in a flow's ActNorm)
    from usebench.eval.encoder import HFEncoder

    with one_thread():
        a, b = (HFEncoder(str(r.checkpoint), device="cpu", show_progress=False).encode(PROBE)
                for r in (reference, result))
    np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-3 * float(np.abs(a).max()))


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


# --- optimizers, fp16, the runtime overrides --------------------------------------------------------------------

def test_the_fast_optimizers(tiny_bert_dir):
    from usebench.train.optim import BertAdam, build_optimizer

    model = torch.nn.Linear(4, 3)
    named = list(model.named_parameters())
    for name, expected in (("adamw", "fused"), ("rmsprop", "foreach"), ("bert_adam", "compiled")):
        cfg = tiny_config(METHODS.get("simcse"), tiny_bert_dir, optimizer=name)
        opt = build_optimizer(cfg, named, fused=True)
        got = ("fused" if opt.defaults.get("fused") else "compiled" if getattr(opt, "compiled", False)
               else "foreach")
        assert got == expected, name
        assert not getattr(build_optimizer(cfg, named), "compiled", False)
        assert not build_optimizer(cfg, named).defaults.get("fused")
    # the GradScaler hands a compiled BertAdam its overflow flag instead of reading it on the host
    assert BertAdam([p for _, p in named], lr=1e-3, compiled=True)._step_supports_amp_scaling
    assert not BertAdam([p for _, p in named], lr=1e-3)._step_supports_amp_scaling


def test_bert_adam_update_equals_the_foreach_step_and_skips_on_inf():
    from usebench.train.optim import BertAdam, bert_adam_update

    g = torch.Generator().manual_seed(0)
    ps = [torch.randn(5, 3, generator=g) for _ in range(2)]
    grads = [torch.randn(5, 3, generator=g) for _ in range(2)]
    reference = [torch.nn.Parameter(p.clone()) for p in ps]
    opt = BertAdam([{"params": reference, "weight_decay": 0.01}], lr=1e-2, foreach=True)
    for p, grad in zip(reference, grads):
        p.grad = grad.clone()
    opt.step()
    mine = [p.clone() for p in ps]
    ms, vs = [torch.zeros_like(p) for p in ps], [torch.zeros_like(p) for p in ps]
    bert_adam_update(mine, grads, ms, vs, torch.tensor(1e-2), 0.9, 0.999, 1e-6, 0.01)
    for a, b in zip(mine, reference):
        torch.testing.assert_close(a, b.detach(), rtol=1e-6, atol=1e-7)
    before = [p.clone() for p in mine], [m.clone() for m in ms]
    bert_adam_update(mine, grads, ms, vs, torch.tensor(1e-2), 0.9, 0.999, 1e-6, 0.01, found_inf=torch.ones(1))
    assert all(torch.equal(a, b) for a, b in zip(mine, before[0])) and all(torch.equal(a, b) for a, b in
                                                                            zip(ms, before[1]))
    bert_adam_update(mine, grads, ms, vs, torch.tensor(1e-2), 0.9, 0.999, 1e-6, 0.01, found_inf=torch.zeros(1))
    assert not torch.equal(mine[0], before[0][0])


def test_fp16_reads_the_scale_one_step_late_and_skips_the_same_schedule_steps(tiny_bert_dir, tmp_path, monkeypatch):
    """Fused AdamW under fp16 on the fast path (compile off here): with every step overflowing, the schedule stays
    put as on the reference path; with the default scale both advance every step."""
    from tests.train.test_gpu_paths import _scheduler_steps_at_2

    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, amp="fp16", max_steps=4, save_every=2, warmup_steps=10)
    monkeypatch.setattr(loop, "resolve_step_path", lambda *a, **k: StepPath(fast=True, fused_optimizer=True))
    steps, _ = _scheduler_steps_at_2(method, cfg, tmp_path / "default")
    assert steps == 2
    monkeypatch.setattr(loop, "grad_scaler", lambda cfg, dev: torch.amp.GradScaler(dev.type, init_scale=2.0**127))
    steps, after = _scheduler_steps_at_2(method, cfg, tmp_path / "overflow")
    assert steps == 0
    built = method.build(cfg, torch.device("cpu"))
    for k, v in built.state_dict().items():
        if k in after and v.dtype.is_floating_point and "mlp" not in k:
            torch.testing.assert_close(after[k], v, rtol=0, atol=0, msg=k)


def test_tf32_is_on_for_the_run_only(tiny_bert_dir, tmp_path, monkeypatch):
    """The policy a CUDA fp32 run gets (forced here on the CPU, where matmul precision has no effect): set while the
    loop runs, the previous setting back afterwards, and recorded."""
    method = METHODS.get("simcse")
    before = torch.get_float32_matmul_precision()
    seen: list[str] = []
    monkeypatch.setattr(loop, "resolve_step_path", lambda *a, **k: StepPath(fast=True, tf32=True))
    result = run(method, tiny_config(method, tiny_bert_dir, max_steps=2), tmp_path, "on",
                 on_step=lambda step: seen.append(torch.get_float32_matmul_precision()))
    assert seen == ["high", "high"] and torch.get_float32_matmul_precision() == before
    assert result.step_path["tf32"]


def test_pooler_skip_and_padded_vocabulary_heads_are_undone_after_the_run(tiny_bert_dir):
    from usebench.train.fast_path import padded_vocabulary_heads, skipped_poolers

    method = METHODS.get("mlm")
    module = method.build(tiny_config(method, tiny_bert_dir), torch.device("cpu"))
    model = module.encoder.model
    ids = torch.randint(1000, 2000, (2, 7))
    mask = torch.ones_like(ids)
    head = module.head
    hidden = torch.randn(5, model.config.hidden_size)
    with torch.no_grad():
        logits = head(hidden)
        with skipped_poolers(module), padded_vocabulary_heads(module):
            assert model(input_ids=ids, attention_mask=mask).pooler_output is None
            padded = head(hidden)
        assert model(input_ids=ids, attention_mask=mask).pooler_output is not None
    assert padded.shape == logits.shape == (5, model.config.vocab_size)
    torch.testing.assert_close(padded, logits, rtol=1e-6, atol=1e-6)
    assert not any("forward" in vars(m) for m in module.modules())


@pytest.mark.slow
@LONG
def test_ddp_compiles_the_inner_module(tiny_bert_dir, tmp_path):
    """torchrun with 2 gloo ranks on the fast path (``$BENCH_FAST_PATH=on``): DDP wraps the compiled step, both
    ranks end with the same weights and the checkpoint records a compiled step."""
    import os
    import subprocess
    import sys

    worker = Path(__file__).with_name("ddp_worker.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           "BENCH_FAST_PATH": "on"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(worker),
           str(tiny_bert_dir), str(tmp_path / "run")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    meta = json.loads((tmp_path / "run" / "checkpoint" / "method.json").read_text())
    assert meta["step_path"]["compile"] and meta["step_path"]["static_shapes"], meta["step_path"]
    r0, r1 = (torch.load(tmp_path / "run" / f"rank{r}.pt") for r in (0, 1))
    for k in r0:
        torch.testing.assert_close(r0[k], r1[k], rtol=0, atol=0, msg=k)
