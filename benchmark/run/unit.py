"""Running one unit: train its chain stage by stage, then evaluate the final encoder on the unit's tasks.

:func:`run_unit` is the one function every launcher calls (in this process, a Ray worker or a SLURM job). It
reads its inputs from the data root and writes only into its own run directory ``<results>/<run_id>/``:

- ``config.json``, ``env.json``; ``method.json`` (the final stage's) and ``<task>/<split>.json`` per evaluation;
- a single-stage unit trains in the run directory itself (``log.jsonl``, ``checkpoint/``, ``train_state/``);
  a chain keeps each stage in ``stages/<k>-<method>/`` with its own ``config.json``, log and checkpoint;
  stage k+1 starts from stage k's exported checkpoint;
- ``.lock`` while a process runs the unit (:mod:`benchmark.run.lock`); ``failed.json`` when it failed (the
  error and where to look), removed by the next successful run; ``unit.log``, everything the unit printed, every
  attempt appended (:mod:`benchmark.run.console`).
A killed unit resumes: finished stages are reused (their export is checked against the stage's config hash),
the stage that was running continues from its last train state, and finished evaluations are kept.
"""
from __future__ import annotations

import json
import platform
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.errors import BenchError, MissingDataError
from benchmark.results import now_iso, result_path, save_result, write_json_atomic
from benchmark.run.console import UNIT_LOG, unit_console
from benchmark.run.lock import LOCK_FILE, UnitLock, UnitLockedError, UnitLockLostError
from benchmark.run.plan import StageSpec, UnitSpec

FAILED_FILE = "failed.json"
STAGES_DIR = "stages"


@dataclass
class UnitResult:
    """What a unit did: its results, skips, how its training went, and how long it took."""

    run_id: str
    run_dir: Path
    row: str
    state: str = "done"  # done | locked (another process holds it) | failed
    results: list[tuple[str, Path]] = field(default_factory=list)  # (task, result file)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    training: list[str] = field(default_factory=list)  # per stage: trained | resumed at N | reused
    seconds: float = 0.0
    error: str | None = None
    log: Path | None = None  # the unit's console log (a launcher's own log when the unit never started)
    attempts: int = 1


def say(message: str) -> None:
    """A progress line on stderr (flushed, so logs show it when output is not a terminal)."""
    print(message, file=sys.stderr, flush=True)


def run_unit(spec: UnitSpec, data_root: str | Path, results_dir: str | Path) -> UnitResult:
    """Train (or resume, or reuse) and evaluate one unit; a unit another process holds is skipped."""
    import methods  # noqa: F401  (enrols the plugins: a launcher's worker process starts with none)
    import tasks  # noqa: F401
    from benchmark.train.runtime import init_distributed

    data_root, run_dir = Path(data_root), Path(results_dir) / spec.run_id
    result = UnitResult(spec.run_id, run_dir, spec.row)
    t0 = time.perf_counter()
    dist = init_distributed()  # under torchrun every rank trains; rank 0 alone writes, locks and evaluates
    lock = UnitLock(run_dir) if dist.world == 1 else None
    try:
        if lock is not None:
            lock.acquire()
    except UnitLockedError as e:
        result.state, result.error = "locked", str(e)
        result.skipped.append((spec.run_id, str(e)))
        return result
    try:
        with unit_console(run_dir, enabled=dist.main) as log:
            result.log = log
            _prepare_dir(spec, run_dir, dist)
            checkpoint = _train_chain(spec, data_root, run_dir, dist, result, lock)
            if dist.main:
                _evaluate(spec, checkpoint, data_root, Path(results_dir), result)
                (run_dir / FAILED_FILE).unlink(missing_ok=True)
    except UnitLockLostError as e:  # another process holds the unit now: it is not this process's to mark
        result.state, result.error = "locked", str(e)
        return result
    except BaseException as e:
        if dist.main:
            mark_failed(run_dir, e)
        raise
    finally:
        if lock is not None:
            lock.release()
    result.seconds = time.perf_counter() - t0
    return result


def finished_unit(spec: UnitSpec, data_root: str | Path, results_dir: str | Path,
                  data_hashes: dict[tuple[str, str], str | None] | None = None) -> UnitResult | None:
    """The unit's stored outcome when there is nothing left to do (trained, not failed, not held by a process,
    and every evaluation stored on the data now in the data root), else None. Launchers hand out only units
    for which this is None, so re-running a command runs only what is missing."""
    from benchmark.registry import TASKS

    run_dir = Path(results_dir) / spec.run_id
    if spec.force or not (run_dir / "method.json").is_file() or (run_dir / FAILED_FILE).exists() \
            or (run_dir / LOCK_FILE).exists():
        return None
    result = UnitResult(spec.run_id, run_dir, spec.row, training=["done earlier"], log=run_dir / UNIT_LOG)
    hashes = {} if data_hashes is None else data_hashes
    for name in spec.evals:
        task = TASKS.get(name)
        if spec.split not in task.splits and not spec.strict:
            result.skipped.append((name, f"task {name!r} has no {spec.split!r} split (it has: "
                                         f"{', '.join(task.splits)})"))
            continue
        path = result_path(results_dir, spec.run_id, name, spec.split)
        if (name, spec.split) not in hashes:
            try:
                hashes[name, spec.split] = task.data_sha256(Path(data_root), spec.split)
            except MissingDataError:
                hashes[name, spec.split] = None
        stored = _stored_hash(path)
        if stored is None or stored != hashes[name, spec.split]:
            return None
        result.results.append((name, path))
    return result


