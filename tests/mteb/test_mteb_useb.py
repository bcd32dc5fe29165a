"""usebench.mteb: USEB's tasks as MTEB task objects that MTEB's own runner evaluates (the `mteb` extra), with every
number equal to `bench eval`'s, MTEB's result files read back as usebench records and by MTEB's own loader, the checks
MTEB's repository runs on its tasks (tests/mteb/mteb_checks.py) passed, and the extra named when missing. Without MTEB
only the reader and the missing-extra message are tested."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from usebench.errors import BenchError
from usebench.plan.eval_options import EvalOptions
from usebench.run.evaluation import evaluate_model

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
    from usebench.mteb.metadata import MTEB_METRICS

    by_name = {r.task_name: r.scores["test"][0] for r in result.task_results}
    for task in USEB:
        scores = by_name[TASK_NAMES[task]]
        assert {k: scores[k] for k in expected[task].scores} == expected[task].scores  # bit-equal
        # MTEB's names beside the suite's, the same values, in the scores and in their parts
        names = MTEB_METRICS[task]
        assert set(names) & set(expected[task].scores)
        assert all(scores[names[k]] == v for k, v in expected[task].scores.items() if k in names)
        assert all(scores["subsets"][part][names[k]] == v for part, metrics in expected[task].subsets.items()
                   for k, v in metrics.items() if k in names)
        assert scores["main_score"] == expected[task].main_score
        assert scores["usebench"]["data_sha256"] == expected[task].data_sha256
    mean = float(np.mean([expected[t].main_score for t in USEB]))
    assert by_name["USEB-Average"]["useb_avg"] == mean  # unrounded, as the reports' useb.avg computes it


@needs_mteb
def test_mtebs_result_files_read_back_as_usebench_results(mteb_run, tmp_path):
    import usebench.mteb
    from usebench.api.results import load_results

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
        assert record["method"]["pooling"] == "mean"  # the model's settings, from model_meta.json's loader_kwargs
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
    """docs/mteb.md's examples as a reader runs them (the fixtures as $BENCH_DATA, the tiny BERT for minilm): MTEB's
    files read in place by usebench.load_results, every main score `bench eval`'s, and by MTEB's own loader."""
    from usebench.api.results import load_results

    page = (ASSETS.parents[1] / "docs" / "mteb.md").read_text(encoding="utf-8")
    code, loading = re.findall(r"^```python\n(.*?)^```", page, re.S | re.M)
    assert 'load_mteb_model("minilm")' in code and '"usebench/minilm"' in loading
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
    name = namespace["model"].mteb_model_meta.name
    exec(compile(loading.replace('"usebench/minilm"', repr(name)), "docs/mteb.md (loading)", "exec"), namespace)
    (model,) = namespace["minilm"].model_results
    assert model.model_name == name and len(model.task_results) == 5
    assert [m.model_name for m in namespace["everything"].model_results] == [name]


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
    from usebench.api.results import load_results

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


@needs_mteb
def test_metadata_passes_mtebs_metadata_test(tmp_path, monkeypatch, caplog):
    """MTEB's tests/test_tasks/test_metadata.py on the four tasks (after their statistics are computed, into a cache
    of the test's own) and on USEB-Average, which is built without MTEB's warning about its annotators."""
    import logging

    import usebench.mteb
    from tests.mteb.mteb_checks import metadata_problems

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    tasks = usebench.mteb.tasks(data_root=ASSETS)
    for task in tasks:
        task.calculate_descriptive_statistics()
        assert task.metadata.descriptive_stat_path.is_relative_to(tmp_path / "cache")  # never MTEB's package
        assert metadata_problems(task) == [], task.metadata.name
    with caplog.at_level(logging.WARNING):
        average = usebench.mteb.average(data_root=ASSETS)
    assert not [r for r in caplog.records if "annotations_creators" in r.getMessage()]
    assert metadata_problems(average) == [] and average.metadata.annotations_creators == "derived"
    # the average's window spans its parts': AskUbuntu's 2010 to SciDocs' 2020 release
    assert average.metadata.date == ("2010-01-01T00:00:00", "2020-04-15T00:00:00")
    assert {t.metadata.name: t.metadata.date[0] for t in tasks}["USEB-TwitterPara"] == "2013-05-13"


@needs_mteb
def test_bibtex_passes_mtebs_formatting_check():
    """MTEB's tests/test_validate_metadata/test_citation_formatting.py on the tasks, the average and the benchmark:
    several entries sorted by key, a blank line between two."""
    pytest.importorskip("bibtexparser", reason="MTEB's BibTeX check needs bibtexparser (the `test` extra)")
    import usebench.mteb
    from tests.mteb.mteb_checks import mteb_bibtex

    bench = usebench.mteb.benchmark(data_root=ASSETS)
    citations = {t.metadata.name: t.metadata.bibtex_citation for t in bench.tasks} | {bench.name: bench.citation}
    for name, citation in citations.items():
        assert mteb_bibtex(citation.strip()) == citation.strip(), name
    keys = re.findall(r"^@\w+\{([^,]+),", citations["USEB-TwitterPara"], re.M)
    assert keys == ["lan-etal-2017-continuously", "wang-etal-2021-tsdae-using", "xu-etal-2015-semeval"]


# What MTEB's quality checks find on the fixtures' statistics, each a property of the fixture data: SciDocs' papers
# are queries and candidates of several subtasks (each subtask's are its own, as MTEB counts a task's subsets apart,
# so a title shared by two subtasks is a duplicate), and one co-view query keeps no candidate with a title;
# CQADupStack's gaming query g5 has no duplicate.
FIXTURE_FINDINGS = {
    "USEB-AskUbuntu": set(), "USEB-TwitterPara": set(),
    "USEB-CQADupStack": {"zero_relevant_docs:relevant_docs_statistics"},
    "USEB-SciDocs": {"duplicate_text:documents_text_statistics", "duplicate_text:queries_text_statistics",
                     "zero_top_ranked:top_ranked_statistics"},
}


@needs_mteb
def test_descriptive_statistics_are_mtebs_schema_and_its_quality_checks_read_them(tmp_path, monkeypatch):
    """calculate_descriptive_statistics() returns MTEB's TypedDict of the task's type, counted as by hand from the
    fixture files, and MTEB's quality checks (tests/test_tasks/test_task_quality.py) find what the data holds."""
    from mteb.types.statistics import PairClassificationDescriptiveStatistics, RetrievalDescriptiveStatistics

    import usebench.mteb
    from tests.mteb.mteb_checks import quality_findings

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    stats = {t.metadata.name: t.calculate_descriptive_statistics() for t in usebench.mteb.tasks(data_root=ASSETS)}
    for name, by_split in stats.items():
        schema = PairClassificationDescriptiveStatistics if name == "USEB-TwitterPara" else RetrievalDescriptiveStatistics
        assert set(by_split["test"]) == set(schema.__annotations__), name
        assert quality_findings(by_split) == FIXTURE_FINDINGS[name], name
    # by hand from tests/assets: AskUbuntu test.txt has 2 queries with a similar id (2 + 1 of them), 20 candidates
    # each, 22 distinct; the two query titles have 31 and 35 characters
    ask = stats["USEB-AskUbuntu"]["test"]
    assert (ask["num_queries"], ask["num_documents"], ask["queries_text_statistics"]["total_text_length"]) == (2, 22, 66)
    assert ask["relevant_docs_statistics"]["num_relevant_docs"] == 3
    assert ask["top_ranked_statistics"]["num_top_ranked"] == 40
    # CQADupStack test: queries a1, a2 | g1, g4, g5; pools a3-a7 | g2, g3; duplicates 1 + 2 + 2 + 1 + 0, of which
    # g4 and g1 are queries, so not in the pool
    cqa = stats["USEB-CQADupStack"]["test"]
    assert (cqa["num_queries"], cqa["num_documents"], cqa["top_ranked_statistics"]) == (5, 7, None)
    relevant = cqa["relevant_docs_statistics"]
    assert (relevant["num_relevant_docs"], relevant["num_missing_corpus_ids"]) == (6, 2)
    pairs = stats["USEB-TwitterPara"]["test"]
    assert pairs["num_samples"] == 11 and pairs["labels_statistics"]["unique_labels"] == 2


