"""usebench.mteb: USEB's tasks as MTEB task objects that MTEB's own runner evaluates (the `mteb` extra), with every
number equal to `bench eval`'s, MTEB's result files read back as usebench records, and the extra named when missing.
Without MTEB only the reader and the missing-extra message are tested."""
from __future__ import annotations

import importlib.util
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from usebench.errors import BenchError
from usebench.run.evaluation import EvalOptions, evaluate_model

ASSETS = Path(__file__).resolve().parents[1] / "assets"  # the fixture data root (its own usebench-counts.json)
USEB = ["askubuntu", "cqadupstack", "twitterpara", "scidocs"]
needs_mteb = pytest.mark.skipif(importlib.util.find_spec("mteb") is None,
                                reason="needs the `mteb` extra: pip install -e '.[mteb]'")


def bench_eval(model: str, tasks: list[str], split: str, root: Path, store: Path) -> dict[str, object]:
    """`bench eval --model MODEL --tasks ... --split ...` (its runner): the evaluations, per task."""
    out = evaluate_model(EvalOptions(model=model, pooling="mean", device="cpu", show_progress=False),
                         ",".join(tasks), split, root, store)
    return {ev.task: ev for ev in out.evaluations}


@pytest.fixture(scope="module")
def mteb_run(tiny_bert_dir, tmp_path_factory):
    """One MTEB run of the USEB benchmark on the fixtures, into a result cache of its own."""
    if importlib.util.find_spec("mteb") is None:
        pytest.skip("needs the `mteb` extra: pip install -e '.[mteb]'")
    import mteb

    import usebench.mteb
    from usebench.eval.mteb_model import load_mteb_model

    cache = tmp_path_factory.mktemp("mteb-cache")
    model = load_mteb_model(str(tiny_bert_dir), pooling="mean", device="cpu")
    result = mteb.evaluate(model, tasks=usebench.mteb.benchmark(data_root=ASSETS), cache=mteb.ResultCache(cache),
                           show_progress_bar=False)
    expected = bench_eval(str(tiny_bert_dir), USEB, "test", ASSETS, tmp_path_factory.mktemp("store"))
    return result, cache, expected, model.mteb_model_meta.name


@needs_mteb
def test_task_objects_carry_mtebs_metadata_and_the_data_roots_revision():
    import usebench.mteb
    from usebench.registry import TASKS

    tasks = usebench.mteb.tasks(data_root=ASSETS)
    assert [t.metadata.name for t in tasks] == ["USEB-AskUbuntu", "USEB-CQADupStack", "USEB-TwitterPara",
                                                 "USEB-SciDocs"]
    meta = {t.metadata.name: t.metadata for t in tasks}
    assert meta["USEB-TwitterPara"].main_score == "ap_avg" and meta["USEB-TwitterPara"].type == "PairClassification"
    assert meta["USEB-CQADupStack"].license == "apache-2.0" and meta["USEB-TwitterPara"].license == "multiple"
    assert all(m.eval_splits == ["test"] and m.eval_langs == ["eng-Latn"] and "TSDAE" in m.bibtex_citation
               for m in meta.values())
    # the revision is the content the task reads, as a usebench result records it (data_sha256)
    assert meta["USEB-SciDocs"].revision == TASKS.get("scidocs").data_sha256(ASSETS, "test")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dev = usebench.mteb.tasks(data_root=ASSETS, splits=("dev",))
    assert len(dev) == 3 and any("USEB-TwitterPara has no dev split" in str(w.message) for w in caught)
    bench = usebench.mteb.benchmark(data_root=ASSETS)
    assert bench.name == "USEB" and [t.metadata.name for t in bench][-1] == "USEB-Average"


@needs_mteb
def test_mtebs_runner_gives_bench_evals_numbers(mteb_run):
    from usebench.mteb import TASK_NAMES

    result, _, expected, _ = mteb_run
    by_name = {r.task_name: r.scores["test"][0] for r in result.task_results}
    for task in USEB:
        scores = by_name[TASK_NAMES[task]]
        assert {k: scores[k] for k in expected[task].scores} == expected[task].scores  # bit-equal
        assert scores["main_score"] == expected[task].main_score
        assert scores["usebench"]["data_sha256"] == expected[task].data_sha256
    mean = float(np.mean([expected[t].main_score for t in USEB]))
    assert by_name["USEB-Average"]["useb_avg"] == mean  # unrounded, as the reports' useb.avg computes it


