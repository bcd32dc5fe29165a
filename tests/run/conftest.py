"""A data root in the real layouts with every file the paper's chains train on: the evaluation fixtures plus the
labeled fixtures (AllNLI, STSb train, the USEB supervised sets); for `bench reproduce`'s end-to-end tests, the recipes'
fixture root and one store per test file."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ASSETS = Path(__file__).resolve().parents[1] / "assets"


@pytest.fixture(scope="session")
def grid_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("grid-root")
    shutil.copytree(ASSETS, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("labeled_root"))
    shutil.copytree(ASSETS / "labeled_root", root, dirs_exist_ok=True)
    return root


@pytest.fixture(scope="module")
def reproduce_root(tmp_path_factory) -> Path:
    """Every file the four recipes read, small (tests/run/reproduce_root.py)."""
    from tests.run.reproduce_root import build_reproduce_root

    return build_reproduce_root(tmp_path_factory.mktemp("reproduce-root"))


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """One results store for a test file's end-to-end runs: a unit two tables need trains once."""
    return tmp_path_factory.mktemp("reproduce-store")
