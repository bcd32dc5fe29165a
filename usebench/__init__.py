"""usebench: a reproducible benchmark for unsupervised sentence-embedding learning, and its Python API.

- :func:`evaluate`: a model name (as `bench eval --model`), a loaded SentenceTransformer, any object with
  ``.encode(list[str])`` or any function ``list[str] -> (n, d)`` on tasks or groups (``"useb"``, ``"sts"``)
  -> a long DataFrame;
- :func:`train`: what `bench run` does (methods on each task's corpus, or on a file, sentences or a ``Dataset``;
  presets, overrides, seeds), with its planner, reuse and resume -> the results as :func:`load_results`' frame;
- :mod:`usebench.useb`: ``run`` and ``run_on`` with the useb kit's signatures and results (change one import);
- :func:`load_results`: a results store as a DataFrame; :func:`aggregate`: the reports' seed statistics over it;
  :func:`table`: any of these frames as one row per model and one column per task;
- :func:`list_tasks`: every task with its group, protocol, metric, splits and whether its data is present;
- :func:`compare`: B - A per task on the same test items, with a bootstrap interval and a paired test.

Everything else lives under this one root: the engine by concern (``usebench.cli``, ``usebench.run``,
``usebench.train``, ``usebench.eval``, ...), the trainers in ``usebench.methods`` and the task adapters in
``usebench.tasks`` (docs/python.md, docs/extending.md). The API is imported on first use, so ``bench`` and the
engine's modules never pay for pandas or the API's imports.
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from usebench._version import __version__  # noqa: F401  (usebench.__version__, as every package has one)

__all__ = ["aggregate", "compare", "evaluate", "list_tasks", "load_results", "table", "train", "useb"]

_API = {"evaluate": "usebench.api.evaluation", "load_results": "usebench.api.results", "aggregate": "usebench.api.results",
        "table": "usebench.api.results", "list_tasks": "usebench.api.tasklist",
        "compare": "usebench.api.comparison"}


def __getattr__(name: str) -> Any:
    if name == "useb":
        return importlib.import_module("usebench.useb")
    if name in _API:
        _check_dependencies(name)
        value = getattr(importlib.import_module(_API[name]), name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module 'usebench' has no attribute {name!r}")


# What the API's frames need at call time (imported lazily there, so a missing one would surface deep in a call).
_API_DEPENDENCIES = ("numpy", "pandas")


def _check_dependencies(name: str) -> None:
    """Say at the front door, not mid-call, when this Python lacks what the API needs: the usual cause is running
    the repository's source with a Python that never installed it (``python3`` beside an inactive venv)."""
    import importlib.util

    missing = [m for m in _API_DEPENDENCIES if importlib.util.find_spec(m) is None]
    if missing:
        raise ModuleNotFoundError(
            f"usebench.{name} needs {', '.join(missing)}, which this Python ({sys.executable}) does not have: "
            "usebench's dependencies are not installed here. Activate the environment you installed it into, or "
            "install it as the README says: pip install torch==2.13.0 && pip install -e '.[test]'",
            name=missing[0])


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


# ``usebench.train`` is two things: the API's train (usebench/api/training.py) and the training engine's package
# (usebench/train/), which Python binds to the name ``train`` of this module whenever a module under it is imported
# (the engine imports usebench.train.loop on every run). So the name stays the package, and the package is made
# callable: ``usebench.train(...)`` trains, ``usebench.train.loop`` is the loop, whichever was imported first.
class _TrainPackage(types.ModuleType):
    """The package ``usebench.train``, called as :func:`usebench.api.training.train` (the API is imported then)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return importlib.import_module("usebench.api.training").train(*args, **kwargs)


def _callable(module: types.ModuleType) -> types.ModuleType:
    if type(module) is types.ModuleType:
        module.__class__ = _TrainPackage
    return module


class _Face(types.ModuleType):
    """This module, whose ``train`` is always the callable package (the import system's binding included)."""

    @property
    def train(self) -> types.ModuleType:
        return _callable(importlib.import_module("usebench.train"))  # the package alone: no torch, no API

    @train.setter
    def train(self, module: types.ModuleType) -> None:  # ``import usebench.train...`` binding the package
        _callable(module)


sys.modules[__name__].__class__ = _Face