@needs_mteb
def test_mtebs_result_files_read_back_as_usebench_results(mteb_run, tmp_path):
    import usebench.mteb
    from usebench.results import load_results

    _, cache, expected, name = mteb_run
    files = sorted(p.name for p in cache.rglob("USEB-*.json"))
    assert files == ["USEB-AskUbuntu.json", "USEB-Average.json", "USEB-CQADupStack.json", "USEB-SciDocs.json",
                     "USEB-TwitterPara.json"]  # written by MTEB itself
    records = usebench.mteb.read_results(cache)
    assert sorted(r["task"]["name"] for r in records) == sorted(USEB)
    for record in records:
        ev = expected[record["task"]["name"]]
        assert record["scores"] == ev.scores and record["subsets"] == ev.subsets  # unrounded, not MTEB's 6 decimals
        assert record["task"]["data_sha256"] == ev.data_sha256 and record["method"]["base_model"] == name
    usebench.mteb.import_results(cache, tmp_path / "store")
    usebench.mteb.import_results(cache, tmp_path / "store")  # the same results again: nothing to do
    frame = load_results(tmp_path / "store")
    main = frame[frame["main"] & (frame["subset"] == "")]
    assert dict(zip(main["task"], main["value"])) == {t: expected[t].main_score for t in USEB}


@needs_mteb
def test_the_dev_split_through_mteb(tiny_bert_dir, tmp_path):
    import mteb

    import usebench.mteb
    from usebench.eval.mteb_model import load_mteb_model

    model = load_mteb_model(str(tiny_bert_dir), pooling="mean", device="cpu")
    result = mteb.evaluate(model, tasks=usebench.mteb.tasks("askubuntu,USEB-SciDocs", data_root=ASSETS,
                                                            splits=("dev",)), cache=None, show_progress_bar=False)
    expected = bench_eval(str(tiny_bert_dir), ["askubuntu", "scidocs"], "dev", ASSETS, tmp_path)
    for r in result.task_results:
        scores = r.scores["dev"][0]
        task = scores["usebench"]["task"]
        assert {k: scores[k] for k in expected[task].scores} == expected[task].scores


@pytest.mark.slow
@needs_mteb
def test_real_twitterpara_through_mtebs_runner_equals_bench_eval(real_data, tiny_bert_dir, tmp_path):
    """The real release (22,184 sentences), a tiny model so that it stays short."""
    import mteb

    import usebench.mteb
    from usebench.eval.mteb_model import load_mteb_model

    model = load_mteb_model(str(tiny_bert_dir), pooling="mean", device="cpu")
    result = mteb.evaluate(model, tasks=usebench.mteb.tasks("twitterpara", data_root=real_data), cache=None,
                           show_progress_bar=False)
    expected = bench_eval(str(tiny_bert_dir), ["twitterpara"], "test", real_data, tmp_path)["twitterpara"]
    scores = result.task_results[0].scores["test"][0]
    assert {k: scores[k] for k in expected.scores} == expected.scores
    assert scores["usebench"]["release"]["partial"] == [] and scores["usebench"]["n_queries"] == 9334 + 838


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("USEBENCH_LONG_TESTS"), reason="minutes on a CPU: set USEBENCH_LONG_TESTS=1")
@needs_mteb
def test_real_twitterpara_with_minilm_through_mteb_and_the_evaluator(real_data, packaged_weights, tmp_path):
    """The numbers of docs/mteb.md and docs/st.md: the packaged MiniLM on the real TwitterPara, 74.51 (ap_avg)."""
    import mteb
    from sentence_transformers import SentenceTransformer

    import usebench.mteb
    from usebench.eval.mteb_model import load_mteb_model
    from usebench.st import USEBEvaluator

    expected = bench_eval("minilm", ["twitterpara"], "test", real_data, tmp_path)["twitterpara"]
    assert round(expected.main_score * 100, 2) == 74.51
    result = mteb.evaluate(load_mteb_model("minilm", device="cpu"), cache=None, show_progress_bar=False,
                           tasks=usebench.mteb.tasks("twitterpara", data_root=real_data))
    scores = result.task_results[0].scores["test"][0]
    assert {k: scores[k] for k in expected.scores} == expected.scores
    evaluator = USEBEvaluator("twitterpara", split="test", data_root=real_data)
    evaluator(SentenceTransformer(str(packaged_weights), device="cpu"))
    assert evaluator.last_evaluations[0].scores == expected.scores