def _stored_hash(path: Path) -> str | None:
    """The data sha256 a stored result was computed on (None when the file is absent or unreadable)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))["task"]["data_sha256"]
    except (OSError, KeyError, ValueError):
        return None


def _prepare_dir(spec: UnitSpec, run_dir: Path, dist: Any) -> None:
    if dist.main:
        if spec.force:  # start over, keeping the lock this process holds and the log it writes
            for child in run_dir.iterdir():
                if child.name not in (LOCK_FILE, UNIT_LOG):
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(run_dir / "config.json", {**spec.config, "seed": spec.seed, "run_id": spec.run_id})
        if not (run_dir / "env.json").is_file():
            write_json_atomic(run_dir / "env.json", {**env_info(spec.device), "world_size": dist.world})
    if dist.world > 1:
        import torch.distributed

        torch.distributed.barrier()


def stage_dir(run_dir: Path, spec: UnitSpec, k: int) -> Path:
    """Where stage ``k`` trains: the run directory for a single stage, ``stages/<k+1>-<method>/`` in a chain."""
    if len(spec.stages) == 1:
        return run_dir
    return run_dir / STAGES_DIR / f"{k + 1}-{spec.stages[k].method}"


def _train_chain(spec: UnitSpec, data_root: Path, run_dir: Path, dist: Any, result: UnitResult,
                 lock: UnitLock | None = None) -> Path:
    """Train every stage in order; returns the final checkpoint. Training stops after the step in which the
    unit's lock was found taken over (:meth:`UnitLock.check`)."""
    from benchmark.registry import METHODS
    from benchmark.train.loop import CHECKPOINT_DIR, STATE_DIR, train

    previous: Path | None = None
    corpus = None
    for k, stage in enumerate(spec.stages):
        method = METHODS.get(stage.method)
        values = dict(stage.values)
        if previous is not None:
            values["model"] = str(previous)
        cfg = method.config(stage.preset, values)
        if stage.data["kind"] == "corpus":
            corpus = corpus or _load_corpus(spec, data_root)
            examples = corpus.examples
        else:
            examples = _load_labeled(method, cfg, spec, stage, data_root)
        out = stage_dir(run_dir, spec, k)
        run_config = {**spec.config, "seed": spec.seed} if len(spec.stages) == 1 else {
            **spec.config, "seed": spec.seed, "stage": k + 1}
        if dist.main and len(spec.stages) > 1:
            write_json_atomic(out / "config.json", {"stage": k + 1, "method": stage.method, "preset": stage.preset,
                                                    "values": values, "data": stage.data, "run_id": spec.run_id})
        note = _training_note(out, CHECKPOINT_DIR, STATE_DIR)
        say(f"  stage {k + 1}/{len(spec.stages)} {stage.method}: {note}" if len(spec.stages) > 1
            else f"  {stage.method}: {note}")
        dev_eval = _dev_evaluator(cfg, spec, data_root) if cfg.dev_every else None
        train(method, cfg, examples, out, seed=spec.seed, device=spec.device, resume=True,
              show_progress=spec.show_progress, run_config=run_config, dev_eval=dev_eval,
              on_step=None if lock is None else lambda _step: lock.check())
        result.training.append(note)
        previous = out / CHECKPOINT_DIR
    if dist.main:
        shutil.copyfile(previous / "method.json", run_dir / "method.json")
    return previous


def _training_note(out: Path, checkpoint_dir: str, state_dir: str) -> str:
    """What is about to happen to a stage: reused (finished export), resumed (a train state), or trained."""
    if (out / checkpoint_dir / "method.json").is_file():
        return "reusing its finished checkpoint"
    state = out / state_dir / "state.pt"
    if state.is_file():
        return "resuming from its last train state"
    return "training"


def _load_corpus(spec: UnitSpec, data_root: Path):
    from benchmark.run.corpus import load_corpus

    corpus = load_corpus(spec.task, spec.corpus_files, spec.corpus_size, data_root)
    expected = spec.stages[0].data if spec.stages[0].data["kind"] == "corpus" else next(
        s.data for s in spec.stages if s.data["kind"] == "corpus")
    _check_same(expected["sha256"], corpus.sha256, corpus.label)
    return corpus


def _load_labeled(method: Any, cfg: Any, spec: UnitSpec, stage: StageSpec, data_root: Path) -> list[Any]:
    data = method.training_data(cfg, spec.task, data_root, spec.seed)
    _check_same(stage.data.get("subset_sha256", stage.data["sha256"]), data.sha256, data.label)
    return data.examples


