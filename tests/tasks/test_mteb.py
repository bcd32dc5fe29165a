"""mteb:<TaskName> tasks and the MTEB model wrapper: MTEB's own task classes and evaluators on our encoders, checked
against sklearn on the same vectors; names, groups, missing data and missing extras. Skipped without `mteb`."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.errors import BenchError, MissingDataError
from usebench.registry import TASKS
from usebench.tasks import expand_tasks

needs_mteb = pytest.mark.skipif(importlib.util.find_spec("mteb") is None,
                                reason="needs the `mteb` extra: pip install -e '.[mteb]'")
ASSETS = Path(__file__).resolve().parents[1] / "assets"
TP = "useb/data-eval/twitterpara"


@pytest.fixture(scope="module")
def tiny_scorer(tiny_bert_dir):
    from usebench.eval.encoder import load_encoder
    from usebench.eval.scorer import DenseScorer

    return DenseScorer(load_encoder(str(tiny_bert_dir), pooling="mean", show_progress=False, device="cpu"))


@pytest.fixture()
def tp_root(tmp_path):
    shutil.copytree(ASSETS / TP, tmp_path / TP)
    shutil.copy(ASSETS / "usebench-counts.json", tmp_path)  # the fixture's own counts (usebench/tasks/release.py)
    return tmp_path


def test_missing_extra_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mteb" else real(name, *a))
    TASKS._wrapped.pop("mteb:SciDocsRR", None)
    with pytest.raises(BenchError, match=r"pip install -e '\.\[mteb\]'"):
        expand_tasks("mteb:SciDocsRR")


@needs_mteb
def test_names_groups_and_did_you_mean_from_mtebs_registry():
    assert expand_tasks("mteb-denosent-rr")[-1] == "mteb:QuoraRetrieval" and len(expand_tasks("mteb-denosent-clf")) == 10
    with pytest.raises(BenchError, match="Did you mean: 'SciDocsRR'"):
        expand_tasks("mteb:SciDocs")
    task = TASKS.get("mteb:SciDocsRR")
    assert task.main_metric == "map_at_1000" and task.family == "rerank" and "mteb-" in task.version
    assert TASKS.get("mteb:Banking77Classification").family == "classification"
    assert TASKS.get("mteb:MassiveIntentClassification").splits == ("test", "dev")
    with pytest.raises(BenchError, match="serves"):
        TASKS.get("mteb:BUCC")  # bitext mining: not a type the wrapper serves


@needs_mteb
def test_hub_task_without_cache_is_missing_data_with_the_fill_command(tiny_scorer, tmp_path, monkeypatch):
    """Offline (HF_HUB_OFFLINE=1 in tests) and not cached: a MissingDataError, which `bench eval` turns into a skip."""
    from usebench.eval.evaluate import evaluate

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(MissingDataError, match=r"load_data\(\)"):
        evaluate("mteb:SciDocsRR", tiny_scorer, "test", tmp_path)


@needs_mteb
def test_bench_eval_skips_an_uncached_mteb_task_and_goes_on(tiny_bert_dir, tp_root, tmp_path, monkeypatch):
    """`mteb:TwitterURLCorpus` with MTEB's data not cached: skipped with the reason (the USEB file is not MTEB's
    dataset), the next task still evaluated, exit 0; an error only under --strict."""
    from click.testing import CliRunner

    from usebench.cli.main import main

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    args = ["eval", "--model", str(tiny_bert_dir), "--pooling", "mean", "--device", "cpu", "--data-root",
            str(tp_root), "--results-dir", str(tmp_path / "r"), "--tasks", "mteb:TwitterURLCorpus,twitterpara"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "mteb:TwitterURLCorpus (test): skipped: MTEB dataset of mteb:TwitterURLCorpus (the data root's USEB" \
        in result.output and "twitterpara (test): " in result.output
    assert CliRunner().invoke(main, [*args, "--strict", "--force"]).exit_code == 2


@needs_mteb
def test_useb_twitterpara_through_mtebs_evaluator_equals_sklearn_and_useb_ap(tiny_scorer, tp_root):
    """MTEB's PairClassification evaluator on the fixture's Twitter URL / PIT files, under names that do not claim
    MTEB's datasets: its cosine AP is sklearn's AP of the same cosines over the labelled pairs (the USEB AP)."""
    from usebench.eval.evaluate import evaluate

    useb = evaluate("twitterpara", tiny_scorer, "test", tp_root)
    data = TASKS.get("twitterpara").load("test", tp_root)
    assert expand_tasks("useb-mteb-evaluator") == ["mteb-evaluator:useb-twitterurl", "mteb-evaluator:useb-pit"]
    for key, ours in (("useb-twitterurl", "twitterurl"), ("useb-pit", "pit")):
        ev = evaluate(f"mteb-evaluator:{key}", tiny_scorer, "test", tp_root)
        ps = data[ours]
        keep = ps.label != -1
        cos = tiny_scorer.pairs(ps.s1, ps.s2)
        assert ev.main_metric == "max_ap" and ev.n_queries == int(keep.sum())
        assert ev.scores["cosine_ap"] == pytest.approx(average_precision_score(ps.label[keep], cos[keep]), abs=1e-9)
        assert ev.scores["cosine_ap"] == pytest.approx(useb.scores[f"ap_{ours}"], abs=1e-9)
        assert ev.scores["max_ap"] >= ev.scores["cosine_ap"]
        task = TASKS.get(f"mteb-evaluator:{key}")
        assert "local:" in task.version and "evaluator-of:" in task.version and task.group == "useb"
    with pytest.raises(BenchError, match="known: mteb-evaluator:useb-twitterurl"):
        TASKS.get("mteb-evaluator:useb-foo")


@needs_mteb
def test_mteb_twitter_tasks_are_never_built_from_the_useb_files(tiny_scorer, tp_root, tmp_path, monkeypatch):
    """MTEB's TwitterURLCorpus is 51,534 pairs, the USEB test file 9,334: with the USEB files present and MTEB's
    dataset not cached, `mteb:TwitterURLCorpus` is missing data (skipped) and names the USEB-data task instead of
    storing a USEB number under MTEB's name."""
    from usebench.eval.evaluate import evaluate

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for name, alt in (("TwitterURLCorpus", "useb-twitterurl"), ("TwitterSemEval2015", "useb-pit")):
        task = TASKS.get(f"mteb:{name}")
        assert task.local is None and task.files("test") == [] and "hf:mteb/" in task.version
        with pytest.raises(MissingDataError, match=f"(is|are) not this dataset.*mteb-evaluator:{alt}"):
            evaluate(f"mteb:{name}", tiny_scorer, "test", tp_root)


