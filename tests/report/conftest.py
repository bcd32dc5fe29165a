"""The hand-scored store most report tests read."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.report.synthetic_results import hand_store


@pytest.fixture()
def store(tmp_path) -> Path:
    return hand_store(tmp_path / "results")
