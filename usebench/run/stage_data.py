"""What a planned stage trains on: its data entry (recorded in the config and re-checked at run time), its step
budget, and the checks before training, each done once per distinct (config, data, seed) of a plan."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from usebench.train.config import config_to_dict
from usebench.train.loop import check_trainable
from usebench.train.plugin import TrainingData

__all__ = ["checked_data", "forget_checked_data", "stage_data"]


def forget_checked_data() -> None:
    """Start a plan afresh (the data may have changed since an earlier plan of this process)."""
    _CHECKED.clear()
    _LOADED.clear()


_CHECKED: dict[str, tuple[dict[str, Any], int]] = {}  # a stage's data entry and step budget, by what decides them


def checked_data(method: Any, cfg: Any, k: int, task: str, corpus: TrainingData | None, labeled_size: int | None,
                  seed: int, data_root: Path) -> tuple[dict[str, Any], int]:
    """The stage's data entry and step budget, its examples checked once per distinct (config, data, seed): the
    NLI stage of every nli-sts>m unit of a seed loads and checks AllNLI once."""
    own_task = method.data_kind == "sentences" or getattr(cfg, "train_data", "target") == "target"
    key = json.dumps([method.name, config_to_dict(cfg), task if own_task else None, corpus and corpus.sha256,
                      labeled_size, seed, k == 0, str(data_root)], sort_keys=True, default=str)
    if key not in _CHECKED:
        data, examples = stage_data(method, cfg, task, corpus, labeled_size, seed, data_root)
        if k == 0 or data["kind"] == "labeled":  # later sentence stages see the same corpus as the first
            steps = check_trainable(method, cfg, examples, seed)
        else:
            steps = method.total_steps(cfg, len(examples))
        _CHECKED[key] = (data, steps)
    return _CHECKED[key]


def stage_data(method: Any, cfg: Any, task: str, corpus: TrainingData | None, labeled_size: int | None, seed: int,
               data_root: Path) -> tuple[dict[str, Any], list[Any]]:
    """How a stage's training data is identified in the config (re-loaded and re-checked at run time), and
    the examples themselves (for the checks before training)."""
    if method.data_kind == "sentences":
        assert corpus is not None  # loaded by _plan_task for any chain with a sentence stage
        return {"kind": "corpus", "label": corpus.label, "sha256": corpus.sha256,
                "sentences": len(corpus.examples), "duplicates_dropped": corpus.duplicates_dropped}, corpus.examples
    data = _training_data(method, cfg, task, data_root, seed)
    entry = {"kind": "labeled", "label": data.label, "sha256": data.sha256, "examples": len(data.examples)}
    if labeled_size is not None:
        # The subset depends on the seed; its identity is the full set's hash plus the size, so the seeds of
        # one experiment stay comparable (subset_sha256 is a seed-derived key, ignored when averaging).
        full = _training_data(method, cfg.replace(labeled_size=None), task, data_root, seed)
        entry.update({"sha256": full.sha256, "examples": len(full.examples), "labeled_size": labeled_size,
                      "subset_sha256": data.sha256})
    return entry, data.examples


_LOADED: dict[tuple, Any] = {}  # labeled examples loaded by this plan, by what decides them


def _training_data(method: Any, cfg: Any, task: str, data_root: Path, seed: int) -> TrainingData:
    """``method.training_data``, loaded once per plan for each (method, source, subset, seed): AllNLI's ~1M rows
    are read once per seed, not once per unit (the run re-loads and re-checks them against the planned hash)."""
    source = getattr(cfg, "train_data", "target")
    key = (method.name, source, task if source == "target" else None, getattr(cfg, "labeled_size", None),
           getattr(cfg, "hard_negatives", None), cfg.max_chars, seed, str(data_root))
    if key not in _LOADED:
        _LOADED[key] = method.training_data(cfg, task, data_root, seed)
    return _LOADED[key]


