"""Every task's per-item outcomes (Task.outcomes, usebench/eval/items.py), over every registered task with a fixture:
the items file gives back every metric the task computed, exactly, and the same items pair item by item across
runs (ids from the data, not from the scores)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tasks.test_contract import ASSETS, HashEncoder, missing_extras
from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.eval.evaluate import evaluate, items_bytes
from usebench.eval.items import ItemTable, metric_value
from usebench.eval.scorer import DenseScorer
from usebench.registry import TASKS

# Tasks whose metrics are not means of per-item values the suite keeps: the BM25 rescoring wrappers (a grid of
# alphas and normalisations per query) and MTEB's own evaluators.
WITHOUT_ITEMS = ("bm25+", "bm25-anserini+", "bm25-pyserini+", "bm25-pyserini-a20+", "mteb")


class ShiftedEncoder(HashEncoder):
    """Other vectors for the same texts: another "model"."""

    def encode(self, texts):
        return super().encode(texts)[:, ::-1].copy()


def _evaluate(name: str, encoder):
    task = TASKS.get(name)
    split = task.splits[-1]
    if not all((ASSETS / f).is_file() for f in task.files(split)):
        pytest.skip(f"no fixture for {name} in tests/assets")
    if missing_extras(task):
        pytest.skip(f"{name} needs {'; '.join(missing_extras(task))}")
    return evaluate(name, DenseScorer(encoder), split, ASSETS)


@pytest.mark.parametrize("name", TASKS.names())
def test_the_stored_items_give_back_every_metric_exactly(name):
    ev = _evaluate(name, HashEncoder())
    if name.startswith(WITHOUT_ITEMS):
        assert ev.items is None
        return
    table = ItemTable.from_bytes(items_bytes(ev))
    assert set(table.recipes) == set(ev.scores), "every metric of the task has its recipe"
    for metric, value in ev.scores.items():
        assert metric_value(table, metric) == value, metric  # exactly: the task's functions in the task's order
    assert len(table) == len(set(table.keys())) > 0


@pytest.mark.parametrize("name", [n for n in TASKS.names() if not n.startswith(WITHOUT_ITEMS)])
def test_two_models_items_pair_item_by_item(name):
    a, b = _evaluate(name, HashEncoder()), _evaluate(name, ShiftedEncoder())
    assert a.items.keys() == b.items.keys()
    assert np.array_equal(a.items.subset, b.items.subset)
