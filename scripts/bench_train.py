"""Training step cost of every trainer: usebench's loop vs its GEMM floor and a reference implementation.

For each method (and each supervised plugin), at one backbone, batch size and max length:

- **ours**: the plugin trained by ``usebench.train.loop.train`` (collate, forward, backward, clip, optimizer,
  logging: the real path), timed from the end of step ``--warmup`` to the end of the last step (model loading and
  the final export are outside the clock);
- **floor**: the matrix products the step needs (``bench_train_flops.py``: encoder forward + backward, decoders,
  second encoders, the LM head on labelled positions only; counted from the shapes of the very batches ours
  trains on), each timed as a torch GEMM of that shape on this device in this run: no step can be faster;
- **reference**: the same step written with the reference library (``bench_train_refs.py``: sentence-transformers'
  losses, transformers' MLM collator + ``BertForMaskedLM``) in a plain loop with the same optimizer, on the same
  texts per step. MLM has a second row: a plain loop with the LM head on the masked positions only.

Ours and the reference alternate, ``--repeats`` times, in one run; the table gives the median and the spread of
the repeats (a spread above 10% is flagged: the machine was busy, rerun). On a GPU it also prints the model
FLOP utilisation (MFU) against the device's peak (``--peak-tflops`` when the device is not in the table).

    python scripts/bench_train.py                                   # packaged MiniLM, batch 16, 64 tokens, CPU
    python scripts/bench_train.py --methods mlm,tsdae --repeats 5
    python scripts/bench_train.py --model bert-base-random --device cuda --amp bf16   # BERT-base size, random
    python scripts/bench_train.py --model bert-base-random --device cuda --amp fp16   # with a GradScaler
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench_train_refs import RefLoop, reference

from usebench.run.flops import GemmTimer, step_gemms
from usebench.run.hardware import datasheet_peak

ALL = ("tsdae", "simcse", "ct", "ct-ibn", "consert", "bertflow", "mlm", "denosent", "paser", "sbert-mnrl",
       "sbert-nli", "sbert-cosine", "sbert-stsb",
       "clm-ae", "mlm-ae", "simcse-clm", "simcse-mlm", "consert-clm", "consert-mlm")  # R. Wang 2022's thesis
# --amp -> the trainers' amp setting (fp16: autocast + GradScaler, as the SimCSE, CT and ConSERT paper presets)
AMP = {"fp32": "off", "bf16": "bf16", "fp16": "fp16"}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass
class Row:
    """One table row: a method, its reference kind, and the timings of every repeat."""

    method: str
    plain: bool = False  # MLM's plain-loop reference instead of the library one
    ours: list[float] = field(default_factory=list)  # seconds per step, one per repeat
    ref: list[float] = field(default_factory=list)
    ours_cpu: list[float] = field(default_factory=list)  # CPU seconds per step (all threads, collate workers too)
    ref_cpu: list[float] = field(default_factory=list)
    ref_label: str | None = None
    floor_s: float | None = None
    flops: float | None = None
    note: str = ""

    @property
    def name(self) -> str:
        return f"{self.method} (plain)" if self.plain else self.method


def load_data(n: int) -> tuple[list[str], list[tuple]]:
    """Sentences and aligned pairs (Twitter URL training pairs from $BENCH_DATA, else word salad)."""
    root = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    folder = root / "useb" / "extra" / "twitter_url_train_tok"
    if (folder / "a.toks").is_file():
        a = (folder / "a.toks").read_text(encoding="utf-8").splitlines()[:n]
        b = (folder / "b.toks").read_text(encoding="utf-8").splitlines()[:n]
        y = [float(v) for v in (folder / "sim.txt").read_text(encoding="utf-8").split()[:n]]
    else:
        r = np.random.default_rng(0)
        words = "river house dog night ocean piano queen sun tree kite lemon grape island jungle".split()
        a, b = ([" ".join(r.choice(words, size=r.integers(5, 20))) for _ in range(n)] for _ in range(2))
        y = [float(v) for v in r.integers(0, 2, n)]
    sentences = list(dict.fromkeys(t.strip() for t in a if t.strip()))
    pairs = [(s, t, v) for s, t, v in zip(a, b, y) if s.strip() and t.strip()]
    return sentences, pairs


def labeled_rows(method: Any, pairs: list[tuple]) -> list[tuple]:
    """What a supervised plugin trains on: pairs, NLI-style triplets (a later pair's text as the negative), or
    graded pairs."""
    if method.example_kind == "graded":
        return pairs
    if getattr(method, "name", "") == "sbert-nli":
        return [(a, b, pairs[(i + 997) % len(pairs)][1]) for i, (a, b, _) in enumerate(pairs)]
    return [(a, b) for a, b, _ in pairs]


def random_bert_base(tokenizer_from: str) -> str:
    """A randomly initialised BERT-base-size model (``BertConfig()`` defaults) with the packaged uncased
    tokenizer, saved to a temporary folder (no download)."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from usebench.eval.models import resolve_model

    out = Path(tempfile.mkdtemp(prefix="bert-base-random-"))
    tokenizer = AutoTokenizer.from_pretrained(resolve_model(tokenizer_from).path)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size)).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)


