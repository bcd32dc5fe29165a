"""The launcher tests' shared grid: a toy corpus and the store a `--launcher local` run of the grid fills (the
reference every other launcher's store must equal)."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmark.cli.main import main
from tests.launch.helpers import grid_args
from tests.methods.helpers import toy_corpus


@pytest.fixture(scope="session")
def grid_corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def local_grid(tiny_bert_dir, grid_corpus, tmp_path_factory) -> Path:
    """The test grid run by `bench run --launcher local` (one unit after the other, in this process)."""
    results = tmp_path_factory.mktemp("local-grid") / "results"
    result = CliRunner().invoke(main, grid_args(tiny_bert_dir, grid_corpus, results, "--launcher", "local"))
    assert result.exit_code == 0, result.output
    return results
