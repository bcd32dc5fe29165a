"""The hand-scored store most report tests read, and the releases its records stand for."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.report import genuine
from tests.report.synthetic_results import hand_store


@pytest.fixture(autouse=True)
def synthetic_releases(monkeypatch):
    """The synthetic records' evaluation data (``sha-<task>``) is pinned as the releases: these stores stand for
    results on the releases. Tests of the package's own pins ask for :func:`real_releases`."""
    from usebench.data import releases

    genuine.REAL_RELEASES = genuine.REAL_RELEASES or releases.load_releases
    genuine.pin_synthetic_evaluation(monkeypatch)


@pytest.fixture()
def real_releases(monkeypatch, synthetic_releases):
    """The release identities the package pins (usebench/data/releases.json), as a user's report sees them."""
    from usebench.data import releases

    monkeypatch.setattr(releases, "load_releases", genuine.REAL_RELEASES)


@pytest.fixture()
def store(tmp_path) -> Path:
    return hand_store(tmp_path / "results")