def method_config(method: Any, args: argparse.Namespace, model: str) -> Any:
    """The smoke preset at the benchmark's backbone, batch, length and step count, no dev evaluation."""
    values: dict[str, Any] = dict(model=model, batch_size=args.batch_size, max_length=args.max_length,
                                  max_steps=args.warmup + args.steps, epochs=None, save_every=0, dev_task=None,
                                  dev_every=0, dev_patience=None, amp=AMP[args.amp])
    if method.name == "bertflow":
        values["ddi_batch_size"] = None  # every step the same size (the init batch is a larger first step)
    if method.name == "paser" and not wordnet_available():
        values["synonym_ratio"] = 0.0
    return method.config("smoke", **values)


def wordnet_available() -> bool:
    from usebench.methods.parts.synonyms import find_wordnet_dir

    return find_wordnet_dir() is not None


def prepared(method: Any, cfg: Any, sentences: list[str], pairs: list[tuple]) -> list[Any]:
    """The examples exactly as the loop prepares them (so step indices select the same texts here)."""
    from usebench.train.loop import prepare_corpus

    if method.data_kind == "labeled":
        return method.prepare_examples(cfg, labeled_rows(method, pairs), cfg.batch_size)
    return prepare_corpus(method.filter_corpus(cfg, prepare_corpus(sentences, cfg, 1)), cfg, cfg.batch_size)


def step_items(method: Any, cfg: Any, data: list[Any], step: int) -> list[Any]:
    return [data[i] for i in method.batch_indices(cfg, len(data), step, 0)]


def floor_of(row: Row, method: Any, cfg: Any, data: list[Any], args: argparse.Namespace, timer: GemmTimer) -> None:
    """Mean GEMM floor and model FLOPs over the timed steps' batches (collated as the loop collates them)."""
    from transformers import AutoConfig, AutoTokenizer

    from usebench.eval.models import resolve_model
    from usebench.train.runtime import step_rng

    path = resolve_model(cfg.model).path
    tokenizer, config = AutoTokenizer.from_pretrained(path), AutoConfig.from_pretrained(path)
    seconds, flops = [], []
    for step in range(args.warmup, args.warmup + args.steps):
        batch = method.collate(cfg, tokenizer, step_items(method, cfg, data, step), step_rng(0, step))
        gemms = step_gemms(method.name, cfg, config, batch, int(tokenizer.pad_token_id))
        if gemms is None:
            row.note = "no FLOP model for this method"
            return
        seconds.append(timer.seconds(gemms))
        flops.append(sum(g.flops for g in gemms))
    row.floor_s, row.flops = float(np.mean(seconds)), float(np.mean(flops))


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # finished (joined) children: the collate workers
    return usage.ru_utime + usage.ru_stime


def time_ours(method: Any, cfg: Any, data: list[Any], args: argparse.Namespace) -> tuple[float, float]:
    """(wall, CPU) seconds per step of ``train`` between the end of the warm-up and the end of the last step.
    CPU: this process' threads over those steps, plus the collate workers' CPU time spread over every step."""
    from usebench.train.loop import train

    stamps: dict[int, tuple[float, float]] = {}

    def on_step(step: int) -> None:
        if step in (args.warmup, args.warmup + args.steps):
            _sync(args.device)
            stamps[step] = (time.perf_counter(), time.process_time())

    children = _children_cpu()
    with tempfile.TemporaryDirectory() as tmp:
        train(method, cfg, data, tmp, seed=0, device=args.device, resume=False, show_progress=False, on_step=on_step,
              deterministic=args.deterministic)
    workers = (_children_cpu() - children) / (args.warmup + args.steps)
    (w0, c0), (w1, c1) = stamps[args.warmup], stamps[args.warmup + args.steps]
    return (w1 - w0) / args.steps, (c1 - c0) / args.steps + workers