class _NoEncoding:
    """A scorer that fails if anything is encoded (the refusal must come first)."""

    name = "no-encoding"

    def __getattr__(self, item):
        raise AssertionError(f"the scorer was used ({item}) before the data was checked")


@needs_mteb
def test_senteval_sts_files_never_carry_mtebs_sts_names(tmp_path, monkeypatch):
    """SentEval's STS12 files hold MTEB's pairs and scores in another tokenisation (402,612 characters against the
    402,118 of MTEB's statistics): `mteb:STS12` is MTEB's dataset from the cache only, and MTEB's evaluator on the
    SentEval files is `mteb-evaluator:senteval-sts12`, whose content must still be SentEval's: the fixture's
    16-pair excerpt is refused before anything is encoded."""
    from usebench.errors import ReleaseMismatchError
    from usebench.eval.evaluate import evaluate

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    shutil.copytree(ASSETS / "sts", tmp_path / "sts")
    task = TASKS.get("mteb:STS12")
    assert task.local is None and "hf:mteb/sts12-sts" in task.version
    with pytest.raises(MissingDataError, match="not this dataset's text.*mteb-evaluator:senteval-sts12"):
        evaluate("mteb:STS12", _NoEncoding(), "test", tmp_path)
    evaluator = TASKS.get("mteb-evaluator:senteval-sts12")
    assert evaluator.files("test")[0].startswith("sts/senteval/STS12-en-test/") and evaluator.group == "sts"
    with pytest.raises(ReleaseMismatchError, match=r"mteb-evaluator:senteval-sts12 \(test\) refused.*content sha256"):
        evaluate("mteb-evaluator:senteval-sts12", _NoEncoding(), "test", tmp_path)
    assert expand_tasks("mteb-sts")[-1] == "mteb:SICK-R"


