"""usebench/validity.py: the one rule for whether a stored result still holds, and for which results are seed
repeats of one measurement (issue 46)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from usebench import tasks  # noqa: F401  (enrols the adapters: the rule reads each task's version and metrics)
from usebench.registry import TASKS
from usebench.stats.seeds import MixedRunsError, aggregate
from usebench.store import DIGEST_KEY, StoredResult, make_record, record_digest, save_result
from usebench.store.validity import (expected_result, path_stale_reason, read_record, seed_mismatch, stale_reason)

STSB_METRICS = {m: 0.5 for m in TASKS.get("stsb").metric_names}


def _record(seed=0, version="1", sha="sha-stsb", scores=None, scorer=None, step_path=None, config=None):
    method = {"name": "simcse", "base_model": "minilm", "pooling": "cls"}
    if step_path is not None:
        method["step_path"] = step_path
    return make_record(run=f"simcse__minilm__abcd1234__s{seed}",
                       task={"name": "stsb", "split": "test", "version": version, "data_sha256": sha},
                       method=method, seed=seed, scores=dict(scores or STSB_METRICS), main_metric="spearman",
                       subsets={}, scorer=scorer or {"kind": "dense", "dtype": "float32", "pooling": "cls"},
                       timings={}, config=config or {"model": "minilm", "seed": seed})


def _resign(record):
    record[DIGEST_KEY] = record_digest(record)
    return record


def test_a_fresh_record_holds_and_each_way_of_going_stale_is_named():
    want = expected_result("stsb", "test", "sha-stsb", config={"model": "minilm", "seed": 0}, precision="float32")
    assert want.version == "1" and set(want.metrics) == set(STSB_METRICS)
    assert stale_reason(_record(), want) is None
    lacking = _record(scores={"spearman": 0.5})
    assert stale_reason(lacking, want) == "the stored result lacks pearson (task version 1)"
    assert stale_reason(_record(version="0"), want) == \
        "the task's protocol changed (task version 0 when stored, 1 now)"
    assert "the task's data changed (sha256 other..." in stale_reason(_record(sha="other"), want)
    assert stale_reason(_record(config={"model": "x", "seed": 0}), want) == \
        "the stored result was made with another configuration"
    bf16 = _record(scorer={"kind": "dense", "dtype": "bfloat16"})
    assert stale_reason(bf16, want) == "the stored result was computed in bfloat16, this run computes in float32"
    partial = _resign({**_record(), "task": {**_record()["task"], "partial": True}})
    assert "--allow-partial" in stale_reason(partial, want)
    assert stale_reason(partial, expected_result("stsb", "test", "sha-stsb", allow_partial=True)) is None
    assert stale_reason(None, want) == "no stored result"
    assert "is of stsb/test, not sickr/test" in stale_reason(_record(), expected_result("sickr", "test", None))


def test_invalid_records_never_hold():
    want = expected_result("stsb", "test", None)
    nan = _record()
    nan["main_score"] = nan["scores"]["spearman"] = float("nan")
    assert stale_reason(_resign(nan), want) == "the stored result has a non-finite main score (nan)"
    edited = _record()
    edited["scores"]["pearson"] = 0.9  # by hand, after it was written
    assert stale_reason(edited, want) == "the stored result was changed after it was written (its digest does not match)"
    main_off = _resign({**_record(), "main_score": 0.7})
    assert stale_reason(main_off, want) == "the stored result's main score is not its spearman score"
    for key, value in (("scores", [0.5]), ("seed", "0"), ("task", None), ("main_score", True)):
        broken = _resign({**_record(), key: value})
        assert stale_reason(broken, want).startswith(f"the stored result is malformed ({key!r}"), key
    old = {k: v for k, v in _record().items() if k != DIGEST_KEY}  # written before records carried a digest
    assert stale_reason(old, want) is None


def test_a_record_read_back_from_disk_keeps_its_digest(tmp_path):
    record = _record(scores={**STSB_METRICS, "pearson": np.float32(0.25)})  # numpy scalars, as scorers may return
    path = save_result(tmp_path, record)
    assert path_stale_reason(path, expected_result("stsb", "test", "sha-stsb")) is None
    path.write_text("{not json", encoding="utf-8")
    assert path_stale_reason(path, expected_result("stsb", "test", None)).startswith("the stored result is not valid "
                                                                                       "JSON")
    assert read_record(tmp_path / "absent.json") == (None, "no stored result")


def test_seeds_of_another_task_version_scorer_or_step_path_are_no_repeats(tmp_path):
    same = seed_mismatch(_record(0), _record(1))
    assert same is None
    assert seed_mismatch(_record(0), _record(1, version="2")) == "the task versions differ (1 vs 2)"
    other_scorer = _record(1, scorer={"kind": "dense", "dtype": "bfloat16", "pooling": "cls"})
    assert seed_mismatch(_record(0), other_scorer).startswith("the scorers differ (")
    fast, ref = [{"fast": True, "tf32": True}], [{"fast": False, "tf32": False}]
    assert seed_mismatch(_record(0, step_path=ref), _record(1, step_path=fast)) == \
        "the training step paths differ (reference path vs fast path under TF32)"
    assert seed_mismatch(_record(0), _record(1, step_path=fast)) is None  # not recorded: nothing to compare
    # issue 50: the precision a stage trained in is part of its path; a record written before `precision` existed
    # says it by its TF32 flag
    bf16 = [{"fast": True, "tf32": False, "precision": "bf16"}]
    assert seed_mismatch(_record(0, step_path=bf16), _record(1, step_path=[{"fast": True, "tf32": False}])) == \
        "the training step paths differ (fast path in bf16 vs fast path)"
    assert seed_mismatch(_record(0, step_path=fast), _record(1, step_path=[{**fast[0], "precision": "tf32"}])) is None
    results = [StoredResult(save_result(tmp_path, r), json.loads(json.dumps(r)))
               for r in (_record(0), _record(1, version="2"))]
    with pytest.raises(MixedRunsError, match=r"cannot average simcse on stsb/test: the task versions differ \(1 in "):
        aggregate(results, "spearman")


def test_usebench_aggregate_refuses_two_task_versions_in_one_cell(tmp_path):
    import usebench

    for seed, version in ((0, "1"), (1, "2")):
        save_result(tmp_path, _record(seed, version=version))
    with pytest.raises(MixedRunsError, match=r"the task versions differ \(1, 2\)"):
        usebench.aggregate(usebench.load_results(tmp_path))
