from __future__ import annotations

import json

import pytest

from usebench.errors import BenchError
from usebench.store import (config_hash, iter_results, make_record, read_json, run_id, save_result, stored_form,
                            write_json_atomic)


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


# --- issue 14: no non-finite main score is ever stored; files honour the umask ---------------------------------

@pytest.mark.parametrize("value", [float("nan"), float("inf"), None, "0.5"])
def test_a_non_finite_main_score_is_never_made_or_saved(tmp_path, value):
    from usebench.errors import NonFiniteScoreError

    with pytest.raises(NonFiniteScoreError, match="stsb .test.: main score spearman = .* is not a finite number"):
        _record(value=value)
    record = _record()
    record["main_score"] = value  # a record built elsewhere, bypassing make_record
    with pytest.raises(NonFiniteScoreError):
        save_result(tmp_path, record)
    assert not list(tmp_path.rglob("*.json"))


def test_a_stored_nan_result_is_refused_when_read(tmp_path):
    path = save_result(tmp_path, _record())
    path.write_text(path.read_text().replace('"main_score": 0.5', '"main_score": NaN'))
    with pytest.raises(BenchError, match=f"{path}: stored main score nan is not a finite number"):
        list(iter_results(tmp_path))


@pytest.fixture()
def group_umask():
    import os

    old = os.umask(0o002)  # a shared results store: group members may read and write
    yield 0o002
    os.umask(old)


def test_results_and_json_files_honour_the_umask(tmp_path, group_umask):
    path = save_result(tmp_path, _record())
    assert path.stat().st_mode & 0o777 == 0o664  # mkstemp alone gives 0o600
    assert write_json_atomic(tmp_path / "config.json", {"a": 1}).stat().st_mode & 0o777 == 0o664


def test_embedding_cache_and_checksum_store_honour_the_umask(tmp_path, group_umask):
    import numpy as np

    from usebench.data.sources import ChecksumStore
    from usebench.eval.cache import EmbeddingCache

    EmbeddingCache(tmp_path / "cache", "k").put_many(["a"], np.zeros((1, 2), np.float32))
    (shard,) = (tmp_path / "cache" / "k").glob("shard-*.npz")
    assert shard.stat().st_mode & 0o777 == 0o664
    store = ChecksumStore(tmp_path)
    store.record("c", "import", "src", {"f": "0" * 64})
    assert store.path.stat().st_mode & 0o777 == 0o664


def test_check_writable_names_the_folder_and_the_option(tmp_path):
    from usebench.store import check_writable

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(BenchError, match=f"results directory {blocker}/r is not writable .* --results-dir"):
        check_writable(blocker / "r", "results directory", "--results-dir")
    assert check_writable(tmp_path / "new" / "deep", "x", "--x") == tmp_path / "new" / "deep"
    assert not (tmp_path / "new").exists()  # checking creates nothing


def test_read_json_gives_the_default_for_a_missing_empty_or_half_written_file(tmp_path):
    """One tolerant reader for the files a reader may do without: no file, an empty one, one cut mid-write (a
    writer killed before its rename, or not atomic), one that is not UTF-8, a folder where the file should be."""
    full = write_json_atomic(tmp_path / "full.json", {"attempts": [1, 2]})
    assert read_json(full) == {"attempts": [1, 2]} and read_json(str(full), {}) == {"attempts": [1, 2]}
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "half.json").write_text(full.read_text()[:12])
    (tmp_path / "latin1.json").write_bytes(b'{"a": "\xe9"}')
    (tmp_path / "folder.json").mkdir()
    for name in ("missing.json", "empty.json", "half.json", "latin1.json", "folder.json"):
        assert read_json(tmp_path / name) is None, name
        assert read_json(tmp_path / name, default={}) == {}, name
    (tmp_path / "null.json").write_text("null")  # valid JSON is returned as it is, even when it is not an object
    assert read_json(tmp_path / "null.json", default={}) is None


def test_stored_form_is_what_reading_the_written_file_back_gives(tmp_path):
    """What a caller keeps of a record it stored equals the file's contents: keys sorted, numpy values as JSON."""
    import numpy as np

    record = {"b": np.float32(0.25), "a": {"d": np.int64(3), "c": (1, 2)}, "path": tmp_path}
    kept = stored_form(record)
    assert kept == read_json(write_json_atomic(tmp_path / "r.json", record))
    assert list(kept) == ["a", "b", "path"] and list(kept["a"]) == ["c", "d"] and kept["a"]["c"] == [1, 2]
    assert type(kept["b"]) is float and type(kept["a"]["d"]) is int
