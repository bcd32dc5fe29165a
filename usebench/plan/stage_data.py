"""What a planned stage trains on: its data entry (recorded in the config and re-checked at run time), its step
budget, and the checks before training.

Planning cost grows with the distinct stages, not with their placements (issue 37). Within a planning session
(:mod:`usebench.data.memo`) a corpus is cleaned once for every config that reads it and a (method, config, corpus)
is checked once for every seed; labeled data is checked once through the method's census (every seed's examples, or
subset, known to pass the per-example checks: then only the count is left to check). What the seed decides is
done per seed: the first batch drawn, and the whole check where no census vouches for the draws. Facts that need a
large file read (a corpus' counts, a config's kept lines, a census) come from :mod:`usebench.data.digests` while the
files are unchanged. The checks and refusals are those of :func:`usebench.train.loop.check_trainable`, which the
unit runs again before it trains.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.data.digests import fact
from usebench.data.labeled import check_subset_size
from usebench.data.memo import remember
from usebench.train.config import config_to_dict
from usebench.train.loop import clean_corpus, prepared_corpus_size, trainable_size
from usebench.train.plugin import TrainingData
from usebench.train.sampling import run_steps

__all__ = ["checked_data", "stage_data"]


def checked_data(method: Any, cfg: Any, k: int, task: str, corpus: TrainingData | None, labeled_size: int | None,
                 seed: int, data_root: Path) -> tuple[dict[str, Any], int]:
    """The stage's data entry and step budget, its examples checked as training will check them."""
    if method.data_kind == "sentences":
        return _sentence_stage(method, cfg, k, corpus, seed)
    return _labeled_stage(method, cfg, task, labeled_size, seed, data_root)


def _sentence_stage(method: Any, cfg: Any, k: int, corpus: TrainingData | None,
                    seed: int) -> tuple[dict[str, Any], int]:
    """A stage on the unit's corpus; only the first stage checks it (later ones see the same sentences)."""
    assert corpus is not None  # loaded by _plan_task for any chain with a sentence stage
    entry = {"kind": "corpus", "label": corpus.label, "sha256": corpus.sha256, "sentences": len(corpus.examples),
             "duplicates_dropped": corpus.duplicates_dropped}
    if k > 0:
        return entry, run_steps(method, cfg, len(corpus.examples))

    def size() -> int:  # check_trainable's seed-free part, on the corpus cleaned once for every config
        cleaned = remember(("cleaned-corpus", corpus.sha256, cfg.max_chars),
                           lambda: clean_corpus(corpus.examples, cfg.max_chars))
        return prepared_corpus_size(method, cfg, cleaned, method.sentences_per_step(cfg))

    method.pooling_writer(cfg)  # an unexportable pooling fails before any training
    n = remember(("sentence-stage", method.name, cfg, corpus.sha256), lambda: fact(
        "sentence-stage", [method.name, _config(cfg), corpus.sha256], size, content=True))
    _first_batch(method, cfg, n, seed)
    return entry, run_steps(method, cfg, n)


def _first_batch(method: Any, cfg: Any, n: int, seed: int) -> None:
    """The seed's part of the check: its first batch can be drawn from ``n`` examples. A pure function of the
    method, config, count and seed, so a digest remembers that it could (a corpus' permutation per seed is the
    dearest part of a plan's checks)."""
    fact("first-batch", [method.name, _config(cfg), n, seed],
         lambda: len(method.batch_indices(cfg, n, 0, seed, 0, 1)), content=True)


def _config(cfg: Any) -> dict[str, Any]:
    """``config_to_dict(cfg)``, once per config in a session (a key of several facts)."""
    return remember(("config-dict", type(cfg), cfg), lambda: config_to_dict(cfg))


def _labeled_stage(method: Any, cfg: Any, task: str, labeled_size: int | None, seed: int,
                   data_root: Path) -> tuple[dict[str, Any], int]:
    """A stage on labeled examples: from the method's census (:meth:`Method.example_census`) when every seed's
    examples are known to pass the per-example checks, else each seed's examples loaded and checked."""
    full_cfg = cfg.replace(labeled_size=None) if labeled_size is not None else cfg
    own = _own_task(cfg, task)
    census = remember(("census", method.name, full_cfg, own, str(data_root)),
                      lambda: _census(method, full_cfg, task, own, data_root))
    if census is not None and census.clean:
        return _census_stage(method, cfg, census, labeled_size, seed)
    entry, n = _checked_examples(method, cfg, task, labeled_size, seed, data_root)  # each seed's own draw
    return entry, run_steps(method, cfg, n)


