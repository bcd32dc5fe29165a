"""The TSDAE paper's configuration search (App. A, Tables 5-7) as the store records it: which stored results are
runs of the search, and the configuration keys it varies. The search itself, which trains them, is
:mod:`usebench.reproduce.config_search`; the report's App. A tables read the store through this module only.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

METHOD, TASK, SPLIT = "tsdae", "stsb", "dev"  # a search run: one TSDAE stage, selected on and scored on STSb dev
SEARCHED = ("noise", "noise_ratio", "pooling", "tie_encoder_decoder")


def app_a_setting(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The App. A setting of a stored result (the searched keys, model, budget, dev protocol, training corpus),
    or None when the result is not a single TSDAE stage selected on and scored on STSb dev."""
    config = record.get("config") or {}
    cfg, corpus = config.get("config") or {}, config.get("corpus") or {}
    if (config.get("method") != METHOD or record["task"]["name"] != TASK or record["task"].get("split") != SPLIT
            or cfg.get("dev_task") != TASK or any(k not in cfg for k in SEARCHED)):
        return None
    return {**{k: cfg[k] for k in SEARCHED}, "model": cfg.get("model"), "max_steps": cfg.get("max_steps"),
            "dev_task": cfg.get("dev_task"), "dev_every": cfg.get("dev_every"), "corpus": corpus.get("label")}
