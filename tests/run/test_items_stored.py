"""Per-item outcomes through the real writers (issue 54): a unit of `bench run` and a `bench eval` baseline store
them beside each result; a result stored before them stays valid and is reused, says what adds its items, and
`bench run ... --reevaluate TASK` adds them from the unit's checkpoint, nothing retrained."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.methods.helpers import one_thread
from tests.run.test_stale_results import _opts, weights
from usebench.eval.items import metric_value
from usebench.plan.specs import RunOptions
from usebench.plan.eval_options import EvalOptions
from usebench.run.evaluation import evaluate_model
from usebench.run.grid import run_benchmark
from usebench.stats.loading import NoItemsError, load_items
from usebench.store import DIGEST_KEY, StoredResult, items_path, record_digest

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _stored(path: Path) -> StoredResult:
    return StoredResult(path, json.loads(path.read_text(encoding="utf-8")))


def _as_before_items(path: Path) -> None:
    """Make ``path`` a result as every store held them before per-item outcomes: no file, no ``items`` key."""
    record = json.loads(path.read_text(encoding="utf-8"))
    record.pop("items")
    record[DIGEST_KEY] = record_digest(record)
    path.write_text(json.dumps(record), encoding="utf-8")
    items_path(path).unlink()


def test_reevaluate_adds_the_items_of_a_result_stored_without_them(tiny_bert_dir, corpus_file, tmp_path, capsys):
    results = tmp_path / "results"
    opts = _opts(tiny_bert_dir, corpus_file, eval_tasks="stsb")
    with one_thread():
        run_benchmark(opts, ASSETS, results)
        (run,) = [p for p in results.iterdir() if p.name.startswith("simcse")]
        path = run / "stsb" / "test.json"
        assert items_path(path).is_file()
        trained = weights(results)
        _as_before_items(path)
        stamp = path.stat().st_mtime_ns
        run_benchmark(opts, ASSETS, results)  # still a valid result: reused, not scored again
        assert path.stat().st_mtime_ns == stamp
        with pytest.raises(NoItemsError, match=r"stored without per-item outcomes.*--reevaluate TASK"):
            load_items(_stored(path))
        capsys.readouterr()
        run_benchmark(RunOptions(**{**opts.__dict__, "reevaluate": ("stsb",)}), ASSETS, results)
    assert "stsb/test removed; it is scored again from the checkpoint" in capsys.readouterr().err
    assert weights(results) == trained  # nothing retrained
    stored = _stored(path)
    table = load_items(stored)
    assert metric_value(table, stored.record["main_metric"]) == stored.record["main_score"]
    assert stored.record["items"]["n"] == len(table) == stored.record["task"]["n_queries"]


def test_a_bench_eval_baseline_stores_items(tiny_bert_dir, tmp_path):
    outcome = evaluate_model(EvalOptions(model=str(tiny_bert_dir)), "twitterpara,stsb", "test", ASSETS,
                             tmp_path / "r")
    for task in ("twitterpara", "stsb"):
        stored = _stored(tmp_path / "r" / outcome.run_id / task / "test.json")
        table = load_items(stored)
        assert {m: metric_value(table, m) for m in stored.record["scores"]} == stored.record["scores"]
    again = evaluate_model(EvalOptions(model=str(tiny_bert_dir)), "twitterpara", "test", ASSETS, tmp_path / "r")
    assert again.reused == ["twitterpara"]  # its items hold: the result is reused
