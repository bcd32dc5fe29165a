"""What `bench eval` will evaluate, decided before a model loads: its options (checked on creation), the model's
description, configuration and precision read without its weights (:func:`describe_model`), and the run id its
results are filed under (:func:`eval_run_id`). `bench eval`'s runner (usebench/run/evaluation.py), the API and
`bench reproduce`'s dry run (which baselines' results still hold) ask the same functions.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.eval.subsample import Limit
from usebench.store.records import run_id


@dataclass(frozen=True)
class EvalOptions:
    """How to build the scorer for `bench eval` (checked on creation: a bad value never reaches a model)."""

    model: str = "minilm"
    pooling: str | None = None
    max_length: int | None = None
    batch_size: int = 64
    device: str | None = None
    cache_dir: Path | None = None
    precision: str = "fp32"  # fp32 on every device; "bf16" (autocast) only when asked for
    allow_partial: bool = False  # evaluate data that is not the full release (recorded in each result)
    show_progress: bool = True  # the encoder's progress bar (usebench.evaluate(show_progress=False) turns it off)
    limit: int | None = None  # a quick evaluation: at most this many items per subset (None: every item)
    limit_seed: int = 0  # which seeded subsample

    def __post_init__(self) -> None:
        from usebench.eval.encoder import check_positive, check_precision

        check_positive(self.batch_size, "--batch-size")
        check_positive(self.max_length, "--max-length")
        check_precision(self.precision)
        self.subsample  # noqa: B018  (a bad --limit or --limit-seed fails here, before any work)

    @property
    def subsample(self) -> Limit | None:
        """The :class:`~usebench.eval.subsample.Limit` asked for, None for a full evaluation."""
        return None if self.limit is None else Limit(self.limit, self.limit_seed)


def describe_model(opts: EvalOptions) -> tuple[dict[str, Any], dict[str, Any], str | None]:
    """(method description, run config, precision) of ``opts.model`` without loading its weights."""
    from usebench.eval.bm25 import MODEL_NAMES, bm25_method

    if opts.model in MODEL_NAMES:  # lexical baseline: `--model bm25 | bm25-elasticsearch | bm25-anserini`
        _, method, config = bm25_method(opts.model)
        return method, config, None
    if opts.model.startswith("wordvec:"):  # bag of words: `--model wordvec:PATH` (the paper's Avg. GloVe row)
        from usebench.eval.wordvec import WordVecEncoder, vectors_sha256

        method = {"name": "wordvec", "base_model": opts.model, "pooling": WordVecEncoder.pooling,
                  "max_length": WordVecEncoder.max_length}
        return method, {**method, "vectors_sha256": vectors_sha256(opts.model.removeprefix("wordvec:"))[:16]}, None
    from usebench.eval.encoder import pick_device, precision_label, resolve_settings
    from usebench.eval.models import model_fingerprint, resolve_model

    pick_device(opts.device)  # a device this machine lacks fails here, before any work
    info = resolve_model(opts.model)
    pooling, max_length = resolve_settings(info, opts.pooling, opts.max_length)
    method = {"name": info.method.get("method", "base"), "base_model": opts.model, "pooling": pooling,
              "max_length": max_length}
    # The precision is in the config, hence in the run id: a bf16 result is never reused or averaged as fp32.
    config = {**method, "model_fingerprint": model_fingerprint(info)[:16], "precision": opts.precision}
    if not info.method and info.pooling and Path(info.path, "modules.json").is_file():
        method["sentence_encoder"] = True  # an out-of-the-box sentence-transformers model (report block)
    from usebench.eval.models import recorded_backbone

    # By content, for the report's pairing with a published row; not in the config (the run id is unchanged).
    method["backbone"] = recorded_backbone(opts.model)
    return method, config, precision_label(opts.precision)


def eval_run_id(method_name: str, model: str, config: dict[str, Any], seed: int,
                limit: Limit | None) -> tuple[str, dict[str, Any]]:
    """(run id, config) of an evaluation: a ``limit``ed one has the subsample in its config and ``-limit<N>`` in its
    model slug, so it is filed apart from the full results of the same model."""
    from usebench.store.records import model_slug

    slug = model_slug(model)
    if limit is not None:
        config, slug = {**config, "limit": limit.config()}, f"{slug}-limit{limit.n}"
    # The method name comes from a checkpoint's method.json: slug it so the run id is always a safe folder name.
    return run_id(model_slug(method_name), slug, config, seed), config