def time_ref(row: Row, method: Any, cfg: Any, data: list[Any], args: argparse.Namespace
             ) -> tuple[float, float] | None:
    """(wall, CPU) seconds per step of the reference on the same texts per step, or None without a reference."""
    from usebench.eval.models import resolve_model

    texts = [t for t in data if isinstance(t, str)]
    torch.manual_seed(0)
    ref = reference(method.name, resolve_model(cfg.model).path, cfg, args.device, texts, plain=row.plain)
    if ref is None:
        return None
    row.ref_label = ref.label
    loop = RefLoop(ref, cfg, args.device, amp=args.amp)
    t0 = c0 = 0.0
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            _sync(args.device)
            t0, c0 = time.perf_counter(), time.process_time()
        loop.step(step_items(method, cfg, data, step), np.random.default_rng([0, step]))
    _sync(args.device)
    return (time.perf_counter() - t0) / args.steps, (time.process_time() - c0) / args.steps


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _spread(xs: list[float]) -> float:
    return (max(xs) - min(xs)) / statistics.median(xs) if len(xs) > 1 else 0.0


def peak_flops(args: argparse.Namespace) -> float | None:
    """The device's dense datasheet peak in FLOP/s for the run's precision (None on a CPU or an unknown GPU):
    :func:`usebench.run.hardware.datasheet_peak`, which tells SXM, PCIe and NVL parts apart."""
    if args.peak_tflops:
        return args.peak_tflops * 1e12
    if not args.device.startswith("cuda"):
        return None
    found = datasheet_peak(torch.cuda.get_device_name(torch.device(args.device)), args.amp)
    return found[1] * 1e12 if found else None


def report(rows: list[Row], args: argparse.Namespace, header: str) -> str:
    """The table: per method ours, floor, reference (medians over repeats), the ratios and the spreads."""
    peak = peak_flops(args)
    lines = [header, "", "| method | ours ms/step | GFLOP/step | floor ms | x floor | reference ms/step | x reference "
             "| x reference (CPU s) | spread ours / x ref | reference" + (" | MFU" if peak else "") + " |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---" + ("|---:" if peak else "") + "|"]
    for r in rows:
        ours, ref = _median(r.ours), _median(r.ref)
        floor = f"{r.floor_s * 1e3:.0f}" if r.floor_s else "-"
        x_floor = f"{ours / r.floor_s:.2f}" if ours and r.floor_s else "-"
        ref_ms = f"{ref * 1e3:.0f}" if ref else "-"
        # Ours and the reference run back to back in each repeat: the ratio per repeat cancels the machine's drift.
        ratios = [o / f for o, f in zip(r.ours, r.ref)]
        x_ref = f"{_median(ratios):.2f}" if ratios else "-"
        x_cpu = f"{_median([o / f for o, f in zip(r.ours_cpu, r.ref_cpu)]):.2f}" if r.ref_cpu else "-"
        spread = f"{_spread(r.ours):.0%} / {_spread(ratios):.0%}" if ratios else f"{_spread(r.ours):.0%} / -"
        flag = " (repeats disagree: rerun)" if (_spread(ratios) if ratios else _spread(r.ours)) > 0.10 else ""
        label = (r.ref_label or "no reference") + (f"; {r.note}" if r.note else "") + flag
        mfu = f" | {r.flops / ours / peak:.1%}" if peak and r.flops and ours else (" | -" if peak else "")
        gflop = f"{r.flops / 1e9:.1f}" if r.flops else "-"
        lines.append(f"| {r.name} | {ours * 1e3:.0f} | {gflop} | {floor} | {x_floor} | {ref_ms} | {x_ref} | {x_cpu} | {spread} | "
                     f"{label}{mfu} |")
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--methods", default=",".join(ALL), help="comma-separated (default: all)")
    parser.add_argument("--model", default="minilm", help="a model name/dir, or bert-base-random (a random "
                        "BERT-base-size model from a config, no download)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--steps", type=int, default=8, help="timed steps per repeat")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps before them")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--amp", choices=tuple(AMP), default="fp32",
                        help="bf16 autocast, fp16 autocast with a GradScaler, or fp32")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--deterministic", action="store_true",
                        help="ours with deterministic kernels (torch.use_deterministic_algorithms; what it costs)")
    parser.add_argument("--peak-tflops", type=float, default=None, help="device peak for MFU (default: table)")
    parser.add_argument("--json", type=Path, default=None, help="also write the timings here")
    parser.add_argument("--from-json", type=Path, default=None, help="print the table of a saved --json run")
    args = parser.parse_args()
    unknown = sorted(set(args.methods.split(",")) - set(ALL))
    if unknown:
        parser.error(f"unknown methods {unknown}; known: {', '.join(ALL)}")
    if args.warmup < 1 or args.steps < 1 or args.repeats < 1:
        parser.error("--warmup, --steps and --repeats must be >= 1")
    return args


