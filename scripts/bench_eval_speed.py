"""How much faster is our TwitterPara evaluation than encoding the way the useb kit does? One run, same machine.

Ours: ``usebench.eval.evaluate.evaluate("twitterpara", DenseScorer(HFEncoder(...)))``: every unique sentence encoded
once, in length-sorted batches. Reference: the useb kit's loop (``evaluators/base.py::_text2se``): for each
corpus, the first sentences then the second sentences, in file order, in batches of 32, each batch through
``SentenceTransformer.encode``; no de-duplication. Both use the same model and device. The script prints both
wall times, the speed-up, and checks that both ways give the same AP and Spearman (to 1e-4).

    BENCH_DATA=/path/to/data python scripts/bench_eval_speed.py [--model minilm] [--device cpu]
"""
from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from pathlib import Path

USEB_BATCH = 32  # useb's TwitterParaEvaluator default bsz


def read_reference_pairs(root: Path) -> dict[str, tuple[list[str], list[str], list[int | None], list[int]]]:
    """TwitterPara as the useb kit reads it: (s1s, s2s, is_para or None, grade) per corpus, sentences stripped.

    The useb copy of the URL file has no blank lines; the release's blank separator lines are skipped here.
    """
    def judge(grade: int) -> int | None:
        return None if grade == 3 else int(grade > 3)

    out = {}
    url = [line.strip().split("\t") for line in (root / "Twitter_URL_Corpus_test.txt").open(encoding="utf-8")]
    url = [f for f in url if f != [""]]
    grades = [ast.literal_eval(f[2])[0] for f in url]
    out["twitterurl"] = ([f[0].strip() for f in url], [f[1].strip() for f in url], [judge(g) for g in grades], grades)
    pit = [line.strip().split("\t") for line in (root / "test.data").open(encoding="utf-8")]
    grades = [int(f[4]) for f in pit]
    out["pit"] = ([f[2].strip() for f in pit], [f[3].strip() for f in pit], [judge(g) for g in grades], grades)
    return out


def reference_eval(model, pairs) -> dict[str, float]:
    """useb's TwitterParaEvaluator._run with its batching: cosine, sklearn AP without the middle grade, Spearman."""
    import torch
    from scipy.stats import spearmanr
    from sklearn.metrics import average_precision_score

    def embed(texts: list[str]) -> torch.Tensor:
        batches = [texts[i : i + USEB_BATCH] for i in range(0, len(texts), USEB_BATCH)]
        return torch.cat([model.encode(b, convert_to_tensor=True, show_progress_bar=False) for b in batches])

    results = {}
    for name, (s1, s2, is_para, grades) in pairs.items():
        cos = torch.nn.functional.cosine_similarity(embed(s1), embed(s2), dim=-1).cpu().numpy()
        keep = [i for i, label in enumerate(is_para) if label is not None]
        results[f"ap_{name}"] = float(average_precision_score([is_para[i] for i in keep], cos[keep]))
        results[f"spearman_{name}"] = float(spearmanr(grades, cos).statistic)
    results["ap_avg"] = (results["ap_twitterurl"] + results["ap_pit"]) / 2
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=None, help="default: $BENCH_DATA")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=64, help="our encoder's batch size")
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    from sentence_transformers import SentenceTransformer

    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.eval.encoder import HFEncoder
    from usebench.eval.evaluate import evaluate
    from usebench.eval.models import resolve_model
    from usebench.paths import default_data_root
    from usebench.eval.scorer import DenseScorer

    data_root = args.data_root or default_data_root()
    ours = HFEncoder(args.model, pooling="mean", batch_size=args.batch_size, device=args.device, show_progress=False)
    reference = SentenceTransformer(resolve_model(args.model).path, device=args.device)
    warmup = ["warm up the kernels", "and the tokenizer"] * 16
    ours.encode(warmup), reference.encode(warmup, show_progress_bar=False)

    t0 = time.perf_counter()
    ev = evaluate("twitterpara", DenseScorer(ours), "test", data_root)
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    pairs = read_reference_pairs(Path(data_root) / "useb/data-eval/twitterpara")
    ref = reference_eval(reference, pairs)
    t_ref = time.perf_counter() - t0

    n_sent = sum(2 * len(p[0]) for p in pairs.values())
    print(f"model {args.model} (mean pooling), device {args.device}, torch threads {_threads()}")
    print(f"reference (useb kit: batches of {USEB_BATCH}, no dedup, {n_sent} sentences): {t_ref:8.2f} s")
    print(f"ours (dedup + length-sorted, batch {args.batch_size}, {len(set(_all_texts(pairs)))} unique): "
          f"{t_ours:8.2f} s  [{', '.join(f'{k} {v:.2f}s' for k, v in ev.timings.items())}]")
    print(f"speed-up: {t_ref / t_ours:.2f}x")
    worst = 0.0
    for key, value in ref.items():
        worst = max(worst, abs(value - ev.scores[key]))
        print(f"  {key:20s} ours {ev.scores[key] * 100:8.4f}   reference {value * 100:8.4f}")
    print(f"largest score difference: {worst:.2e} ({'agree' if worst < 1e-4 else 'DISAGREE'} at 1e-4)")
    return 0 if worst < 1e-4 else 1


def _all_texts(pairs) -> list[str]:
    return [t for s1, s2, _, _ in pairs.values() for t in (*s1, *s2)]


def _threads() -> int:
    import torch

    return torch.get_num_threads()


if __name__ == "__main__":
    sys.exit(main())