@dataclass(frozen=True)
class Census:
    """:meth:`Method.example_census`'s answer, as the digests keep it."""

    label: str
    count: int
    files: tuple[str, ...]
    sha256: str
    clean: bool


def _census(method: Any, cfg: Any, task: str, own: str | None, data_root: Path) -> Census | None:
    """The method's census of ``cfg``'s examples, from the digests while the files it read are unchanged."""
    def compute() -> dict[str, Any] | None:
        found = method.example_census(cfg, task, data_root)
        return None if found is None else {"label": found.label, "count": found.count, "files": list(found.files),
                                           "sha256": found.sha256, "clean": found.clean}

    value = fact("census", [method.name, _config(cfg), own, str(Path(data_root).resolve())], compute)
    return None if value is None else Census(value["label"], value["count"], tuple(value["files"]),
                                             value["sha256"], value["clean"])


def _census_stage(method: Any, cfg: Any, census: Any, labeled_size: int | None,
                  seed: int) -> tuple[dict[str, Any], int]:
    """The entry and budget :func:`stage_data` and :func:`check_trainable` give, from a clean census: every draw
    passes the per-example checks, so the count check is all that is left."""
    entry = {"kind": "labeled", "label": census.label, "sha256": census.sha256, "examples": census.count}
    n = census.count
    if labeled_size is not None:
        check_subset_size(labeled_size, census.count, f"the {census.label} training set")
        entry.update({"label": f"{census.label}[{labeled_size}]", "labeled_size": labeled_size,
                      "subset_sha256": f"{census.sha256}:{labeled_size}"})
        n = labeled_size
    method.pooling_writer(cfg)
    method.check_example_count(cfg, n, method.sentences_per_step(cfg))
    _first_batch(method, cfg, n, seed)
    return entry, run_steps(method, cfg, n)


def _checked_examples(method: Any, cfg: Any, task: str, labeled_size: int | None, seed: int,
                      data_root: Path) -> tuple[dict[str, Any], int]:
    """(entry, examples kept): the examples of ``seed`` loaded and checked one by one, as training checks them."""
    entry, examples = stage_data(method, cfg, task, None, labeled_size, seed, data_root)
    return entry, trainable_size(method, cfg, examples, seed)


def _own_task(cfg: Any, task: str) -> str | None:
    """The target task when the stage's data is the target's own, else None (the source names the data)."""
    return task if getattr(cfg, "train_data", "target") == "target" else None


def stage_data(method: Any, cfg: Any, task: str, corpus: TrainingData | None, labeled_size: int | None, seed: int,
               data_root: Path) -> tuple[dict[str, Any], list[Any]]:
    """How a stage's training data is identified in the config (re-loaded and re-checked at run time), and
    the examples themselves (for the checks before training)."""
    if method.data_kind == "sentences":
        assert corpus is not None  # loaded by _plan_task for any chain with a sentence stage
        return {"kind": "corpus", "label": corpus.label, "sha256": corpus.sha256,
                "sentences": len(corpus.examples), "duplicates_dropped": corpus.duplicates_dropped}, corpus.examples
    data = method.training_data(cfg, task, data_root, seed)
    entry = {"kind": "labeled", "label": data.label, "sha256": data.sha256, "examples": len(data.examples)}
    if labeled_size is not None:
        # The subset depends on the seed; its identity is the full set's hash plus the size, so the seeds of
        # one experiment stay comparable (subset_sha256 is a seed-derived key, ignored when averaging).
        full = method.training_data(cfg.replace(labeled_size=None), task, data_root, seed)
        entry.update({"sha256": full.sha256, "examples": len(full.examples), "labeled_size": labeled_size,
                      "subset_sha256": data.sha256})
    return entry, data.examples
