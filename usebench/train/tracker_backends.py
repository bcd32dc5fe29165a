"""The three trackers behind :mod:`usebench.train.trackers`, each offline by default and each resumable.

- TensorBoard (``usebench[tensorboard]``): event files in ``<folder>/tensorboard/`` through torch's
  ``SummaryWriter``; a resumed stage purges the steps after its train state (``purge_step``), so the curve is
  the one log.jsonl holds. The tags and the resolved config are a text summary at step 0.
- MLflow (``usebench[mlflow]``): ``$MLFLOW_TRACKING_URI`` when set, else a local store in the results directory,
  ``sqlite:///<results>/.mlflow/mlflow.db`` (MLflow 3 refuses the old ``./mlruns`` file store by default; ``mlflow
  ui --backend-store-uri`` that URI shows it). One experiment per grid, the resolved config as params, the tags as
  tags; a resumed stage logs into the run whose id its folder kept.
- Weights & Biases (``usebench[wandb]``): offline (``<folder>/wandb/offline-run-*``, uploaded later with ``wandb
  sync``) unless ``$WANDB_MODE`` says otherwise; project ``$WANDB_PROJECT`` or ``usebench``, the grid as the group,
  the method as the job type. A resumed stage continues the run id its folder kept (offline: a second run folder of
  the same id, which ``wandb sync`` merges).
"""
from __future__ import annotations

import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class TrackContext:
    """How one folder (a unit's run directory or a stage home) appears in the trackers."""

    home: Path
    experiment: str  # one per grid: every unit of a `bench run` or a recipe side by side
    run_name: str
    tags: dict[str, str]  # run id, recipe, tables, method, seed, ...
    params: dict[str, Any]  # the resolved config (nested; backends flatten it as they need)
    results_dir: Path  # MLflow's local store lives under it


class Backend(Protocol):
    """One tracker's run, opened for a folder (the classes below)."""

    def log(self, step: int, metrics: dict[str, float]) -> None: ...

    def final(self, step: int, metrics: dict[str, float]) -> None: ...

    def close(self) -> None: ...


Opener = Callable[[TrackContext, dict[str, Any], int], tuple[Backend, dict[str, Any]]]

MLFLOW_MAX_PARAM = 6000  # characters of a param value MLflow stores (longer values are cut, with "...")
MLFLOW_BATCH = 100  # params per log_batch call (MLflow's limit)


def flat(config: Any, prefix: str = "") -> dict[str, str]:
    """A nested config as ``{"config.lr": "3e-05", ...}`` (lists and None as JSON), for trackers with flat params."""
    if isinstance(config, dict) and config:
        out: dict[str, str] = {}
        for k, v in config.items():
            out.update(flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix or "value": config if isinstance(config, str) else json.dumps(config, default=str)}


class TensorBoard:
    """Scalars in ``<folder>/tensorboard``."""

    def __init__(self, context: TrackContext, state: dict[str, Any], start: int):
        from torch.utils.tensorboard import SummaryWriter  # ImportError without the tensorboard package

        log_dir = context.home / "tensorboard"
        self.writer = SummaryWriter(str(log_dir), purge_step=start + 1 if start else None)
        if not state:  # a new run: what it is, once
            about = {"run": context.run_name, "experiment": context.experiment, "tags": context.tags,
                     "config": context.params}
            self.writer.add_text("usebench/run", "```json\n" + json.dumps(about, indent=2, default=str) + "\n```", 0)
        self.record = {"log_dir": str(log_dir)}

    def log(self, step: int, metrics: dict[str, float]) -> None:
        for name, value in metrics.items():
            self.writer.add_scalar(name, value, step)

    def final(self, step: int, metrics: dict[str, float]) -> None:
        self.log(step, metrics)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def mlflow_uri(results_dir: Path) -> str:
    """``$MLFLOW_TRACKING_URI``, else the results directory's local store (its folder is made here)."""
    configured = os.environ.get("MLFLOW_TRACKING_URI")
    if configured:
        return configured
    folder = Path(results_dir).resolve() / ".mlflow"  # hidden: the store's readers skip it
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'mlflow.db'}"


class MLflow:
    """A run in an MLflow store, through ``MlflowClient`` (no global active run: units of a process never mix)."""

    def __init__(self, context: TrackContext, state: dict[str, Any], start: int):
        from mlflow.tracking import MlflowClient  # ImportError without mlflow

        logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)  # "Creating initial tables", per unit
        uri = mlflow_uri(context.results_dir)
        self.client = MlflowClient(tracking_uri=uri)
        run_id = state.get("run_id") if state.get("tracking_uri") == uri else None
        if run_id is not None and not self._exists(run_id):
            run_id = None  # the store was moved or wiped: a new run
        if run_id is None:
            run_id = self._create(context)
        else:
            self.client.update_run(run_id, status="RUNNING")
        self.run_id = run_id
        self.record = {"tracking_uri": uri, "run_id": run_id}

    def _exists(self, run_id: str) -> bool:
        try:
            self.client.get_run(run_id)
            return True
        except Exception:  # noqa: BLE001  (MlflowException: no such run in this store)
            return False

    def _create(self, context: TrackContext) -> str:
        from mlflow.entities import Param

        found = self.client.get_experiment_by_name(context.experiment)
        experiment = found.experiment_id if found else self.client.create_experiment(context.experiment)
        tags = {f"usebench.{k}": v[:5000] for k, v in context.tags.items()}
        run = self.client.create_run(experiment, run_name=context.run_name, tags=tags)
        params = [Param(k, v if len(v) <= MLFLOW_MAX_PARAM else v[:MLFLOW_MAX_PARAM - 3] + "...")
                  for k, v in flat(context.params).items()]
        for i in range(0, len(params), MLFLOW_BATCH):
            self.client.log_batch(run.info.run_id, params=params[i:i + MLFLOW_BATCH])
        return run.info.run_id

    def log(self, step: int, metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, v, now, step) for k, v in metrics.items()])

    def final(self, step: int, metrics: dict[str, float]) -> None:
        self.log(step, metrics)

    def close(self) -> None:
        self.client.set_terminated(self.run_id, status="FINISHED")


class WandB:
    """A W&B run in ``<folder>/wandb``, offline unless ``$WANDB_MODE`` is set."""

    def __init__(self, context: TrackContext, state: dict[str, Any], start: int):
        import wandb  # ImportError without wandb

        run_id = state.get("id") or secrets.token_hex(8)
        tags = [f"{k}:{v}"[:64] for k, v in context.tags.items() if k in ("recipe", "tables", "method", "seed", "task")]
        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT") or "usebench", group=context.experiment[:128],
            job_type=context.tags.get("method", "")[:64] or None, name=context.run_name, id=run_id,
            resume="allow", dir=str(context.home), config={**context.params, "usebench": context.tags},
            tags=tags, mode=None if os.environ.get("WANDB_MODE") else "offline",
            settings=wandb.Settings(silent=True, console="off", x_disable_stats=True))
        self.record = {"id": run_id, "project": self.run.project}

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.run.log(metrics, step=step)

    def final(self, step: int, metrics: dict[str, float]) -> None:
        self.run.summary.update(metrics)

    def close(self) -> None:
        self.run.finish()


def _opener(cls: type) -> Opener:
    def open_backend(context: TrackContext, state: dict[str, Any], start: int) -> tuple[Backend, dict[str, Any]]:
        backend = cls(context, state, start)
        return backend, backend.record

    return open_backend


OPENERS: dict[str, Opener] = {"tensorboard": _opener(TensorBoard), "mlflow": _opener(MLflow), "wandb": _opener(WandB)}
