"""usebench: a reproducible benchmark for unsupervised sentence-embedding learning."""
from __future__ import annotations

__version__ = "0.1.0"
