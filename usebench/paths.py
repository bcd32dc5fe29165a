"""The data root and the results directory."""
from __future__ import annotations

import os
from pathlib import Path


def default_data_root() -> Path:
    """``$BENCH_DATA``, else ``~/.cache/usebench/data``."""
    env = os.environ.get("BENCH_DATA")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "usebench" / "data"


def default_results_dir() -> Path:
    return Path(os.environ.get("BENCH_RESULTS", "results"))


def default_cache_dir() -> Path:
    return Path(os.environ.get("BENCH_CACHE", Path.home() / ".cache" / "usebench" / "embeddings"))
