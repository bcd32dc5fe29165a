"""methods/ lists exactly the trainers; their shared parts live in methods/parts/."""
from __future__ import annotations

import importlib
from pathlib import Path

import methods
from benchmark.registry import METHODS

METHODS_DIR = Path(methods.__file__).parent


def test_every_module_in_methods_is_a_trainer():
    """Each methods/*.py enrols at least one method; anything else belongs in methods/parts/."""
    enrolled_from = {type(METHODS.get(name)).__module__ for name in METHODS.names()}
    modules = {f"methods.{p.stem}" for p in METHODS_DIR.glob("*.py") if p.stem != "__init__"}
    assert modules == enrolled_from


def test_old_export_module_paths_still_load():
    """modules.json of checkpoints exported before the move names methods.flow_st / methods.denosent_st."""
    assert importlib.import_module("methods.flow_st").FlowPooling.__module__ == "methods.parts.flow_st"
    old = importlib.import_module("methods.denosent_st")
    assert old is importlib.import_module("methods.parts.denosent_st")
