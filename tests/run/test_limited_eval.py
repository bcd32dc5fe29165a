"""A quick evaluation (issue 56, item 3): `bench eval --limit N` and ``usebench.evaluate(..., limit=N)`` score a fixed,
seeded subsample of each subset's items, record it (distinct from --allow-partial's "not the release"), file it
under its own run id, and the one validity rule never lets a limited result stand for a full one or the other way
round; it is shown with its interval."""
from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import usebench
from usebench.cli.main import main
from usebench.errors import BenchValueError
from usebench.eval.items import items_used
from usebench.eval.subsample import Limit
from usebench.plan.eval_options import EvalOptions
from usebench.run.evaluation import evaluate_model
from usebench.stats.loading import load_items, result_intervals
from usebench.store import StoredResult, items_path, result_path
from usebench.store.validity import expected_result, path_stale_reason

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _eval(model: Path, store: Path, limit: int | None = None, seed: int = 0, tasks: str = "twitterpara"):
    return evaluate_model(EvalOptions(model=str(model), limit=limit, limit_seed=seed), tasks, "test", ASSETS, store)


def _stored(store: Path, run: str, task: str = "twitterpara") -> StoredResult:
    path = result_path(store, run, task, "test")
    return StoredResult(path, json.loads(path.read_text(encoding="utf-8")))


def test_a_limited_result_is_filed_apart_and_never_reused_as_a_full_one(tiny_bert_dir, tmp_path):
    store = tmp_path / "r"
    limited = _eval(tiny_bert_dir, store, limit=3)
    assert limited.evaluations and "-limit3__" in limited.run_id
    full = _eval(tiny_bert_dir, store)
    assert full.evaluations and not full.reused  # evaluated in full, the limited result did not satisfy it
    assert full.run_id != limited.run_id and "limit" not in full.run_id
    again = _eval(tiny_bert_dir, store, limit=3)
    assert again.reused == ["twitterpara"] and again.run_id == limited.run_id  # the same subsample: reused
    other = _eval(tiny_bert_dir, store, limit=3, seed=1)
    assert other.evaluations and other.run_id != limited.run_id  # another subsample is another result
    record = _stored(store, limited.run_id).record
    assert record["task"]["limit"]["n"] == 3 and record["task"]["partial"] is False  # not --allow-partial's flag
    assert record["task"]["n_queries"] < _stored(store, full.run_id).record["task"]["n_queries"]
    assert "limit" not in _stored(store, full.run_id).record["task"]


def test_the_one_rule_refuses_a_limited_result_for_a_full_one_and_back(tiny_bert_dir, tmp_path):
    """Wherever a result is asked for (a launcher's "already done", bench eval, the API, bench check), one at the
    path of a full result that is over a subsample does not hold, and a full one does not hold for a subsample."""
    store = tmp_path / "r"
    limited, full = _eval(tiny_bert_dir, store, limit=3), _eval(tiny_bert_dir, store)
    limited_path = result_path(store, limited.run_id, "twitterpara", "test")
    full_path = result_path(store, full.run_id, "twitterpara", "test")
    sha = json.loads(full_path.read_text())["task"]["data_sha256"]
    as_full = expected_result("twitterpara", "test", sha)
    as_limited = expected_result("twitterpara", "test", sha, limit=Limit(3).config())
    assert path_stale_reason(full_path, as_full) is None
    assert path_stale_reason(limited_path, as_limited) is None
    assert "is over a --limit subsample (3 per subset, seed 0), this evaluation is over every item" in \
        path_stale_reason(limited_path, as_full)
    assert "is over every item, this evaluation is over a --limit subsample" in path_stale_reason(full_path, as_limited)
    other_seed = expected_result("twitterpara", "test", sha, limit=Limit(3, seed=1).config())
    assert "(3 per subset, seed 1)" in path_stale_reason(limited_path, other_seed)
    # a limited result copied over the full one's place (by hand, or a bug) is evaluated again, never reused
    shutil.copy(limited_path, full_path)
    shutil.copy(items_path(limited_path), items_path(full_path))
    assert "is over a --limit subsample" in path_stale_reason(full_path, as_full)