def test_statistics_comparison_is_exact():
    """Counts, unique texts, scores and character statistics must all be equal (no tolerance: a build whose
    characters differ is another text)."""
    from usebench.tasks.mteb_data import differences, sts_statistics

    s1, s2, scores = ["a b", "c d", "a b"], ["x", "y z", "x"], [0.0, 5.0, 2.5]
    mine = sts_statistics(s1, s2, scores)
    assert mine["num_samples"] == 3 and mine["unique_pairs"] == 2 and mine["text1_statistics"]["unique_texts"] == 2
    assert mine["number_of_characters"] == 9 + 5 and mine["label_statistics"]["avg_score"] == 2.5
    assert differences(mine, mine) == []
    other = {**mine, "num_samples": 4}
    assert differences(other, mine) == ["num_samples 3 here, 4 in MTEB's metadata"]
    longer = {**mine, "number_of_characters": 15, "text2_statistics": {**mine["text2_statistics"], "max_text_length": 6}}
    assert differences(longer, mine) == ["number_of_characters 14 here, 15 in MTEB's metadata",
                                         "text2.max_text_length 3 here, 6 in MTEB's metadata"]
    assert differences({"number_of_characters": 14}, mine) == [
        "MTEB publishes no pair count for this split, so a local build cannot be checked"]


@needs_mteb
def test_lexical_scorer_cannot_run_mteb_tasks(tp_root):
    from usebench.eval.bm25 import BM25Scorer
    from usebench.eval.evaluate import evaluate

    with pytest.raises(BenchError, match="transformer encoder"):
        evaluate("mteb-evaluator:useb-twitterurl", BM25Scorer(), "test", tp_root)


@needs_mteb
def test_wrapper_metadata_and_vectors(tiny_bert_dir):
    from mteb.models.model_meta import ScoringFunction

    from usebench.eval.encoder import load_encoder
    from usebench.eval.models import model_fingerprint
    from usebench.eval.mteb_model import load_mteb_model

    model = load_mteb_model(str(tiny_bert_dir), pooling="mean", device="cpu")
    meta = model.mteb_model_meta
    assert meta.revision == model_fingerprint(model.model.info) and meta.embed_dim == 32
    assert meta.similarity_fn_name is ScoringFunction.COSINE and meta.name.startswith("usebench/")
    texts = ["a tweet", "another tweet", "a tweet"]
    got = model.encode([{"text": texts[:2]}, {"text": texts[2:]}], task_metadata=None, hf_split="test", hf_subset="x")
    ref = load_encoder(str(tiny_bert_dir), pooling="mean", show_progress=False, device="cpu").encode(texts)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


@needs_mteb
def test_plain_mteb_evaluate_runs_our_checkpoint(tiny_bert_dir):
    """The other direction: `mteb.evaluate(load_mteb_model(path), tasks)` on MTEB's offline mock tasks, with the
    pair-classification AP checked against sklearn on the same vectors."""
    import mteb
    from mteb.mocks.mock_tasks.pair_classification import MockPairClassificationTask

    from usebench.eval.mteb_model import load_mteb_model

    model = load_mteb_model(str(tiny_bert_dir), pooling="mean", device="cpu")
    task = MockPairClassificationTask()
    result = mteb.evaluate(model, [task], cache=None, show_progress_bar=False)
    scores = result.task_results[0].scores["test"][0]
    fresh = MockPairClassificationTask()
    fresh.load_data()
    split = fresh.dataset["test"]
    row = split[0] if len(split) == 1 else split  # MTEB v1 stored a pair split as one row of lists
    a = model.model.encode(list(row["sentence1"]))
    b = model.model.encode(list(row["sentence2"]))
    cos = np.einsum("nd,nd->n", a, b) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert scores["cosine_ap"] == pytest.approx(average_precision_score(row["labels"], cos), abs=1e-6)


@needs_mteb
def test_training_on_an_mteb_task_needs_a_corpus_file(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("one\ntwo\n", encoding="utf-8")
    task = TASKS.get("mteb:SciDocsRR")
    with pytest.raises(BenchError, match="--eval-tasks"):
        task.train_corpus(tmp_path)
    assert task.train_corpus(tmp_path, corpus) == ["one", "two"]
