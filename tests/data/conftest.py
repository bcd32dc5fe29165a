"""The fake release mirror the data-manager tests download from."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.data.data_fakes import MANIFEST, build_mirror


@pytest.fixture(scope="module")
def mirror(tmp_path_factory) -> Path:
    return build_mirror(tmp_path_factory.mktemp("mirror"), MANIFEST)
