"""Method plugins: one module per trainer a user can name, enrolled by one import line each.

The parts trainers share (noise, augmentations, heads, decoders, losses, flows, phrase extraction, labeled-data
readers, sentence-transformers export modules) live in :mod:`methods.parts`, so this folder lists exactly the
trainers and a composed method reads as a short config over parts.
"""
from __future__ import annotations

import importlib
import sys

from benchmark.registry import METHODS  # noqa: F401

# Checkpoints exported before the parts moved name their sentence-transformers modules by the old paths in
# `modules.json` (`methods.flow_st.FlowPooling`, `methods.denosent_st.PromptedTransformer`); keep those loadable.
for _old in ("flow_st", "denosent_st"):
    sys.modules.setdefault(f"methods.{_old}", importlib.import_module(f"methods.parts.{_old}"))

# Enrolment: one line per method module (added as they land).
from methods import tsdae  # noqa: F401,E402
from methods import simcse  # noqa: F401,E402
from methods import ct  # noqa: F401,E402  (registers ct and ct-ibn)
from methods import mlm  # noqa: F401,E402
from methods import consert  # noqa: F401,E402
from methods import bertflow  # noqa: F401,E402
from methods import denosent  # noqa: F401,E402
from methods import paser  # noqa: F401,E402
from methods import supervised  # noqa: F401,E402  (sbert-mnrl, sbert-cosine, sbert-nli, sbert-stsb)
from methods import multitask  # noqa: F401,E402  (clm-ae, mlm-ae, simcse-clm/-mlm, consert-clm/-mlm)
