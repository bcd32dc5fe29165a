"""USEB's exact protocol inside MTEB (the `mteb` extra): task objects that MTEB's runner evaluates.

::

    import mteb
    import usebench.mteb
    from usebench.eval.mteb_model import load_mteb_model

    model = load_mteb_model("minilm")                     # or any MTEB model / SentenceTransformer
    results = mteb.evaluate(model, tasks=usebench.mteb.benchmark(), cache=mteb.ResultCache("mteb-cache"))
    usebench.mteb.read_results("mteb-cache")              # MTEB's result files as usebench records

:func:`tasks` gives ``USEB-AskUbuntu``, ``USEB-CQADupStack``, ``USEB-TwitterPara`` and ``USEB-SciDocs`` (MTEB
``AbsTask`` objects with MTEB's metadata: splits, main score, reference, license as each release states it), read
from the usebench data root (never the hub) and scored by usebench's engine, so the numbers equal `bench eval`'s;
:func:`average` is ``USEB-Average`` (the TSDAE paper's mean of the four, an MTEB aggregate task) and
:func:`benchmark` an ``mteb.Benchmark`` of all five. MTEB's own ``AskUbuntuDupQuestions``, ``TwitterURLCorpus``,
``SciDocsRR``... are other data and other protocols (docs/mteb.md). :func:`read_results` and
:func:`import_results` (usebench/store/mteb_results.py) need no MTEB; MTEB's own ``ResultCache.load_results()`` reads the
same files (``models=["usebench/minilm"]`` for the model above).
"""
from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from usebench.errors import BenchError, BenchValueError
from usebench.store.mteb_results import import_results, read_results

__all__ = ["TASK_NAMES", "average", "benchmark", "import_results", "read_results", "tasks"]

INSTALL = "pip install -e '.[mteb]'"
TASK_NAMES = {"askubuntu": "USEB-AskUbuntu", "cqadupstack": "USEB-CQADupStack", "twitterpara": "USEB-TwitterPara",
              "scidocs": "USEB-SciDocs"}  # usebench task -> MTEB task name
USEB = tuple(TASK_NAMES)


def _require_mteb() -> None:
    if importlib.util.find_spec("mteb") is None:
        raise BenchError(f"USEB's MTEB tasks need the `mteb` extra: {INSTALL} (after the CPU torch wheel)")


def _names(names: str | Sequence[str]) -> list[str]:
    """usebench names (``askubuntu``), MTEB names (``USEB-AskUbuntu``) or the group ``useb``, in USEB's order."""
    items = names.split(",") if isinstance(names, str) else list(names)
    by_mteb = {v.lower(): k for k, v in TASK_NAMES.items()}
    out: list[str] = []
    for item in (str(i).strip() for i in items):
        found = list(USEB) if item.lower() == "useb" else [by_mteb.get(item.lower(), item.lower())]
        for name in found:
            if name not in TASK_NAMES:
                raise BenchValueError(f"unknown USEB task {item!r}; known: useb, {', '.join(USEB)} "
                                      f"(or {', '.join(TASK_NAMES.values())})")
            if name not in out:
                out.append(name)
    return sorted(out, key=USEB.index)


def _root(data_root: str | Path | None) -> Path:
    from usebench.paths import default_data_root

    return Path(data_root or default_data_root()).expanduser()


def tasks(names: str | Sequence[str] = "useb", *, data_root: str | Path | None = None,
          splits: Sequence[str] = ("test",), allow_partial: bool = False) -> list[Any]:
    """The USEB tasks as MTEB task objects on ``data_root`` (default ``$BENCH_DATA``).

    :param names: ``"useb"`` (the four), usebench or MTEB task names, comma-separated or a list.
    :param splits: the splits MTEB evaluates (``"test"``, ``"dev"``); a task without any of them is left out.
    :param allow_partial: evaluate data that is not the full release (recorded in each score's ``usebench`` block).
    """
    _require_mteb()
    from usebench.mteb.useb_tasks import build_tasks

    bad = [s for s in splits if s not in ("dev", "test")]
    if bad or not splits:
        raise BenchValueError(f"splits must be among 'dev' and 'test', got {list(splits)!r}")
    return build_tasks(_names(names), _root(data_root), tuple(splits), allow_partial)


def average(*, data_root: str | Path | None = None, allow_partial: bool = False) -> Any:
    """``USEB-Average``: MTEB's aggregate task over the four tasks on test (the TSDAE paper's USEB average)."""
    from usebench.mteb.useb_tasks import build_average

    return build_average(tasks("useb", data_root=data_root, allow_partial=allow_partial))


def benchmark(*, data_root: str | Path | None = None, allow_partial: bool = False) -> Any:
    """``mteb.Benchmark("USEB")``: the four tasks on test and ``USEB-Average``. With MTEB's result cache the
    average reads the four results back; with ``cache=None`` MTEB evaluates them a second time for it, so pass
    :func:`tasks` there instead."""
    from usebench.mteb.useb_tasks import build_benchmark

    return build_benchmark(tasks("useb", data_root=data_root, allow_partial=allow_partial))
