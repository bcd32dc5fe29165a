"""For `bench reproduce`'s end-to-end tests: the recipes' fixture root and one store per test file (the grids' data
root, grid_root, is tests/conftest.py's)."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def reproduce_root(tmp_path_factory) -> Path:
    """Every file the four recipes read, small (tests/reproduce/reproduce_root.py)."""
    from tests.reproduce.reproduce_root import build_reproduce_root

    return build_reproduce_root(tmp_path_factory.mktemp("reproduce-root"))


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """One results store for a test file's end-to-end runs: a unit two tables need trains once."""
    return tmp_path_factory.mktemp("reproduce-store")
