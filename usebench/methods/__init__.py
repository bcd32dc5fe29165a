"""Method plugins: one module per trainer a user can name, enrolled by one import line each.

The parts trainers share (noise, augmentations, heads, decoders, losses, flows, phrase extraction, labeled-data
readers, sentence-transformers export modules) live in :mod:`usebench.methods.parts`, so this folder lists exactly the
trainers and a composed method reads as a short config over parts.
"""
from __future__ import annotations

import sys
import types

from usebench.registry import METHODS  # noqa: F401

# Checkpoints name their sentence-transformers modules by import path in `modules.json`. Those exported before the
# parts moved (`methods.flow_st.FlowPooling`) or before the one `usebench` root (`methods.parts.flow_st...`) are kept
# loadable by these exact module keys; no top-level `methods` package is created (a user's own stays theirs).
# They are entered as small proxies that import the real module on first attribute access (PEP 562 ``__getattr__``),
# because it imports sentence-transformers, which costs seconds that a `bench` command that never loads such a
# checkpoint should not pay. (importlib's LazyLoader is no fit: inspect.getmodule, which torch calls while importing,
# touches every module in sys.modules and would load them all then.)


def _alias(key: str, target: str) -> types.ModuleType:
    """A module named ``key`` whose attributes are ``target``'s, ``target`` imported when one is first read."""
    import importlib.util

    proxy = types.ModuleType(key, f"Alias of {target} (a module path older checkpoints name).")
    proxy.__file__ = importlib.util.find_spec(target).origin

    def __getattr__(name: str):
        return getattr(importlib.import_module(target), name)

    proxy.__getattr__ = __getattr__  # type: ignore[method-assign]
    return proxy


for _old in ("flow_st", "denosent_st"):
    for _key in (f"methods.{_old}", f"methods.parts.{_old}", f"usebench.methods.{_old}"):
        sys.modules.setdefault(_key, _alias(_key, f"usebench.methods.parts.{_old}"))

# Enrolment: one line per method module (added as they land).
from usebench.methods import tsdae  # noqa: F401,E402
from usebench.methods import simcse  # noqa: F401,E402
from usebench.methods import ct  # noqa: F401,E402  (registers ct and ct-ibn)
from usebench.methods import mlm  # noqa: F401,E402
from usebench.methods import consert  # noqa: F401,E402
from usebench.methods import bertflow  # noqa: F401,E402
from usebench.methods import denosent  # noqa: F401,E402
from usebench.methods import paser  # noqa: F401,E402
from usebench.methods import supervised  # noqa: F401,E402  (sbert-mnrl, sbert-cosine, sbert-nli, sbert-stsb)
from usebench.methods import multitask  # noqa: F401,E402  (clm-ae, mlm-ae, simcse-clm/-mlm, consert-clm/-mlm)
