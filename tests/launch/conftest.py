"""The launcher tests' shared grid: a toy corpus and the store a `--launcher local` run of the grid fills (the
reference every other launcher's store must equal)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
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


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    """One local Ray for the tests below (started the way the launcher starts it; the launcher then joins it)."""
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")
    from usebench.launch import LaunchOptions
    from usebench.launch.ray_launcher import ray_session

    results = tmp_path_factory.mktemp("ray-session")
    home, saved = tmp_path_factory.mktemp("home"), os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    try:
        with ray_session(LaunchOptions(launcher="ray"), results):
            yield results
    finally:
        if saved is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = saved
    assert not list(home.iterdir())
