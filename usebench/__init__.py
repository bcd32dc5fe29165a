"""usebench's Python API: evaluate any encoder, the useb kit's ``run``/``run_on``, results as pandas.

- :func:`evaluate`: a model name (as `bench eval --model`), a loaded SentenceTransformer or any function
  ``list[str] -> (n, d)`` on tasks or groups (``"useb"``, ``"sts"``) -> a long DataFrame;
- :mod:`usebench.useb`: ``run`` and ``run_on`` with the useb kit's signatures and results (change one import);
- :func:`load_results`: a results store as a DataFrame; :func:`aggregate`: the reports' seed statistics over it.

The engine, tasks and methods stay in the ``benchmark``, ``tasks`` and ``methods`` packages (docs/python.md).
"""
from __future__ import annotations

from usebench import useb
from usebench.api import evaluate
from usebench.results import aggregate, load_results

__all__ = ["aggregate", "evaluate", "load_results", "useb"]
