"""What a results store is (issue 53, item 1): a folder with the marker at its root. A store nested in another
(the committed results/laptop and results/reference inside the default store results/) is never read as the outer
store's results, and no default command writes into a committed store."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.errors import BenchError
from usebench.store import (STORE_MARKER, claim_store, committed_store, iter_results, make_record, nested_stores,
                            save_result, store_marker, write_json_atomic)

REPO = Path(__file__).resolve().parents[2]


def committed_results(dest: Path) -> Path:
    """The repository's results/ as a fresh clone has it (only the committed files), copied under ``dest``."""
    files = subprocess.run(["git", "ls-files", "results"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    assert files, "git ls-files results listed nothing"
    for name in files:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, dest / name)
    return dest / "results"


def _record(run: str = "base__minilm__abcd1234__s0") -> dict:
    return make_record(run=run, task={"name": "stsb", "split": "test"}, method={"name": "base"}, seed=0,
                       scores={"spearman": 0.5}, main_metric="spearman", subsets={}, scorer={"kind": "dense"},
                       timings={}, config={"model": "minilm"})


def test_the_committed_stores_carry_a_committed_marker():
    for name in ("laptop", "reference"):
        marker = store_marker(REPO / "results" / name)
        assert marker is not None and marker["committed"] is True and marker["about"], name


def test_a_fresh_clones_default_store_reads_without_its_nested_stores(tmp_path):
    """Before the marker, iter_results read results/laptop/<run>/config.json as a result and stopped."""
    results = committed_results(tmp_path)
    assert nested_stores(results) == {"laptop", "reference"}
    assert list(iter_results(results)) == []
    save_result(results, _record())  # the user's own result beside the committed stores
    assert [r.record["run_id"] for r in iter_results(results)] == ["base__minilm__abcd1234__s0"]
    laptop = list(iter_results(results / "laptop"))
    assert len(laptop) > 100 and all(r.path.is_relative_to(results / "laptop") for r in laptop)


def test_load_results_and_bench_report_on_a_fresh_clone(tmp_path, monkeypatch):
    import usebench

    results = committed_results(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.warns(UserWarning, match="no results under"):
        assert usebench.load_results("results/").empty
    empty = CliRunner().invoke(main, ["report"])
    assert empty.exit_code == 2 and "not a usebench result" not in empty.output
    assert "results/laptop" in empty.output  # the empty default store points at the committed ones
    save_result(results, _record())
    frame = usebench.load_results("results/")
    assert set(frame["run_id"]) == {"base__minilm__abcd1234__s0"}
    for args in (["report"], ["report", "--table", "sts-table"]):
        out = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "reports")])
        assert out.exit_code == 0, out.output


def test_a_store_without_its_marker_inside_another_is_named(tmp_path):
    """A nested store written before markers existed: the error says what it is and how to mark it."""
    save_result(tmp_path / "old", _record())
    write_json_atomic(tmp_path / "old" / "base__minilm__abcd1234__s0" / "config.json", {"run_id": "x"})
    with pytest.raises(BenchError, match=f"looks like a results store of its own.*{STORE_MARKER}"):
        list(iter_results(tmp_path))
    write_json_atomic(tmp_path / "old" / STORE_MARKER, {"usebench_store": 1, "committed": False})
    assert list(iter_results(tmp_path)) == []


def test_no_default_write_into_a_committed_store(tmp_path):
    results = committed_results(tmp_path)
    laptop = results / "laptop"
    assert committed_store(laptop / "results") == laptop.resolve()
    for target in (laptop, laptop / "results"):  # the store itself, or `results/` under it (a cwd inside it)
        with pytest.raises(BenchError, match="committed store .* does not write into it by default"):
            claim_store(target, named=False, command="bench run")
    assert claim_store(laptop, named=True, command="bench run") == laptop  # named with --results-dir
    assert store_marker(laptop)["committed"] is True  # its marker is kept
    mine = claim_store(results, named=False, command="bench run")  # the default store is the user's
    assert store_marker(mine) == {"usebench_store": 1, "committed": False, "about": "a results store written by "
                                  "usebench"}


def test_bench_eval_from_inside_a_committed_store_refuses_before_any_work(tmp_path, monkeypatch):
    laptop = committed_results(tmp_path) / "laptop"
    before = sorted(p.relative_to(laptop) for p in laptop.rglob("*"))
    monkeypatch.chdir(laptop)
    monkeypatch.delenv("BENCH_RESULTS", raising=False)
    out = CliRunner().invoke(main, ["eval", "--model", "bm25", "--tasks", "twitterpara",
                                    "--data-root", str(tmp_path)])
    assert out.exit_code == 2 and "committed store" in out.output, out.output
    assert sorted(p.relative_to(laptop) for p in laptop.rglob("*")) == before


def test_the_marker_format_is_json_with_its_version():
    for name in ("laptop", "reference"):
        payload = json.loads((REPO / "results" / name / STORE_MARKER).read_text(encoding="utf-8"))
        assert payload["usebench_store"] == 1