@needs_mteb
def test_the_pages_example_runs(tiny_bert_dir, tmp_path, monkeypatch):
    """docs/mteb.md's example as a reader runs it (the fixtures as $BENCH_DATA, the tiny BERT for minilm): MTEB's
    files read in place by usebench.load_results, every main score `bench eval`'s."""
    import re

    from usebench.results import load_results

    page = (ASSETS.parents[1] / "docs" / "mteb.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"^```python\n(.*?)^```", page, re.S | re.M)
    assert 'load_mteb_model("minilm")' in code
    code = code.replace('load_mteb_model("minilm")', f"load_mteb_model({str(tiny_bert_dir)!r}, pooling='mean')")
    monkeypatch.setenv("BENCH_DATA", str(ASSETS))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/mteb.md", "exec"), namespace)
    assert sorted(p.name for p in (tmp_path / "mteb-cache").rglob("USEB-*.json"))[0] == "USEB-AskUbuntu.json"
    frame = load_results(tmp_path / "mteb-cache")
    main = frame[frame["main"] & (frame["subset"] == "")]
    expected = bench_eval(str(tiny_bert_dir), USEB, "test", ASSETS, tmp_path / "store")
    assert dict(zip(main["task"], main["value"])) == {t: expected[t].main_score for t in USEB}


def test_the_reader_needs_no_mteb_and_refuses_other_files(tmp_path):
    """An MTEB result file as MTEB 2 writes it (model_meta.json beside it), read without MTEB."""
    import usebench.mteb

    folder = tmp_path / "results" / "org__model" / "abc123"
    folder.mkdir(parents=True)
    (folder / "model_meta.json").write_text(json.dumps({"name": "org/model", "revision": "abc123"}))
    exact = {"scores": {"map": "0.1234567891234", "p@1": "0.5", "p@5": "0.2", "mrr": "0.75"}, "subsets": {}}
    entry = {"map": 0.123457, "main_score": 0.123457, "hf_subset": "default", "languages": ["eng-Latn"],
             "usebench": {"task": "askubuntu", "split": "test", "main_metric": "map", "data_sha256": "f" * 64,
                          "n_queries": 2, "partial": False, "exact": exact}}
    (folder / "USEB-AskUbuntu.json").write_text(json.dumps({"task_name": "USEB-AskUbuntu", "mteb_version": "2.26.24",
                                                            "dataset_revision": "f" * 64, "scores": {"test": [entry]}}))
    (folder / "SciDocsRR.json").write_text("{}")  # MTEB's own task: not USEB's, left alone
    (record,) = usebench.mteb.read_results(tmp_path)
    assert record["scores"]["map"] == 0.1234567891234 and record["main_score"] == 0.1234567891234
    assert record["config"]["revision"] == "abc123" and record["task"]["data_sha256"] == "f" * 64
    # read in place, without an import: from the cache, from its results/ folder, by the API and by `bench report`
    from click.testing import CliRunner

    from usebench.cli.main import main
    from usebench.results import load_results

    for where in (tmp_path, tmp_path / "results"):
        main_rows = (frame := load_results(where))[frame["main"]]
        assert list(main_rows["task"]) == ["askubuntu"] and list(main_rows["value"]) == [0.1234567891234]
    report = CliRunner().invoke(main, ["report", "--results-dir", str(tmp_path / "results"), "--out",
                                       str(tmp_path / "report"), "--format", "md", "--no-plots",
                                       "--table", "paper-table2"])
    assert report.exit_code == 0, report.output
    (row,) = [line for line in (tmp_path / "report" / "paper-table2.md").read_text().splitlines()
              if line.startswith("| org/model |")]
    assert "12.3" in row  # AskUbuntu's MAP x100, from MTEB's file
    del entry["usebench"]
    payload = {"task_name": "USEB-AskUbuntu", "scores": {"test": [entry]}}
    (folder / "USEB-AskUbuntu.json").write_text(json.dumps(payload))
    with pytest.raises(BenchError, match="not written by usebench's MTEB tasks"):
        usebench.mteb.read_results(tmp_path)


def test_the_extra_is_named_when_mteb_is_missing(monkeypatch):
    import usebench.mteb

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mteb" else real(name, *a))
    with pytest.raises(BenchError, match=r"`mteb` extra: pip install -e '\.\[mteb\]'"):
        usebench.mteb.tasks(data_root=ASSETS)
