"""usebench/methods/ lists exactly the trainers; their shared parts live in usebench/methods/parts/."""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from usebench import methods
from usebench.registry import METHODS

METHODS_DIR = Path(methods.__file__).parent


def test_every_module_in_methods_is_a_trainer():
    """Each usebench/methods/*.py enrols at least one method; anything else belongs in usebench/methods/parts/."""
    enrolled_from = {type(METHODS.get(name)).__module__ for name in METHODS.names()}
    modules = {f"usebench.methods.{p.stem}" for p in METHODS_DIR.glob("*.py") if p.stem != "__init__"}
    assert modules == enrolled_from


def test_a_trainer_module_stays_near_250_lines():
    """A method module holds its config, presets, module and plugin (STYLE.md: ~120-250 lines); what it is built from
    goes in usebench/methods/parts/."""
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in METHODS_DIR.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 280} == {}


@pytest.mark.parametrize("old", ["methods.flow_st", "methods.parts.flow_st", "usebench.methods.flow_st"])
def test_old_export_module_paths_still_load(old):
    """modules.json of checkpoints exported before the parts moved (methods.flow_st) or before the one usebench root
    (methods.parts.flow_st) still loads, without a top-level `methods` package being created."""
    import sys

    had_methods = sys.modules.get("methods")
    assert importlib.import_module(old).FlowPooling.__module__ == "usebench.methods.parts.flow_st"
    real = importlib.import_module("usebench.methods.parts.denosent_st")
    alias = importlib.import_module(old.replace("flow_st", "denosent_st"))
    assert alias.MaskTokenPooling is real.MaskTokenPooling and alias.PromptedTransformer is real.PromptedTransformer
    assert sys.modules.get("methods") is had_methods


def test_enrolling_the_methods_does_not_import_sentence_transformers():
    """The old module paths are proxies: a `bench` command that never loads such a checkpoint does not pay the
    seconds sentence-transformers' import takes (issue 37's profile: 6.6 s on every command)."""
    import subprocess
    import sys

    code = "import sys; from usebench import methods; print('sentence_transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_pooler_named_before_the_one_root_still_loads():
    from usebench.eval.pooling import load_factory
    from usebench.methods.bertflow import flow_pooler

    assert load_factory("methods.bertflow:flow_pooler", "flow") is flow_pooler
    assert load_factory("usebench.methods.bertflow:flow_pooler", "flow") is flow_pooler


# The code paths exports record (method.json's "pooler", modules.json's "type"), as checkpoints exported before the
# trainers' parts were split out of their modules (issue 57) hold them: each must still name the code that loads it.
RECORDED_POOLERS = [("usebench.methods.denosent:mask_token_pooler", "mask_token"),
                    ("usebench.methods.bertflow:flow_pooler", "flow"),
                    ("usebench.methods.simcse:cls_mlp_pooler", "cls_mlp")]
RECORDED_MODULES = ["usebench.methods.parts.denosent_st.MaskTokenPooling",
                    "usebench.methods.parts.denosent_st.PromptedTransformer",
                    "usebench.methods.parts.flow_st.FlowPooling"]


@pytest.mark.parametrize(("spec", "pooling"), RECORDED_POOLERS)
def test_the_poolers_older_exports_name_still_load(spec, pooling):
    from usebench.eval.pooling import LEGACY_FACTORIES, load_factory

    factory = load_factory(spec, pooling)
    assert callable(factory) and factory.__name__ == spec.partition(":")[2]
    assert LEGACY_FACTORIES.get(pooling, spec) == spec  # checkpoints older still, which name no pooler


@pytest.mark.parametrize("path", RECORDED_MODULES)
def test_the_module_classes_older_exports_name_still_load(path):
    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    assert cls.__module__ == module and cls.__name__ == name