def test_the_items_and_interval_are_over_the_subsample(tiny_bert_dir, tmp_path):
    store = tmp_path / "r"
    limited, full = _eval(tiny_bert_dir, store, limit=3), _eval(tiny_bert_dir, store)
    part, whole = _stored(store, limited.run_id), _stored(store, full.run_id)
    table = load_items(part)
    assert len(table) == part.record["task"]["limit"]["items"] == 6  # 3 of each of the two corpora
    assert {k for k in table.keys()} < set(load_items(whole).keys())
    ci = result_intervals(part, ["ap_avg"])["ap_avg"]
    assert ci.low <= ci.high and ci.estimate == part.record["scores"]["ap_avg"]
    assert ci.n_items == items_used(table, "ap_avg") < result_intervals(whole, ["ap_avg"])["ap_avg"].n_items


def test_bench_eval_limit_prints_the_interval_and_files_apart(tiny_bert_dir, tmp_path):
    store = tmp_path / "r"
    args = ["eval", "--model", str(tiny_bert_dir), "--tasks", "twitterpara", "--data-root", str(ASSETS),
            "--results-dir", str(store)]
    limited = CliRunner().invoke(main, [*args, "--limit", "3"])
    assert limited.exit_code == 0, limited.output
    assert "-limit3__" in limited.output and "4 pairs (--limit 3 per subset, seed 0: 6 of 13 items)" in limited.output
    found = re.search(r"ap_avg (-?\d+\.\d+) \[(-?\d+\.\d+), (-?\d+\.\d+)\]", limited.output)
    assert float(found[2]) <= float(found[3]) and "limited: a seeded subsample of at most 3 items per subset" in limited.output
    full = CliRunner().invoke(main, args)
    assert full.exit_code == 0 and "1 evaluated, 0 reused" in full.output and "limited" not in full.output


@pytest.mark.parametrize("extra, words", [
    (["--limit", "0"], "0 is not in the range x>=1"),
    (["--limit", "3", "--limit-seed", "-1"], "-1 is not in the range x>=0"),
    (["--limit", "3", "--tasks", "bm25+askubuntu"], "--limit is not offered for bm25+askubuntu"),
    (["--limit", "3", "--model", "bm25"], "--limit is not offered for bm25: BM25 takes its statistics"),
])
def test_a_limit_that_cannot_be_kept_is_refused_before_any_work(tiny_bert_dir, tmp_path, extra, words):
    store = tmp_path / "r"
    args = ["eval", "--model", str(tiny_bert_dir), "--tasks", "twitterpara", "--data-root", str(ASSETS),
            "--results-dir", str(store), *extra]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0 and words in result.output, result.output
    assert not store.exists() or not any(store.rglob("*.json"))


def test_usebench_evaluate_limit_returns_the_intervals(tiny_bert_dir, tmp_path):
    frame = usebench.evaluate(str(tiny_bert_dir), "twitterpara,stsb", data_root=ASSETS, results_dir=tmp_path / "r",
                              limit=3, show_progress=False)
    top = frame[frame["subset"] == ""]
    assert top[["ci_low", "ci_high"]].notna().all().all()
    assert (top["ci_low"] <= top["ci_high"]).all()  # (a percentile interval need not hold the point estimate)
    assert frame[frame["subset"] != ""]["ci_low"].isna().all()
    assert frame.attrs["limit"]["twitterpara"]["n"] == 3 and set(frame["run_id"].str.contains("-limit3__")) == {True}
    full = usebench.evaluate(str(tiny_bert_dir), "twitterpara", data_root=ASSETS, results_dir=tmp_path / "r",
                             show_progress=False)
    assert "ci_low" not in full.columns and full.attrs["reused"] == []  # the limited one is no full result
    fn_frame = usebench.evaluate(lambda texts: [[len(t), 1.0 + t.count(" ")] for t in texts], "stsb",
                                 data_root=ASSETS, name="lengths", limit=3, show_progress=False)
    assert fn_frame["run_id"].iloc[0].startswith("lengths__lengths-limit3__")
    assert not math.isnan(fn_frame.loc[fn_frame["main"], "ci_low"].iloc[0])


@pytest.mark.parametrize("kwargs, words", [({"limit": 0}, "limit must be a positive integer"),
                                           ({"limit": True}, "limit must be a positive integer"),
                                           ({"limit": 3, "limit_seed": -2}, "limit_seed must be an integer >= 0"),
                                           ({"limit": 3, "tasks": "bm25+askubuntu"}, "limit= is not offered")])
def test_usebench_evaluate_refuses_a_bad_limit_in_pythons_words(tiny_bert_dir, kwargs, words):
    tasks = kwargs.pop("tasks", "twitterpara")
    with pytest.raises((BenchValueError, TypeError), match=words):
        usebench.evaluate(str(tiny_bert_dir), tasks, data_root=ASSETS, show_progress=False, **kwargs)
