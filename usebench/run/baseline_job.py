"""An untrained baseline row (`base`, `bm25`) as a job a launcher hands out like a unit.

With `--launcher local` the driver evaluates the baselines itself (it is the machine that runs everything). Under
Ray or SLURM the driver is a login node or a head without the GPUs (or with GPU 0 of the box the units need):
encoding the tasks there would fail with `--device cuda` or hold a GPU beside the units. So the baselines go to
the launcher as :class:`BaselineJob` objects and run where the units run, writing the same results as `bench eval`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.store import result_path
from usebench.plan.specs import BaselineSpec
from usebench.store.unit_state import UnitResult


@dataclass(frozen=True)
class BaselineJob:
    """What a launcher needs of a job (``run_id``, ``label``, ``seed``, ``row``, ``device``) plus the baseline."""

    name: str
    model: str
    pooling: str | None
    evals: tuple[str, ...]
    split: str = "test"
    batch_size: int = 64
    device: str | None = None
    strict: bool = False
    force: bool = False
    seed: int = 0

    @property
    def run_id(self) -> str:
        """The job's name in launcher records and logs (``.launch/``); its results go where `bench eval` puts
        them."""
        from usebench.store.records import model_slug

        return f"baseline-{self.name}-{model_slug(self.model)}"

    @property
    def label(self) -> str:
        return f"baseline {self.name}"

    @property
    def row(self) -> str:
        return f"{self.name} ({self.model})"


def baseline_job(spec: BaselineSpec, opts: Any, split: str) -> BaselineJob:
    """The job of one baseline row on the plan's ``split`` (BM25 needs no GPU: it asks for none); ``opts``: the
    grid's :class:`usebench.run.grid.Execution` (its device, batch size, strictness and force)."""
    device = "cpu" if spec.name == "bm25" else opts.device
    return BaselineJob(spec.name, spec.model, spec.pooling, tuple(spec.evals), split, opts.batch_size, device,
                       opts.strict, opts.force)


def run_baseline_job(job: BaselineJob, data_root: Path, results_dir: Path) -> UnitResult:
    """Evaluate the baseline (finished evaluations of the same data are kept, as `bench eval` does)."""
    from usebench import tasks  # noqa: F401  (enrols the adapters: a launcher's worker process starts with none)
    from usebench.plan.eval_options import EvalOptions
    from usebench.run.evaluation import evaluate_model

    t0 = time.perf_counter()
    ev_opts = EvalOptions(model=job.model, pooling=job.pooling, batch_size=job.batch_size, device=job.device)
    res = evaluate_model(ev_opts, ",".join(job.evals), job.split, Path(data_root), Path(results_dir),
                         strict=job.strict, force=job.force)
    run_dir = Path(results_dir) / res.run_id
    result = UnitResult(job.run_id, run_dir, job.row, skipped=list(res.skipped), training=[])
    for task in job.evals:
        path = result_path(results_dir, res.run_id, task, job.split)
        if path.is_file():
            result.results.append((task, path))
    result.seconds = time.perf_counter() - t0
    return result
