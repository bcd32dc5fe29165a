"""Method plugins (trainers), one module each, enrolled by one import line each."""
from __future__ import annotations

from benchmark.registry import METHODS  # noqa: F401

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
