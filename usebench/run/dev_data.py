"""The dev data that selected a stage's checkpoint, by content: what a published row's "best STSb-dev checkpoint"
is compared on (issue 38). A dev task is a name in the stage's config; its files are hashed each time the stage
evaluates them (:func:`usebench.eval.evaluate.evaluate` gives ``data_sha256``), and every distinct sha256 is kept in
``<stage home>/dev_data.json``, so a result says which data chose its checkpoint (two values: the data changed
while it trained, which no published row's setting is). :func:`dev_evaluator` is the scorer a unit selects its
checkpoints with."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from usebench.store import read_json, write_json_atomic

DEV_DATA = "dev_data.json"


def read_dev_data(home: Path) -> dict[str, list[str]] | None:
    """``{dev task: [sha256 seen, ...]}`` of a stage home, None when its checkpoint was not selected on a dev task
    (or was selected before this record existed)."""
    data = read_json(Path(home) / DEV_DATA)
    return {str(k): [str(s) for s in v] for k, v in data.items()} if isinstance(data, dict) else None


def note_dev_data(home: Path, task: str, sha256: str) -> None:
    """Record that the stage in ``home`` evaluated ``task``'s dev split with data of this sha256."""
    seen = read_dev_data(home) or {}
    shas = seen.setdefault(task, [])
    if sha256 not in shas:
        shas.append(sha256)
        Path(home).mkdir(parents=True, exist_ok=True)
        write_json_atomic(Path(home) / DEV_DATA, seen)


def unit_dev_data(stage_homes: list[Path]) -> list[dict[str, Any] | None]:
    """Each stage's dev data record, in stage order (what a result's ``method.dev_data`` holds)."""
    return [read_dev_data(home) for home in stage_homes]


def dev_evaluator(cfg: Any, spec: Any, data_root: Path, home: Path):
    """checkpoint dir -> ``cfg.dev_metric`` (default: the main score) on ``cfg.dev_task``'s dev split (several
    tasks: the mean of their scores); each evaluation's data sha256 is kept in ``home`` (usebench/run/dev_data.py)."""
    from usebench.eval.encoder import HFEncoder
    from usebench.eval.evaluate import evaluate
    from usebench.eval.scorer import DenseScorer
    from usebench.train.config import dev_tasks

    def score(ckpt: Path) -> float:
        scorer = DenseScorer(HFEncoder(str(ckpt), batch_size=spec.batch_size, device=spec.device, show_progress=False))
        scores = []
        for name in dev_tasks(cfg.dev_task):
            ev = evaluate(name, scorer, "dev", data_root)
            note_dev_data(home, name, ev.data_sha256)  # the content that picks the checkpoint, not the task's name
            scores.append(ev.scores[cfg.dev_metric] if cfg.dev_metric else ev.main_score)
        return sum(scores) / len(scores)

    return score
