from __future__ import annotations

import json

import pytest

from benchmark.errors import BenchError
from benchmark.results import config_hash, iter_results, make_record, run_id, save_result, write_json_atomic


def _record(run="base__minilm__abcd1234__s0", task="stsb", value=0.5):
    return make_record(run=run, task={"name": task, "split": "test"}, method={"name": "base"}, seed=0,
                       scores={"spearman": value, "pearson": 0.4}, main_metric="spearman", subsets={},
                       scorer={"kind": "dense"}, timings={}, config={"model": "minilm"})


def test_config_hash_ignores_key_order_and_run_id_format():
    assert config_hash({"a": 1, "b": 2}) == config_hash({"b": 2, "a": 1})
    assert run_id("tsdae", "minilm", {"a": 1}, 3) == f"tsdae__minilm__{config_hash({'a': 1})[:8]}__s3"


def test_save_and_iter_round_trip(tmp_path):
    path = save_result(tmp_path, _record())
    assert path == tmp_path / "base__minilm__abcd1234__s0" / "stsb" / "test.json"
    (stored,) = list(iter_results(tmp_path))
    assert stored.task == "stsb" and stored.record["main_score"] == 0.5 and stored.record["config_hash"]


def test_main_metric_must_be_scored():
    with pytest.raises(BenchError, match="main metric"):
        make_record(run="r", task={"name": "t", "split": "test"}, method={}, seed=0, scores={"a": 1.0},
                    main_metric="b", subsets={}, scorer={}, timings={}, config={})


def test_atomic_write_leaves_old_file_when_serialisation_fails(tmp_path):
    target = tmp_path / "x.json"
    write_json_atomic(target, {"ok": 1})
    with pytest.raises(TypeError):
        write_json_atomic(target, {"bad": object()})
    assert json.loads(target.read_text()) == {"ok": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]  # no temp file left behind


def test_corrupt_result_is_named(tmp_path):
    bad = tmp_path / "run" / "stsb" / "test.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"schema_version": 1, ')
    with pytest.raises(BenchError, match=str(bad)):
        list(iter_results(tmp_path))
