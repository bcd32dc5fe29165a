"""BEIR's CQADupStack: 12 forum tasks in BEIR's exact layout, their average, the release counts (thesis Table 4.5),
and `bench data download beir-cqadupstack` from a file:// mirror holding BEIR's archive layout."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from usebench import tasks  # noqa: F401
from usebench.data.sources import load_manifest
from usebench.errors import ReleaseMismatchError
from usebench.eval.evaluate import evaluate
from usebench.registry import TASKS
from usebench.tasks.beir import MEASURES, run_chunks
from usebench.tasks.beir_cqadupstack import FORUM_TASKS, FORUMS, RELEASE_DOCUMENTS, RELEASE_QUERIES
from tests.data.data_fakes import unpinned, write_archive

ASSETS = Path(__file__).resolve().parents[1] / "assets"


class WordOverlap:
    """A deterministic dense stand-in: bag-of-words vectors over a fixed vocabulary, cosine search."""

    name = "overlap"

    def prepare(self, texts):
        vocab = sorted({w for t in texts for w in t.lower().split()})
        self.index = {w: i for i, w in enumerate(vocab)}

    def _vec(self, texts):
        m = np.zeros((len(texts), len(self.index)))
        for r, t in enumerate(texts):
            for w in t.lower().split():
                m[r, self.index[w]] += 1
        return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)

    def search(self, queries, corpus, k):
        sims = self._vec(queries) @ self._vec(corpus).T
        order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(sims, order, 1), order

    def describe(self):
        return {"kind": "dense"}


def test_the_release_counts_sum_to_table_4_5():
    assert len(FORUMS) == 12
    assert sum(q for q, _ in FORUMS.values()) == RELEASE_QUERIES == 13145  # thesis Table 4.5 #Queries
    assert sum(d for _, d in FORUMS.values()) == RELEASE_DOCUMENTS == 457199  # thesis Table 4.5 #Documents


def test_forum_tasks_read_beirs_layout_and_are_not_the_useb_task():
    task = TASKS.get("beir-cqadupstack-tex")
    assert task.files("test") == ["beir/cqadupstack/tex/corpus.jsonl", "beir/cqadupstack/tex/queries.jsonl",
                                  "beir/cqadupstack/tex/qrels/test.tsv"]
    assert task.release_documents == 68184 and task.release_queries == {"test": 2906}
    assert TASKS.get("beir-cqadupstack").dataset == "beir-cqadupstack" != TASKS.get("cqadupstack").dataset
    assert TASKS.get("cqadupstack").main_metric == "map@100" and TASKS.get("beir-cqadupstack").main_metric == "ndcg@10"


def test_the_average_is_the_unweighted_mean_of_the_12_forums():
    ev = evaluate("beir-cqadupstack", WordOverlap(), "test", ASSETS)
    assert set(ev.subsets) == set(FORUMS) and ev.n_queries == 24
    for metric in MEASURES:
        assert ev.scores[metric] == pytest.approx(np.mean([ev.subsets[f][metric] for f in FORUMS]), abs=1e-12)
    # each forum's subset is exactly what that forum's own task gives
    one = evaluate("beir-cqadupstack-gis", WordOverlap(), "test", ASSETS)
    assert {m: ev.subsets["gis"][m] for m in MEASURES} == one.scores
    # the average is not the pooled mean over all 24 queries when forums differ (a forum-weighted check)
    assert set(ev.scores) == set(MEASURES)


def test_query_ids_that_are_corpus_documents_are_excluded_from_their_own_results():
    task = FORUM_TASKS["android"]
    data = task.load("test", ASSETS)
    run = task.score(data, _prepared(task, data))
    own = data.doc_ids.index(data.query_ids[0])
    assert run.indices[0][0] == own  # the query's own question ranks first (identical title)...
    (part,) = run_chunks(data, run)
    qid = data.query_ids[0]
    assert qid not in part[qid] and len(part[qid]) == len(data.doc_ids) - 1  # ...and is dropped (BEIR's rule)


def _prepared(task, data):
    scorer = WordOverlap()
    scorer.prepare(task.texts(data))
    return scorer


def test_a_cut_forum_is_refused_by_its_release_count(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(ASSETS / "beir", root / "beir")
    shutil.copy(ASSETS / "usebench-counts.json", root / "usebench-counts.json")
    corpus = root / "beir/cqadupstack/unix/corpus.jsonl"
    corpus.write_text("".join(corpus.read_text().splitlines(keepends=True)[:-1]))
    with pytest.raises(ReleaseMismatchError, match="unix/corpus.jsonl"):
        evaluate("beir-cqadupstack", WordOverlap(), "test", root)


def test_bench_data_download_places_beirs_archive_and_the_tasks_load_it(tmp_path):
    """The download machinery end to end on a file:// mirror whose cqadupstack.zip has BEIR's layout."""
    from usebench.data.manager import DataManager

    manifest = unpinned(load_manifest())
    (component,) = manifest.datasets["beir-cqadupstack"]
    assert component.archive_md5 is None and load_manifest().datasets["beir-cqadupstack"][0].archive_md5 == \
        "4e41456d7df8ee7760a7f866133bda78"  # BEIR's published md5 is pinned (checked on a real download)
    src = ASSETS / "beir/cqadupstack"
    members = {f"cqadupstack/{p.relative_to(src).as_posix()}": p.read_bytes() for p in src.rglob("*") if p.is_file()}
    mirror = tmp_path / "mirror"
    write_archive(mirror / "cqadupstack.zip", members)
    root = tmp_path / "root"
    (outcome,) = DataManager(root, manifest, mirror=str(mirror), progress=False).download(["beir-cqadupstack"])
    assert outcome.action == "downloaded"
    assert (root / "beir/cqadupstack/wordpress/qrels/test.tsv").is_file()
    counts = json.loads((ASSETS / "usebench-counts.json").read_text())
    (root / "usebench-counts.json").write_text(json.dumps({**counts, "counts": {
        k: v for k, v in counts["counts"].items() if k.startswith("beir/cqadupstack/")}}))
    ev = evaluate("beir-cqadupstack", WordOverlap(), "test", root)
    assert ev.n_queries == 24 and 0 < ev.scores["recall@10"] <= 1


def test_the_training_corpus_is_every_forums_documents_without_their_queries():
    corpus = TASKS.get("beir-cqadupstack").train_corpus(ASSETS)
    queries = {q for t in FORUM_TASKS.values() for q in t.evaluation_queries(ASSETS)[1]}
    assert corpus and not queries & set(corpus)
    assert len(corpus) == sum(len(t.train_corpus(ASSETS)) for t in FORUM_TASKS.values())


def test_each_forum_is_scored_once_per_evaluation(monkeypatch):
    """The metrics, the subsets and the per-item outcomes share one pytrec_eval pass per forum (Task.outcomes), and
    no run is held afterwards."""
    from usebench.tasks import beir_cqadupstack

    calls = []
    original = beir_cqadupstack.beir_per_query
    monkeypatch.setattr(beir_cqadupstack, "beir_per_query",
                        lambda data, run: calls.append(len(data.query_ids)) or original(data, run))
    ev = evaluate("beir-cqadupstack", WordOverlap(), "test", ASSETS)
    assert len(calls) == len(FORUM_TASKS) and ev.items is not None
    assert TASKS.get("beir-cqadupstack")._last is None