@pytest.mark.slow
@needs_mteb
def test_real_twitterparas_statistics(real_data, tmp_path, monkeypatch):
    """The real release: 9,334 + 838 labelled pairs, 8,977 of them distinct (the Twitter URL test file repeats pairs,
    as MTEB's TwitterURLCorpus does: its only finding, as in MTEB's list of known issues), 1,821 + 175 paraphrases;
    counted with sets and awk from the files."""
    import usebench.mteb
    from tests.mteb.mteb_checks import quality_findings

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    (task,) = usebench.mteb.tasks("twitterpara", data_root=real_data)
    stats = task.calculate_descriptive_statistics()
    split = stats["test"]
    assert (split["num_samples"], split["unique_pairs"]) == (9334 + 838, 8977)
    assert split["labels_statistics"]["labels"] == {"1": {"count": 1821 + 175}, "0": {"count": 7513 + 663}}
    assert quality_findings(stats) == {"duplicate_pairs"}
    assert task.metadata.n_samples == {"test": 10172}


@needs_mteb
def test_mtebs_own_loader_finds_the_results(mteb_run, tiny_bert_dir, tmp_path):
    """MTEB's default ResultCache.load_results() and models=[name] find what mteb.evaluate wrote for a model loaded
    as its checkpoint declares it; another setting is an MTEB experiment, found through the model's ModelMeta."""
    import mteb

    import usebench.mteb
    from usebench.eval.mteb_model import load_mteb_model

    _, cache, expected, name = mteb_run
    for loaded in (mteb.ResultCache(cache).load_results(), mteb.ResultCache(cache).load_results(models=[name])):
        (model,) = loaded.model_results
        assert model.model_name == name and model.experiment_name is None
        scores = {r.task_name: r.get_score() for r in model.task_results}
        assert sorted(scores) == sorted([*usebench.mteb.TASK_NAMES.values(), "USEB-Average"])
        assert scores["USEB-AskUbuntu"] == round(expected["askubuntu"].main_score, 6)
    other = load_mteb_model(str(tiny_bert_dir), max_length=64, device="cpu")
    assert other.mteb_model_meta.experiment_kwargs == {"max_length": 64}
    own = mteb.ResultCache(tmp_path / "cache")
    mteb.evaluate(other, tasks=usebench.mteb.tasks("askubuntu", data_root=ASSETS), cache=own, show_progress_bar=False)
    assert own.load_results().model_results == []  # an experiment: MTEB's default leaves it out
    (model,) = own.load_results(models=[other.mteb_model_meta]).model_results
    assert model.experiment_name == "max_length_64" and model.task_results[0].task_name == "USEB-AskUbuntu"


@needs_mteb
def test_a_sentence_transformer_named_in_its_card_data_is_filed_under_that_name(tiny_bert_dir, tmp_path):
    """docs/mteb.md: a local SentenceTransformer handed to MTEB as it is gets its name and revision from its model
    card data (else no_model_name_available/no_revision_available)."""
    import mteb
    from sentence_transformers import SentenceTransformer

    import usebench.mteb

    model = SentenceTransformer(str(tiny_bert_dir), device="cpu")
    model.model_card_data.model_name, model.model_card_data.base_model_revision = "me/tiny", "v1"
    cache = mteb.ResultCache(tmp_path)
    mteb.evaluate(model, tasks=usebench.mteb.tasks("askubuntu", data_root=ASSETS), cache=cache,
                  show_progress_bar=False)
    (result,) = cache.load_results(models=["me/tiny"]).model_results
    assert (result.model_name, result.model_revision) == ("me/tiny", "v1")
