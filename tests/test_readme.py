"""The README's promises that can rot silently: every module, object and file it names exists, and the two
commands for a fresh machine are the ones `.ci/run` runs."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs_commands import importable

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CODE_SPANS = re.findall(r"`([^`\n]+)`", README)


def _dotted_names() -> list[str]:
    return sorted({s for s in CODE_SPANS if re.fullmatch(r"(benchmark|methods|tasks)(\.[A-Za-z_]\w*)+", s)})


def _paths() -> list[str]:
    return sorted({s for s in CODE_SPANS if re.fullmatch(r"(benchmark|methods|tasks|scripts|tests)/[\w/.]+", s)})


@pytest.mark.parametrize("name", _dotted_names())
def test_every_python_name_in_the_readme_imports(name):
    assert importable(name), f"README names {name}, which does not import"


@pytest.mark.parametrize("path", _paths())
def test_every_file_in_the_readme_exists(path):
    assert (ROOT / path).exists(), f"README names {path}, which does not exist"


def test_ci_runs_the_readme_test_command():
    command = re.search(r"Run the tests.*?```bash\n(.*?)\n```", README, re.S).group(1).strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert command.split("python -m ", 1)[1] in ci, (command, "not in .ci/run")
