"""The store's readers (issue 57, item 7): a stage log's lines and a result record, read in one place each, with
the error naming the file."""
from __future__ import annotations

import pytest

from usebench.errors import BenchError
from usebench.store import make_record, read_json_lines, read_record, save_result


def test_a_log_without_a_file_is_empty_and_a_half_written_last_line_is_skipped(tmp_path):
    log = tmp_path / "log.jsonl"
    assert read_json_lines(log) == []
    log.write_text('{"step": 10, "loss": 1.5}\n\n{"step": 20, "loss": 1.25}\n{"step": 3', encoding="utf-8")
    assert read_json_lines(log) == [{"step": 10, "loss": 1.5}, {"step": 20, "loss": 1.25}]


def test_a_bad_line_before_the_last_is_named_with_its_number(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text('{"step": 10}\nnot json\n{"step": 20}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"log.jsonl:2: not a JSON line"):
        read_json_lines(log)


def test_a_record_reads_back_and_a_corrupt_or_foreign_file_is_named(tmp_path):
    record = make_record(run="base__minilm__abcd1234__s0", task={"name": "stsb", "split": "test"},
                         method={"name": "base"}, seed=0, scores={"spearman": 0.5}, main_metric="spearman",
                         subsets={}, scorer={"kind": "dense"}, timings={}, config={"model": "minilm"})
    path = save_result(tmp_path, record)
    assert read_record(path)["scores"] == {"spearman": 0.5}
    path.write_text('{"schema_version": 1,\n "scores": ', encoding="utf-8")
    with pytest.raises(BenchError, match=r"test.json:2: corrupt result file"):
        read_record(path)
    path.write_text('{"model": "not ours"}', encoding="utf-8")
    with pytest.raises(BenchError, match="not a usebench result"):
        read_record(path)
