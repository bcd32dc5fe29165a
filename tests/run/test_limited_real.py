"""A quick evaluation on the real TwitterPara (issue 56, item 3; `slow`: reads $BENCH_DATA, ~20 s with the tiny
random BERT): its interval is over the subsample and wider than the full evaluation's, and its metrics are those
that sklearn and scipy give on the same pairs, read from the release files by hand."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import average_precision_score

from usebench.eval.encoder import load_encoder
from usebench.eval.subsample import Limit
from usebench.plan.eval_options import EvalOptions
from usebench.run.evaluation import evaluate_model
from usebench.stats.loading import load_items, result_intervals
from usebench.store import StoredResult, result_path

N = 200
DIR = "useb/data-eval/twitterpara"


def _by_hand(root: Path) -> dict[str, list[tuple[str, str, int]]]:
    """Every pair of the two release files as (sentence 1, sentence 2, grade), read without the task's reader."""
    url = []
    for line in (root / DIR / "Twitter_URL_Corpus_test.txt").read_text(encoding="utf-8").splitlines():
        if line.strip():
            f = line.split("\t")
            url.append((f[0].strip(), f[1].strip(), int(re.search(r"\((\d),\s*6\)", f[2])[1])))
    pit = []
    for line in (root / DIR / "test.data").read_text(encoding="utf-8").splitlines():
        f = line.split("\t")
        pit.append((f[2].strip(), f[3].strip(), int(f[4])))
    return {"twitterurl": url, "pit": pit}


def _stored(store: Path, run: str) -> StoredResult:
    path = result_path(store, run, "twitterpara", "test")
    return StoredResult(path, json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.slow
def test_limited_twitterpara_has_a_wider_interval_and_sklearn_scipys_metrics(real_data, tiny_bert_dir, tmp_path):
    store = tmp_path / "r"
    full = evaluate_model(EvalOptions(model=str(tiny_bert_dir)), "twitterpara", "test", real_data, store)
    quick = evaluate_model(EvalOptions(model=str(tiny_bert_dir), limit=N), "twitterpara", "test", real_data, store)
    whole, part = _stored(store, full.run_id), _stored(store, quick.run_id)
    ci_full = result_intervals(whole, ["ap_avg"])["ap_avg"]
    ci_part = result_intervals(part, ["ap_avg"])["ap_avg"]
    assert ci_part.high - ci_part.low > 2 * (ci_full.high - ci_full.low) > 0  # ~sqrt(10,000 / 400) = 5 times

    pairs, table = _by_hand(real_data), load_items(part)
    encoder = load_encoder(str(tiny_bert_dir), batch_size=64, show_progress=False)
    aps = []
    for subset, rows in pairs.items():
        at = table.rows(subset)
        ids = table.ids[at].astype(int)
        assert ids.tolist() == Limit(N).pick("twitterpara", subset, len(rows)).tolist()  # this subset's own sample
        chosen = [rows[i] for i in ids]
        a = encoder.encode([s1 for s1, _, _ in chosen])
        b = encoder.encode([s2 for _, s2, _ in chosen])
        cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        score = table.columns["score"][at]
        assert np.allclose(cosine, score, atol=1e-5)  # the stored scores are these pairs' cosines
        grade = np.array([g for _, _, g in chosen])
        keep = grade != 3  # the undecided middle grade is left out of AP (n = 3 of 6 annotators; expert 3)
        ap = average_precision_score((grade[keep] > 3).astype(int), score[keep])
        assert ap == pytest.approx(part.record["scores"][f"ap_{subset}"], abs=1e-12)
        assert spearmanr(score, grade).statistic == pytest.approx(part.record["scores"][f"spearman_{subset}"],
                                                                  abs=1e-12)
        aps.append(ap)
    assert np.mean(aps) == pytest.approx(part.record["main_score"], abs=1e-12)
    limit = part.record["task"]["limit"]
    assert (limit["n"], limit["items"], limit["of"]) == (N, 2 * N, sum(len(rows) for rows in pairs.values()))
