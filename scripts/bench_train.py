"""Training step cost of every trainer: ours on the old and the new step path against sentence-transformers' step
for the same loss, a lean loop around the same module, and the step's GEMM floor (issue 36).

The methodology is ``bench doctor``'s (``usebench/doctor/steptime.py``; the columns are built by
``usebench/doctor/training.py``), at this script's backbone, batch and length:

- real ``--batch-size`` x ``--max-length`` batches: every sentence has more words than tokens fit, so every row is
  full (TSDAE's noisy encoder input excepted: the deletion shortens it, as in training);
- the batches of steps 0..N-1 collated before the clock starts, for every column;
- a warm-up over every distinct batch shape (at least ``--warmup`` steps), then N steps with a device sync at each
  boundary (their **median** is the figure) and the same N steps as one window (its mean, no per-step sync);
- **ours** through ``usebench.train.loop.train`` on ``fast_path="off"`` (old) and ``"on"`` (new), collate, loss
  read-back and export off the clock; **ST**: sentence-transformers' loss (transformers' ``BertForMaskedLM`` for
  MLM) in the loop the HF Trainer runs (fused AdamW, clip 1.0, autocast); **lean**: the plugin's own module with
  fused AdamW (``--lean-optimizer trainer``: the trainer's own optimizer, so ours/lean is the loop's overhead
  alone), autocast, nothing else; **floor**: the step's matrix products (``usebench/doctor/flops.py``, counted
  from the same batches) each timed as a torch GEMM of that shape here: no step can be faster.

Each precision in ``--amp`` (fp32, tf32, bf16, fp16) is its own row; every column warms itself up, so no
precision runs warm on another's kernels. ``--repeats`` runs every row again, alternating; the table gives the
median over repeats and the spread of ours. On a GPU it also prints MFU against the datasheet peak.

    python scripts/bench_train.py                                   # packaged MiniLM, batch 32, 64 tokens, CPU
    python scripts/bench_train.py --methods mlm,tsdae --repeats 3
    python scripts/bench_train.py --model bert-base-random --device cuda --amp fp32,tf32,bf16   # old and new path
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from usebench.doctor.training import COLUMNS, row_brief
from usebench.doctor.flops import GemmTimer
from usebench.doctor.hardware import datasheet_peak

ALL = ("tsdae", "simcse", "ct", "ct-ibn", "consert", "bertflow", "mlm", "denosent", "paser", "sbert-mnrl",
       "sbert-nli", "sbert-cosine", "sbert-stsb",
       "clm-ae", "mlm-ae", "simcse-clm", "simcse-mlm", "consert-clm", "consert-mlm")  # R. Wang 2022's thesis
DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def random_bert_base() -> str:
    """A randomly initialised BERT-base-size model (``BertConfig()`` defaults) with the packaged uncased
    tokenizer, saved to a temporary folder (no download): the doctor's model."""
    from usebench.doctor.common import FULL
    from usebench.doctor.trainers import random_bert

    return random_bert(FULL, Path(tempfile.mkdtemp(prefix="bert-base-random-")))