def main() -> None:
    args = parse_args()
    if args.deterministic:  # before any CUDA call: cuBLAS reads its workspace setting at its first handle
        from usebench.train.runtime import prepare_deterministic_env

        prepare_deterministic_env()
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        print(report([Row(**r) for r in saved["rows"]], args, saved["header"]))
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench.registry import METHODS

    model = random_bert_base("minilm") if args.model == "bert-base-random" else args.model
    sentences, pairs = load_data(4000)
    names = args.methods.split(",")
    rows = [Row(m) for m in names] + ([Row("mlm", plain=True)] if "mlm" in names else [])
    timer = GemmTimer(args.device, DTYPES[args.amp])
    setups = {}
    for row in rows:
        method = METHODS.get(row.method)
        cfg = method_config(method, args, model)
        data = prepared(method, cfg, sentences, pairs)
        floor_of(row, method, cfg, data, args, timer)
        if row.method == "paser" and cfg.synonym_ratio == 0:
            row.note = "synonym replacement off (no WordNet here)"
        setups[row.name] = (method, cfg, data)
    t0 = time.perf_counter()
    for repeat in range(args.repeats):
        for row in rows:
            method, cfg, data = setups[row.name]
            if not row.plain:  # MLM's two rows share one timing of ours per repeat
                wall, cpu = time_ours(method, cfg, data, args)
                row.ours.append(wall)
                row.ours_cpu.append(cpu)
            ref = time_ref(row, method, cfg, data, args)
            if ref is not None:
                row.ref.append(ref[0])
                row.ref_cpu.append(ref[1])
            ours = f"ours {row.ours[-1] * 1e3:.0f} ms/step, " if row.ours else ""
            print(f"repeat {repeat + 1}/{args.repeats} {row.name}: {ours}"
                  + (f"reference {ref[0] * 1e3:.0f} ms/step" if ref else "no reference"), flush=True)
    mlm = {r.method: r for r in rows if r.method == "mlm" and not r.plain}
    for r in rows:
        if r.plain:
            r.ours, r.ours_cpu = mlm["mlm"].ours, mlm["mlm"].ours_cpu
    gpu = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None
    header = (f"{args.model} ({model}), batch {args.batch_size}, max length {args.max_length}, {args.amp}, "
              f"{args.device}{' ' + gpu if gpu else ''}, torch {torch.__version__}, {torch.get_num_threads()} "
              f"threads; {args.repeats} alternating repeats of {args.steps} steps after {args.warmup} warm-up "
              f"steps, {time.perf_counter() - t0:.0f} s; load average {os.getloadavg()[0]:.2f} on "
              f"{os.cpu_count()} cores at the end")
    print(report(rows, args, header))
    rated = [r for r in rows if r.flops and r.floor_s]
    if rated:
        rate = sum(r.flops for r in rated) / sum(r.floor_s for r in rated)
        print(f"\nfloor = the step's GEMMs (counted from the batches' shapes) at this device's measured {args.amp} "
              f"GEMM speed at those shapes (mean {rate / 1e9:.0f} GFLOP/s); x floor and x reference are ratios of "
              f"step times (lower is better; x reference < 1: ours is faster), x reference the median of the "
              f"per-repeat ratios (ours and the reference run back to back); spread = (max - min) / median over "
              f"the repeats of ours' step time and of that ratio; x reference (CPU s) compares CPU seconds per step (all threads, collate workers included), steadier "
              f"than wall time on a busy machine")
    if args.json:
        args.json.write_text(json.dumps({"header": header, "rows": [vars(r) for r in rows]}, indent=1))


if __name__ == "__main__":
    main()
