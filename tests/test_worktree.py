"""The hygiene check (tests/worktree.py, run by tests/conftest.py): a run that leaves an untracked file fails."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.worktree import left_behind, untracked

REPO = Path(__file__).resolve().parents[1]


def _git_repo(path: Path) -> Path:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / ".gitignore").write_text("ignored/\n")
    (path / "tracked.txt").write_text("x\n")
    subprocess.run(["git", "add", "."], cwd=path, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=path, check=True, env=env)
    return path


def test_untracked_lists_new_files_and_passes_over_ignored_and_tracked_ones(tmp_path):
    repo = _git_repo(tmp_path / "repo")
    (repo / "ignored").mkdir()
    (repo / "ignored" / "a.csv").write_text("1\n")
    (repo / "tracked.txt").write_text("changed\n")
    assert untracked(repo) == set()
    (repo / "checkpoints" / "model" / "eval").mkdir(parents=True)
    (repo / "checkpoints" / "model" / "eval" / "r.csv").write_text("1\n")
    (repo / "new file.txt").write_text("1\n")
    assert untracked(repo) == {"checkpoints/model/eval/r.csv", "new file.txt"}  # each file, not its folder


def test_outside_a_checkout_nothing_is_checked(tmp_path):
    assert untracked(tmp_path) is None
    assert left_behind(None, {"a"}) == [] and left_behind({"a"}, None) == []
    assert left_behind({"a"}, {"a", "c", "b"}) == ["b", "c"]


@pytest.mark.parametrize("writes", [False, True])
def test_a_run_that_leaves_a_file_fails(tmp_path, writes):
    """The suite's own hooks, in a run of one test in a scratch checkout: writing into the working folder fails it."""
    repo = _git_repo(tmp_path / "repo")
    (repo / "conftest.py").write_text("from tests.conftest import pytest_sessionfinish, pytest_sessionstart  # noqa\n")
    body = 'Path("checkpoints").mkdir(); Path("checkpoints/r.csv").write_text("1")' if writes else "pass"
    (repo / "test_one.py").write_text(f"from pathlib import Path\n\n\ndef test_one():\n    {body}\n")
    subprocess.run(["git", "add", "conftest.py", "test_one.py"], cwd=repo, check=True)
    # not the caller's PYTEST_ADDOPTS: CI's --junitxml would write its report into the scratch checkout
    env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == (1 if writes else 0), run.stdout + run.stderr
    assert ("checkpoints/r.csv" in run.stdout) == writes
