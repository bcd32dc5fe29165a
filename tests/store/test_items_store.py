"""The per-item outcomes file beside a result record (usebench/store.py, usebench/validity.py): written with the
record, named with its sha256 in the record's digest, and checked by the one validity rule."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from usebench import tasks  # noqa: F401  (enrols the adapters: the rule reads each task's version)
from usebench.store import records as store
from usebench.errors import BenchError
from usebench.eval.items import Recipe, pair_table
from usebench.stats.loading import NoItemsError, load_items
from usebench.store import (DIGEST_KEY, ITEMS_SUFFIX, StoredResult, items_path, make_record, record_digest,
                            result_path, save_result)
from usebench.store.validity import expected_result, invalid_reason, items_reason, path_stale_reason

WANT = expected_result("stsb", "test", "sha-stsb")


def _items(shift: float = 0.0) -> bytes:
    score = np.array([0.1, 0.4, 0.35, 0.8]) + shift
    return pair_table({"sts-test.csv": (score, np.array([0.0, 2.0, 1.0, 4.0]), None)},
                      {"spearman": Recipe("spearman", ("sts-test.csv",), "pool"),
                       "pearson": Recipe("pearson", ("sts-test.csv",), "pool")}).to_bytes()


def _record(items: bytes | None) -> dict:
    named = None if items is None else {"file": "test" + ITEMS_SUFFIX, "sha256": hashlib.sha256(items).hexdigest(),
                                        "n": 4, "bytes": len(items)}
    return make_record(run="base__minilm__abcd1234__s0",
                       task={"name": "stsb", "split": "test", "version": "1", "data_sha256": "sha-stsb"},
                       method={"name": "base"}, seed=0, scores={"spearman": 0.8, "pearson": 0.9},
                       main_metric="spearman", subsets={}, scorer={"kind": "dense", "dtype": "float32"}, timings={},
                       config={"model": "minilm"}, items=named)


def test_the_items_file_is_written_beside_the_record_and_its_hash_is_in_the_digest(tmp_path):
    data = _items()
    path = save_result(tmp_path, _record(data), data)
    assert items_path(path) == path.with_name("test.items.npz") and items_path(path).read_bytes() == data
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["items"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert path_stale_reason(path, WANT) is None
    edited = {**record, "items": {**record["items"], "sha256": "0" * 64}}
    assert "its digest does not match" in invalid_reason(edited)  # the hash is part of the digest
    table = load_items(StoredResult(path, record))
    assert table.keys() == [("sts-test.csv", str(i)) for i in range(4)]


def test_an_items_file_that_is_not_the_one_the_record_names_makes_the_result_stale(tmp_path):
    data = _items()
    path = save_result(tmp_path, _record(data), data)
    items_path(path).write_bytes(_items(shift=0.01))
    reason = path_stale_reason(path, WANT)
    assert reason.startswith("its per-item outcomes file test.items.npz is not the one the record names (sha256 ")
    with pytest.raises(NoItemsError, match="is not the one the record names.*--reevaluate TASK"):
        load_items(StoredResult(path, json.loads(path.read_text(encoding="utf-8"))))
    items_path(path).unlink()
    assert path_stale_reason(path, WANT) == "its per-item outcomes file test.items.npz is missing"


def test_a_crash_between_the_items_and_the_record_leaves_an_older_record_that_no_longer_holds(tmp_path, monkeypatch):
    old = _items()
    path = save_result(tmp_path, _record(old), old)
    new = _items(shift=0.02)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed before the record was written")

    monkeypatch.setattr(store, "write_json_atomic", crash)
    with pytest.raises(KeyboardInterrupt):
        save_result(tmp_path, _record(new), new)
    monkeypatch.undo()
    assert items_path(path).read_bytes() == new  # the items were written, the record was not
    assert "is not the one the record names" in path_stale_reason(path, WANT)  # so the result is scored again


def test_records_without_items_stay_valid_and_say_what_adds_them(tmp_path):
    path = save_result(tmp_path, _record(None))
    record = json.loads(path.read_text(encoding="utf-8"))
    assert "items" not in record and path_stale_reason(path, WANT) is None and items_reason(path, record) is None
    with pytest.raises(NoItemsError, match=r"stored without per-item outcomes .*`bench run \.\.\. --reevaluate TASK`"):
        load_items(StoredResult(path, record))


def test_a_record_is_saved_only_with_the_items_it_names(tmp_path):
    data = _items()
    with pytest.raises(BenchError, match="names a per-item file exactly when its bytes are given"):
        save_result(tmp_path, _record(data))
    with pytest.raises(BenchError, match="are not the file the record names"):
        save_result(tmp_path, _record(data), _items(shift=0.5))
    assert not list(tmp_path.rglob("*.json")) and not list(tmp_path.rglob("*.npz"))
    malformed = {**_record(None), "items": "test.items.npz"}
    malformed[DIGEST_KEY] = record_digest(malformed)
    assert "'items' is not an object naming a file and its sha256" in invalid_reason(malformed)


def test_a_result_stored_again_without_items_drops_the_older_items_file(tmp_path):
    data = _items()
    save_result(tmp_path, _record(data), data)
    path = save_result(tmp_path, _record(None))
    assert path == result_path(tmp_path, "base__minilm__abcd1234__s0", "stsb", "test")
    assert not items_path(path).exists()
