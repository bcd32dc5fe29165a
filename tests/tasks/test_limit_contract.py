"""`--limit` over every task that offers it (issue 56, item 3), on the fixtures: each subset is cut to at most N
items, chosen per subset, and each kept item's outcome is exactly the full evaluation's (a pair's similarity, a
query's values with all its candidates and, for retrieval, the whole pool); the metrics are recomputed from the
kept items alone. Tasks that do not offer it refuse it."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.tasks.test_contract import ASSETS, HashEncoder, missing_extras
from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.errors import BenchValueError
from usebench.eval.evaluate import evaluate, load_split
from usebench.eval.items import metric_value
from usebench.eval.scorer import DenseScorer
from usebench.eval.subsample import Limit, ids_sha256
from usebench.registry import TASKS

N = {"pairs": 3, "queries": 1}  # small enough to cut the fixtures' subsets, large enough for a correlation
LIMITED = [n for n in TASKS.names() if TASKS.get(n).limit_unit is not None]


def _split(name: str) -> str:
    task = TASKS.get(name)
    split = task.splits[-1]
    if not all((ASSETS / f).is_file() for f in task.files(split)):
        pytest.skip(f"no fixture for {name} in tests/assets")
    if missing_extras(task):
        pytest.skip(f"{name} needs {'; '.join(missing_extras(task))}")
    return split


@pytest.mark.parametrize("name", LIMITED)
def test_a_limited_evaluation_holds_the_full_outcomes_of_its_items(name):
    split, n = _split(name), N[TASKS.get(name).limit_unit]
    full = evaluate(name, DenseScorer(HashEncoder()), split, ASSETS)
    limited = evaluate(name, DenseScorer(HashEncoder()), split, ASSETS, limit=Limit(n))
    whole, part = full.items, limited.items
    assert part.subsets == whole.subsets
    for subset in whole.subsets:
        size = len(whole.rows(subset))
        rows = part.rows(subset)
        assert len(rows) == min(n, size), subset  # per subset, never fewer than it has
        kept = Limit(n).pick(name, subset, size)
        assert part.ids[rows].astype(str).tolist() == whole.ids[whole.rows(subset)[kept]].astype(str).tolist()
        for column, values in part.columns.items():  # each kept item scored exactly as in the full evaluation
            assert np.array_equal(values[rows], whole.columns[column][whole.rows(subset)[kept]], equal_nan=True), \
                (subset, column)
    for metric, value in limited.scores.items():
        assert metric_value(part, metric) == value, metric
    assert len(part) < len(whole)  # the fixture was cut
    assert limited.limit == {"n": n, "seed": 0, "per": "subset", "rule": "sha256-rank/1",
                             "unit": TASKS.get(name).limit_unit, "of": len(whole), "items": len(part),
                             "ids_sha256": ids_sha256(part.keys())}
    assert limited.data_sha256 == full.data_sha256  # the release's data, checked whole before the cut


def test_the_release_is_checked_on_the_whole_split_before_the_cut():
    loaded = load_split("twitterpara", "test", ASSETS, limit=Limit(1))
    whole = TASKS.get("twitterpara").load("test", ASSETS)
    assert loaded.limit["of"] == sum(len(ps) for ps in whole.values())
    assert {k: len(v) for k, v in loaded.data.items()} == {"twitterurl": 1, "pit": 1}


@pytest.mark.parametrize("name", ["bm25+askubuntu", "bm25-anserini+scidocs"])
def test_tasks_without_a_quick_evaluation_refuse_it(name):
    task = TASKS.get(name)
    with pytest.raises(BenchValueError, match=re.escape(f"task '{name}' offers no --limit")):
        task.limited(task.load("test", ASSETS), Limit(3))
