"""A data root in the real layouts with every file the paper's chains train on: the evaluation fixtures plus the
labeled fixtures (AllNLI, STSb train, the USEB supervised sets)."""
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

