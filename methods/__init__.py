"""Method plugins (trainers), one module each, enrolled by one import line each."""
from __future__ import annotations

from benchmark.registry import METHODS  # noqa: F401

# Enrolment: one line per method module (added as they land).