def _check_same(planned: str, found: str, label: str) -> None:
    if planned != found:
        raise BenchError(f"training data {label} changed since the run was planned (sha256 {planned[:12]} -> "
                         f"{found[:12]}); re-run the command so the run id names the data it trains on")


def _dev_evaluator(cfg: Any, spec: UnitSpec, data_root: Path):
    """checkpoint dir -> main score on ``cfg.dev_task``'s dev split."""
    from benchmark.eval.encoder import HFEncoder
    from benchmark.eval.evaluate import evaluate
    from benchmark.eval.scorer import DenseScorer

    def score(ckpt: Path) -> float:
        enc = HFEncoder(str(ckpt), batch_size=spec.batch_size, device=spec.device, show_progress=False)
        return evaluate(cfg.dev_task, DenseScorer(enc), "dev", data_root).main_score

    return score


def _evaluate(spec: UnitSpec, checkpoint: Path, data_root: Path, results_dir: Path, result: UnitResult) -> None:
    """Evaluate the final checkpoint on every task of the unit (finished results of the same data are kept)."""
    from benchmark.registry import TASKS

    scorer = None
    for task_name in spec.evals:
        task = TASKS.get(task_name)
        if spec.split not in task.splits and not spec.strict:
            result.skipped.append((task_name, f"task {task_name!r} has no {spec.split!r} split "
                                              f"(it has: {', '.join(task.splits)})"))
            continue
        path = result_path(results_dir, spec.run_id, task_name, spec.split)
        if not (path.is_file() and _same_data(path, task, spec.split, data_root)):
            scorer = scorer or _scorer(checkpoint, spec)
            if not _evaluate_one(spec, task_name, scorer, data_root, results_dir, result):
                continue
        result.results.append((task_name, path))


def _same_data(path: Path, task: Any, split: str, data_root: Path) -> bool:
    """Whether a stored result was computed on the data now in the data root (else it is re-computed)."""
    stored = _stored_hash(path)
    try:
        return stored is not None and stored == task.data_sha256(data_root, split)
    except (OSError, MissingDataError):
        return False


def _scorer(checkpoint: Path, spec: UnitSpec) -> Any:
    from benchmark.eval.encoder import HFEncoder
    from benchmark.eval.scorer import DenseScorer

    return DenseScorer(HFEncoder(str(checkpoint), batch_size=spec.batch_size, device=spec.device,
                                 show_progress=spec.show_progress))


def _evaluate_one(spec: UnitSpec, task: str, scorer: Any, data_root: Path, results_dir: Path,
                  result: UnitResult) -> bool:
    """Evaluate and store one result; a task whose data is missing is skipped (an error with --strict)."""
    from benchmark.eval.evaluate import evaluate, to_record

    t0 = time.perf_counter()
    try:
        ev = evaluate(task, scorer, spec.split, data_root)
    except MissingDataError as e:
        if spec.strict:
            raise
        result.skipped.append((task, str(e)))
        return False
    first_cfg = spec.config["config"] if "config" in spec.config else spec.config["stages"][0]["config"]
    meta = {"name": spec.label, "base_model": first_cfg["model"], "pooling": scorer.encoder.pooling,
            "max_length": scorer.encoder.max_length, "preset": spec.stages[0].preset,
            "train_corpus": spec.stages[0].data["label"]}
    if "setting" in spec.config:
        meta["setting"] = spec.config["setting"]
    save_result(results_dir, to_record(ev, run=spec.run_id, method=meta, seed=spec.seed, scorer=scorer,
                                       config=spec.config))
    say(f"  {task}/{spec.split}: {ev.main_metric} {ev.main_score * 100:.2f} ({ev.n_queries} items, "
        f"{time.perf_counter() - t0:.1f} s)")
    return True


def mark_failed(run_dir: Path, error: BaseException) -> None:
    """Record why the unit failed, so `bench status` and reports can tell a failed unit from a running one."""
    if not run_dir.is_dir():
        return
    kind = "interrupted" if isinstance(error, KeyboardInterrupt) else "failed"
    tail = "".join(traceback.format_exception(type(error), error, error.__traceback__)[-3:])
    try:
        write_json_atomic(run_dir / FAILED_FILE, {"state": kind, "error": f"{type(error).__name__}: {error}",
                                                  "traceback_tail": tail, "at": now_iso()})
    except OSError:
        pass  # the original error matters more than the marker


def env_info(device: str | None) -> dict[str, Any]:
    """Machine and library facts recorded per run (env.json)."""
    import torch

    from benchmark.results import git_sha
    from benchmark.train.checkpoint import versions

    cuda = torch.cuda.is_available()
    return {"versions": versions(), "platform": platform.platform(), "python_executable": sys.executable,
            "argv": sys.argv, "device": device or ("cuda" if cuda else "cpu"),
            "gpu": torch.cuda.get_device_name(0) if cuda else None, "cpu_threads": torch.get_num_threads(),
            "git_sha": git_sha(), "created_at": now_iso()}
