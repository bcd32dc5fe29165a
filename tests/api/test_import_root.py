"""One import root: `usebench` holds the API at its top and the engine, methods and tasks beneath it; the API is
loaded on first use, and `python -m usebench` is the `bench` command."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_engine_and_the_cli_never_load_the_api():
    """`bench` imports usebench.cli: the root package must not drag pandas and the API in with it."""
    out = json.loads(_python("import json, sys, usebench, usebench.cli.main, usebench.run.grid; "
                             "print(json.dumps(sorted(m for m in ('pandas', 'usebench.api.evaluation', 'usebench.api.results', "
                             "'usebench.api.arguments', 'usebench.api.identity', 'usebench.api.staging', 'usebench.api.tasklist', "
                             "'usebench.useb') "
                             "if m in sys.modules)))"))
    assert out == []


def test_the_api_names_load_on_first_use():
    out = json.loads(_python("import json, usebench; "
                             "print(json.dumps([usebench.evaluate.__module__, usebench.load_results.__module__, "
                             "usebench.aggregate.__module__, usebench.useb.__name__, usebench.__version__, "
                             "usebench.table.__module__, usebench.list_tasks.__module__, "
                             "usebench.useb.evaluators.__name__]))"))
    assert out == ["usebench.api.evaluation", "usebench.api.results", "usebench.api.results", "usebench.useb", "0.1.0",
                   "usebench.api.results", "usebench.api.tasklist", "usebench.useb.evaluators"]


def test_an_unknown_attribute_is_an_attribute_error():
    import pytest

    import usebench

    with pytest.raises(AttributeError, match="no attribute 'evalute'"):
        usebench.evalute  # noqa: B018


def test_python_dash_m_usebench_is_the_bench_command():
    done = subprocess.run([sys.executable, "-m", "usebench", "--help"], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0 and "Usage: bench" in done.stdout
    assert all(f"  {c} " in done.stdout for c in ("run", "eval", "report", "reproduce", "doctor"))


def test_the_plugins_are_subpackages_of_the_root():
    from usebench import methods, tasks  # noqa: F401  (enrols both registries)
    from usebench.registry import METHODS, TASKS

    assert type(METHODS.get("tsdae")).__module__ == "usebench.methods.tsdae"
    assert type(TASKS.get("twitterpara")).__module__.startswith("usebench.tasks.")


def test_a_python_without_the_dependencies_is_told_how_to_install_at_the_front_door():
    """`python3 -c "import usebench; usebench.load_results('results/')"` at a fresh clone's root, with a Python that
    never installed the project, stopped deep in the call on `No module named 'pandas'`; it now says what is missing
    and how to install it, before the API is imported. (A child Python whose import system cannot find pandas.)"""
    code = ("import importlib.util, sys\n"
            "real = importlib.util.find_spec\n"
            "importlib.util.find_spec = lambda name, *a: None if name == 'pandas' else real(name, *a)\n"
            "import usebench\n"
            "try:\n"
            "    usebench.load_results('results/')\n"
            "except ModuleNotFoundError as e:\n"
            "    print(repr((e.name, str(e), 'usebench.api.results' in sys.modules)))\n")
    name, message, imported = eval(_python(code))  # noqa: S307 (our own repr)
    assert name == "pandas" and not imported
    assert "usebench.load_results needs pandas" in message and "pip install -e '.[test]'" in message
