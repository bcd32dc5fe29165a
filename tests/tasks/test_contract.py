"""Contract tests run over every registered task (later adapters get them for free)."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.errors import MissingDataError
from usebench.eval.evaluate import evaluate
from usebench.registry import TASKS
from usebench.eval.scorer import DenseScorer

ASSETS = Path(__file__).resolve().parents[1] / "assets"


class HashEncoder:
    """A deterministic stand-in encoder: each text gets a fixed pseudo-random 16-d vector."""

    name = "hash"

    def encode(self, texts):
        rows = [np.random.default_rng(int(hashlib.sha1(t.encode()).hexdigest()[:8], 16)).normal(size=16)
                for t in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), 16)

    def describe(self):
        return {"model": "hash"}


def test_pyserini_wrappers_declare_their_extra():
    """bm25-pyserini+<task> needs the pyserini extra (the contract test above skips it on the base install)."""
    assert TASKS.get("bm25-pyserini+askubuntu").extras == ("pyserini",)
    assert TASKS.get("bm25+askubuntu").extras == () and TASKS.get("askubuntu").extras == ()


@pytest.mark.parametrize("name", TASKS.names())
def test_metadata_is_complete(name):
    task = TASKS.get(name)
    assert task.name == name
    assert task.main_metric in task.metric_names
    assert task.family in ("rerank", "retrieval", "pairs")
    assert task.splits and set(task.splits) <= {"dev", "test"}
    assert task.files(task.splits[-1]), "a split reads at least one file"


@pytest.mark.parametrize("name", TASKS.names())
def test_missing_data_names_the_fetch_command(name, tmp_path):
    task = TASKS.get(name)
    with pytest.raises(MissingDataError, match=f"bench data download {task.dataset}"):
        task.require(tmp_path, task.splits[-1])


def missing_extras(task) -> list[str]:
    """The task's optional extras (``Task.extras``) that this environment lacks, with what installs them."""
    from usebench.plan.requirements import task_requirements

    return [f"{r.what} ({r.install})" for r in task_requirements(task.name)]


@pytest.mark.parametrize("name", TASKS.names())
def test_fixture_evaluates_to_every_declared_metric(name):
    """Where tests/assets holds the task's files, a full evaluation yields every declared metric, finite. A task
    whose optional extra is not installed (bm25-pyserini+<task> on the base install) skips, saying which."""
    task = TASKS.get(name)
    split = task.splits[-1]
    if not all((ASSETS / f).is_file() for f in task.files(split)):
        pytest.skip(f"no fixture for {name} in tests/assets")
    if missing_extras(task):
        pytest.skip(f"{name} needs {'; '.join(missing_extras(task))}")
    ev = evaluate(name, DenseScorer(HashEncoder()), split, ASSETS)
    assert set(task.metric_names) <= set(ev.scores)
    assert all(np.isfinite(v) and -1.0 <= v <= 1.0 for v in ev.scores.values())
    assert ev.main_score == ev.scores[task.main_metric] and ev.n_queries > 0 and len(ev.data_sha256) == 64
