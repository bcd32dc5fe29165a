"""A stage's learning curve on a task's metric: :func:`curve_evaluator` is the scorer a unit hands to the training
loop for ``curve_task`` / ``curve_steps`` (:mod:`usebench.train.config`). It scores the test split: the curve is
read beside the run's own test result, never used to pick a checkpoint (the loop keeps no curve point's weights).
Each point is a ``log.jsonl`` line of the stage: ``{"step", "curve_task", "curve_split", "curve_metric",
"curve_score", "curve_scores", "curve_items", "curve_data_sha256"}`` (the data by content, as every result)."""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from usebench.errors import NonFiniteScoreError

CURVE_SPLIT = "test"


def curve_evaluator(cfg: Any, spec: Any, data_root: Path) -> Callable[[Path], dict[str, Any]]:
    """checkpoint dir -> the fields of a curve point: ``cfg.curve_task``'s test split scored with the export's own
    pooling; a non-finite main score is an error (never written)."""
    from usebench.eval.encoder import HFEncoder
    from usebench.eval.evaluate import load_split, score_split
    from usebench.eval.scorer import DenseScorer

    loaded: list[Any] = []  # the split, read and checked at the first point, scored at every one

    def score(checkpoint: Path) -> dict[str, Any]:
        if not loaded:
            loaded.append(load_split(cfg.curve_task, CURVE_SPLIT, data_root))
        scorer = DenseScorer(HFEncoder(str(checkpoint), batch_size=spec.batch_size, device=spec.device,
                                       show_progress=False))
        ev = score_split(loaded[0], scorer)
        if not math.isfinite(ev.main_score):
            raise NonFiniteScoreError(f"curve point of {checkpoint}: {cfg.curve_task} {ev.main_metric} is "
                                      f"{ev.main_score} (the encoder's embeddings are not finite)")
        return {"curve_task": cfg.curve_task, "curve_split": CURVE_SPLIT, "curve_metric": ev.main_metric,
                "curve_score": ev.main_score, "curve_scores": {k: float(v) for k, v in ev.scores.items()},
                "curve_items": ev.n_queries, "curve_data_sha256": ev.data_sha256}

    return score


def curve_points(lines: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The curve points of a stage's ``log.jsonl`` lines, by step (a resumed run's repeat: the last one)."""
    return {int(line["step"]): line for line in lines if "curve_score" in line}
