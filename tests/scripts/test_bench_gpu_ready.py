"""The benchmark scripts as a GPU image runs them (issue 30), checked on the CPU: bench_train's fp16 (a GradScaler,
as the SimCSE, CT and ConSERT paper presets) with the sentence-transformers references, and bench_retrieval
without beir (it imported beir and faiss unconditionally)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]


def run_script(name: str, *args: str, env: dict | None = None) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           **(env or {})}
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / name), *args], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_bench_train_fp16_trains_ours_and_the_references_with_a_scaler(tiny_bert_dir, tmp_path):
    saved = tmp_path / "fp16.json"
    stdout = run_script("bench_train.py", "--model", str(tiny_bert_dir), "--methods", "tsdae,simcse",
                        "--batch-size", "8", "--max-length", "16", "--steps", "2", "--warmup", "1", "--repeats", "1",
                        "--threads", "1", "--device", "cpu", "--amp", "fp16", "--json", str(saved))
    rows = {r["method"]: r for r in json.loads(saved.read_text())["rows"]}
    assert rows["tsdae"]["st"]["label"] == "ST DenoisingAutoEncoderLoss" and rows["tsdae"]["st"]["median_ms"] > 0
    assert rows["simcse"]["old"]["median_ms"] > 0 and ", fp16, cpu" in stdout


def test_bench_train_takes_several_precisions_in_one_run(tiny_bert_dir, tmp_path):
    """--amp fp32,tf32,bf16: a row per precision, each column warmed up on its own (TF32 is fp32 on a CPU)."""
    saved = tmp_path / "amp.json"
    run_script("bench_train.py", "--model", str(tiny_bert_dir), "--methods", "sbert-cosine", "--batch-size", "4",
               "--max-length", "16", "--steps", "2", "--warmup", "1", "--threads", "1", "--device", "cpu",
               "--amp", "fp32,tf32,bf16", "--json", str(saved))
    rows = json.loads(saved.read_text())["rows"]
    assert [r["precision"] for r in rows] == ["fp32", "tf32", "bf16"]
    assert all(r[c]["median_ms"] > 0 for r in rows for c in ("old", "st", "lean"))
    assert "TF32 is a CUDA mode" in " ".join(rows[1]["notes"])


def test_ref_loop_fp16_unscales_before_clipping_and_steps(tiny_bert_dir):
    """RefLoop's fp16: a GradScaler that skips the overflowing first steps (halving its scale from 65536, as
    fp16 training does) and then steps the optimizer."""
    import numpy as np
    import torch

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from bench_train_refs import RefLoop, reference  # the script's name for usebench.doctor.references
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS

    cfg = METHODS.get("simcse").config("smoke", model=str(tiny_bert_dir), batch_size=4, max_length=16)
    ref = reference("simcse", str(tiny_bert_dir), cfg, "cpu", [])
    loop = RefLoop(ref, cfg, "cpu", amp="fp16")
    assert loop.scaler.is_enabled() and loop.dtype == torch.float16
    before = [p.detach().clone() for p in loop.params]
    for _ in range(12):
        loop.step(["a dog runs", "the sun is out", "kites fly", "fish swim"], np.random.default_rng(0))
        if any(not torch.equal(a, b) for a, b in zip(before, loop.params)):
            break
    assert any(not torch.equal(a, b) for a, b in zip(before, loop.params))
    assert all(torch.isfinite(p).all() for p in loop.params) and loop.scaler.get_scale() < 65536.0
    assert all(p.device.type == "cpu" for p in loop.params)


def test_bench_retrieval_runs_without_beir(tiny_bert_dir):
    """beir (and faiss) are optional: what is missing is skipped and named, the rest runs."""
    import importlib.util

    stdout = run_script("bench_retrieval.py", "--model", str(tiny_bert_dir), "--n", "400", "--queries", "8",
                        "--k", "5", "--encode-sample", "8", "--batch-size", "8", "--threads", "1")
    assert "suite numpy" in stdout and "suite torch" in stdout
    if importlib.util.find_spec("beir") is None:
        assert "not installed, skipped: " in stdout and "BEIR" in stdout
        assert "BEIR DenseRetrievalExactSearch" not in stdout
    if importlib.util.find_spec("faiss") is not None:
        assert "suite faiss-cpu" in stdout


def test_the_offline_node_scripts_parse_and_explain_themselves():
    """stage_offline.sh and gpu_check.sh: valid bash; without arguments each prints its usage and exits 2."""
    for name in ("stage_offline.sh", "gpu_check.sh"):
        script = ROOT / "scripts" / name
        assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0, name
        out = subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert out.returncode == 2 and "Usage: scripts/" + name in out.stdout, (name, out.stdout, out.stderr)


def _doctor_args() -> list[str]:
    """gpu_check.sh's DOCTOR_ARGS with its defaults, as bash expands them."""
    text = (ROOT / "scripts" / "gpu_check.sh").read_text(encoding="utf-8")
    start = text.index("DOCTOR_ARGS=(")
    block = text[start:text.index(")\n", start) + 1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCTOR_")}
    out = subprocess.run(["bash", "-c", block + '\nprintf "%s\\n" "${DOCTOR_ARGS[@]}"'], capture_output=True,
                         text=True, env=env, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_gpu_check_runs_the_doctor_on_both_step_paths_with_the_cli_s_own_flags(tmp_path):
    """The doctor's command line in gpu_check.sh (both step paths side by side, three precisions, the sections
    it keeps) is one the CLI accepts: run here with the CPU for CUDA and --quick, narrowed to one trainer and the
    old path so it takes seconds (a repeated option's last value wins)."""
    args = _doctor_args()
    assert args[:4] == ["--device", "cuda", "--paths", "old,new"] and "fp32,tf32,bf16" in args
    assert "training" in args[args.index("--sections") + 1]
    out = tmp_path / "doctor.json"
    cpu = ["cpu" if a == "cuda" else a for a in args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "usebench", "doctor", *cpu, "--quick", "--methods", "ct",
                           "--paths", "old", "--precisions", "fp32", "--json", str(out)], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["search"] == {"skipped": "not asked for (--sections)"}
    assert report["training"]["rows"][0]["old"]["median_ms"] > 0


def test_gpu_check_runs_the_deterministic_pair_with_the_cli_s_own_flags(tiny_bert_dir, tmp_path, monkeypatch):
    """Every `usebench run` command line in gpu_check.sh is one the CLI accepts and plans (a renamed option would
    otherwise show only on a GPU node): dry-run here with the CPU for CUDA and the tiny BERT for its small one."""
    from click.testing import CliRunner

    from tests.methods.helpers import toy_corpus
    from usebench.cli.main import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(400)) + "\n", encoding="utf-8")
    swap = {"cuda": "cpu", "/tmp/usebench-tiny": str(tiny_bert_dir), "/tmp/usebench-corpus.txt": str(corpus)}
    text = (ROOT / "scripts" / "gpu_check.sh").read_text(encoding="utf-8").replace("\\\n", " ")
    runs = [line.split("-m usebench run", 1)[1].split(">")[0] for line in text.splitlines() if "-m usebench run" in line]
    assert runs
    monkeypatch.chdir(ROOT)  # --data-root tests/assets
    monkeypatch.delenv("BENCH_DETERMINISTIC", raising=False)
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    for tail in runs:
        args = [swap.get(a, a) for a in tail.split()]
        args = [str(tmp_path / "results") if a.startswith('"/tmp/usebench-det-') else a for a in args]
        result = CliRunner().invoke(main, ["run", *args, "--dry-run"])
        assert result.exit_code == 0, result.output
        assert all(m in result.output for m in ("simcse", "tsdae", "ct"))