def header(args: argparse.Namespace, model: str, seconds: float) -> str:
    """What was run, where, and how it was timed."""
    gpu = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None
    return (f"{args.model} ({model}), batch {args.batch_size} x {args.max_length} tokens (every row full), "
            f"{','.join(args.amp)}, {args.device}{' ' + gpu if gpu else ''}, torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads; ours on the {' and '.join(args.paths)} path(s); {args.repeats} "
            f"repeat(s) of {args.steps} timed steps per pass after a warm-up over every batch shape (at least "
            f"{args.warmup}), {seconds:.0f} s; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


def floor_ms(setup: Any, amp: str, device: str, timers: dict[str, GemmTimer]) -> float | None:
    """The mean GEMM floor (ms) of the timed batches at ``amp``, None without a FLOP model."""
    from usebench.doctor.steptime import matmul_precision
    from usebench.doctor.flops import step_gemms

    timer = timers.setdefault(amp, GemmTimer(device, DTYPES[amp]))
    seconds = []
    with matmul_precision(amp):
        for batch in setup.batches:
            gemms = step_gemms(setup.method.name, setup.cfg, setup.config, batch, int(setup.tokenizer.pad_token_id))
            if gemms is None:
                return None
            seconds.append(timer.seconds(gemms))
    return statistics.mean(seconds) * 1e3


def _median(xs: list[float | None]) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _spread(xs: list[float]) -> float:
    return (max(xs) - min(xs)) / statistics.median(xs) if len(xs) > 1 else 0.0


def peak_flops(args: argparse.Namespace, amp: str) -> float | None:
    """The device's dense datasheet peak in FLOP/s at ``amp`` (None on a CPU or an unknown GPU):
    :func:`usebench.doctor.hardware.datasheet_peak`, which tells SXM, PCIe and NVL parts apart."""
    if args.peak_tflops:
        return args.peak_tflops * 1e12
    if not args.device.startswith("cuda"):
        return None
    found = datasheet_peak(torch.cuda.get_device_name(torch.device(args.device)), amp)
    return found[1] * 1e12 if found else None


def column_ms(rows: list[dict[str, Any]], name: str) -> float | None:
    """The median over repeats of a column's median ms/step."""
    return _median([r.get(name, {}).get("median_ms") for r in rows])


def table(groups: dict[tuple[str, str], list[dict[str, Any]]], args: argparse.Namespace, head: str) -> str:
    """Per method and precision: floor, ours on each path, ST, lean (medians), the ratios, MFU, the notes."""
    lines = [head, "", "| method | amp | GFLOP | floor ms | old ms | new ms | ST ms | lean ms | old/ST | new/ST "
             "| old/lean | new/lean | old/floor | spread old | MFU old | MFU new | reference; notes |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for (method, amp), rows in groups.items():
        ms = {c: column_ms(rows, c) for c in COLUMNS}
        ratio = {k: _median([r["ratios"].get(k) for r in rows if "ratios" in r])
                 for k in ("old_over_st", "new_over_st", "old_over_lean", "new_over_lean")}
        floor = _median([r.get("floor_ms") for r in rows])
        gflop = rows[0].get("gflop")
        peak = peak_flops(args, amp)
        mfu = [f"{gflop * 1e9 / (ms[c] / 1e3) / peak:.1%}" if peak and gflop and ms[c] else "-"
               for c in ("old", "new")]
        olds = [r["old"]["median_ms"] for r in rows if "median_ms" in r.get("old", {})]
        cells = [f"{gflop:.2f}" if gflop else "-", _f(floor), *(_f(ms[c]) for c in COLUMNS),
                 *(_x(ratio[k]) for k in ratio), _x(ms["old"] / floor if ms["old"] and floor else None),
                 f"{_spread(olds):.0%}" if olds else "-", *mfu, _notes(rows[0])]
        lines.append(f"| {method} | {amp} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _notes(row: dict[str, Any]) -> str:
    st = row.get("st", {})
    parts = [st.get("label") or st.get("skipped") or (f"ST error: {st['error']}" if "error" in st else "")]
    for name in COLUMNS:
        c = row.get(name) or {}
        if "error" in c and name != "st":
            parts.append(f"{name} error: {c['error']}")
        parts += [f"{name}: {n}" for n in c.get("notes", [])]
    return "; ".join(p for p in dict.fromkeys(parts) if p).replace("|", "/")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--methods", default=",".join(ALL), help="comma-separated (default: all)")
    parser.add_argument("--model", default="minilm", help="a model name/dir, or bert-base-random (a random "
                        "BERT-base-size model from a config, no download)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per pass (the median's sample)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="the least warm-up steps (the warm-up always covers every batch shape)")
    parser.add_argument("--repeats", type=int, default=1, help="every column again, alternating, this often")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--amp", default="fp32", help="comma-separated of fp32, tf32, bf16, fp16 (fp16: autocast "
                        "with a GradScaler, as the SimCSE, CT and ConSERT paper presets)")
    parser.add_argument("--lean-optimizer", choices=("fused", "trainer"), default="fused",
                        help="the lean loop's optimizer: torch's fused AdamW (default), or the trainer's own, so that "
                             "ours/lean is the loop's overhead alone")
    parser.add_argument("--paths", default=None, help="our step paths: old, new or old,new (default: both on a "
                        "GPU, old on a CPU, where the new path compiles with inductor)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--deterministic", action="store_true",
                        help="ours with deterministic kernels (BENCH_DETERMINISTIC=1; what it costs)")
    parser.add_argument("--peak-tflops", type=float, default=None, help="device peak for MFU (default: table)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--from-json", type=Path, default=None, help="print the table of a saved --json run")
    args = parser.parse_args()
    unknown = sorted(set(args.methods.split(",")) - set(ALL))
    if unknown:
        parser.error(f"unknown methods {unknown}; known: {', '.join(ALL)}")
    args.amp = [a.strip() for a in args.amp.split(",") if a.strip()]
    if not args.amp or set(args.amp) - set(DTYPES):
        parser.error(f"--amp: expected a comma-separated list of {', '.join(DTYPES)}")
    default_paths = "old,new" if args.device.startswith("cuda") else "old"
    args.paths = [p.strip() for p in (args.paths or default_paths).replace("both", "old,new").split(",") if p.strip()]
    if not args.paths or set(args.paths) - {"old", "new"}:
        parser.error("--paths: old, new or old,new")
    if args.warmup < 0 or args.steps < 2 or args.repeats < 1:
        parser.error("--warmup must be >= 0, --steps >= 2 and --repeats >= 1")
    return args


def measure(args: argparse.Namespace, model: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Every (method, amp) row, ``--repeats`` times, alternating: the columns of a row run back to back."""
    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench.registry import METHODS
    from usebench.doctor.training import StepBench, trainer_setup, training_row

    bench = StepBench(args.device, model, args.batch_size, args.max_length, args.steps, args.warmup,
                      tuple(args.paths), lean_optimizer=args.lean_optimizer)
    setups = {name: trainer_setup(METHODS.get(name), bench) for name in args.methods.split(",")}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    timers: dict[str, GemmTimer] = {}
    for repeat in range(args.repeats):
        for name, setup in setups.items():
            for amp in args.amp:
                row = training_row(setup, bench, amp)
                row["floor_ms"] = floor_ms(setup, amp, args.device, timers) if repeat == 0 else \
                    groups[(name, amp)][0]["floor_ms"]
                groups.setdefault((name, amp), []).append(row)
                print(f"repeat {repeat + 1}/{args.repeats} {name} {amp}: {row_brief(row)}", flush=True)
    return groups


def main() -> None:
    args = parse_args()
    if args.deterministic:  # before any CUDA call: cuBLAS reads its workspace setting at its first handle
        from usebench.train.runtime import DETERMINISTIC_ENV, prepare_deterministic_env

        os.environ[DETERMINISTIC_ENV] = "1"
        prepare_deterministic_env()
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in saved["rows"]:
            groups.setdefault((r["method"], r["precision"]), []).append(r)
        print(table(groups, args, saved["header"]))
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    model = random_bert_base() if args.model == "bert-base-random" else args.model
    t0 = time.perf_counter()
    groups = measure(args, model)
    head = header(args, model, time.perf_counter() - t0)
    print(table(groups, args, head))
    lean_optimizer = "fused AdamW" if args.lean_optimizer == "fused" else "the trainer's own optimizer"
    print("\nms = the median of per-step times (a device sync at each step boundary) after a warm-up over every "
          "batch shape, collate off the clock (usebench/doctor/steptime.py); old/new = ours with "
          "fast_path=off/on; ST = sentence-transformers' step for the same loss (transformers' for MLM) with the HF "
          f"Trainer's fused AdamW; lean = the same module in a minimal loop with {lean_optimizer}; ratios < 1: "
          "ours is faster; floor = the step's GEMMs at this device's measured rate at those shapes; spread = (max - min) / "
          "median of ours' medians over the repeats")
    if args.json:
        rows = [r for rs in groups.values() for r in rs]
        args.json.write_text(json.dumps({"header": head, "rows": rows}, indent=1, default=str))


if __name__ == "__main__":
    main()
