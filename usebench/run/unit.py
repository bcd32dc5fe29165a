"""Running one unit: train its chain stage by stage, then evaluate the final encoder on the unit's tasks.

:func:`run_unit` is the one function every launcher calls (in this process, a Ray worker or a SLURM job). It
reads its inputs from the data root and writes only into its own run directory ``<results>/<run_id>/``:

- ``config.json``, ``env.json``; ``method.json`` (the final stage's) and ``<task>/<split>.json`` per evaluation;
  ``stages.json``: each stage's id and home;
- each stage trains in its home (:mod:`usebench.run.stages`), once for every unit that needs it: a single
  unsupervised method's home is the run directory itself (``log.jsonl``, ``checkpoint/``, ``train_state/``, as
  ever), every other stage's is ``<results>/.stages/<method>__<id>__s<seed>/`` with its own ``config.json``,
  log and checkpoint; stage k+1 starts from stage k's exported checkpoint;
- ``.lock`` while a process runs the unit (:mod:`usebench.store.locks`), ``<home>/.stage/.lock`` while one trains a
  stage; ``failed.json`` when it failed (the error and where to look), removed by the next successful run;
  ``unit.log``, everything the unit printed, every attempt appended (:mod:`usebench.run.console`).
A killed unit resumes: finished stages are reused (their export is checked against the stage's config hash),
the stage that was running continues from its last train state, and finished evaluations are kept.
"""
from __future__ import annotations

import platform
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from usebench.errors import BenchError, MissingDataError
from usebench.plan.held_results import result_targets
from usebench.plan.specs import StageSpec, UnitSpec
from usebench.store.files import git_sha, now_iso, write_json_atomic
from usebench.store.locks import UnitLock, UnitLockedError, UnitLockLostError
from usebench.store.records import config_hash
from usebench.store.stage_ids import STAGES_HOME, stage_id
from usebench.store.unit_files import FAILED_FILE, STAGES_FILE
from usebench.store.unit_state import UnitResult, finished
from usebench.run.console import unit_console
from usebench.run.curve import curve_evaluator  # the learning curve's scorer (a reading, never a selection)
from usebench.run.dev_data import dev_evaluator as _dev_evaluator  # the checkpoint-selection scorer
from usebench.run.faults import fault_point
from usebench.run.record_writer import failed_tasks_error, score_and_store
from usebench.run.stages import stage_lock
from usebench.run.tracking import unit_tracking
from usebench.run.usage import UsageClock


def say(message: str) -> None:
    """A progress line on stderr (flushed, so logs show it when output is not a terminal)."""
    print(message, file=sys.stderr, flush=True)


def run_unit(spec: UnitSpec, data_root: str | Path, results_dir: str | Path) -> UnitResult:
    """Train (or resume, or reuse) and evaluate one unit; a unit another process holds is skipped."""
    from usebench import methods  # noqa: F401  (enrols the plugins: a launcher's worker process starts with none)
    from usebench import tasks  # noqa: F401
    from usebench.train.runtime import init_distributed

    data_root, run_dir = Path(data_root), Path(results_dir) / spec.run_id
    result = UnitResult(spec.run_id, run_dir, spec.row)
    t0, usage = time.perf_counter(), UsageClock()
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
        fault_point("unit-locked")  # crash tests: killed holding the unit's lock
        with unit_console(run_dir, enabled=dist.main) as log, unit_tracking(spec, results_dir):
            result.log = log
            _prepare_dir(spec, run_dir, dist)
            if dist.main:
                usage.begin(run_dir)  # an attempt left running by a killed process is marked killed
            checkpoint = _train_chain(spec, data_root, Path(results_dir), dist, result, lock)
            if dist.main:
                _evaluate(spec, checkpoint, data_root, Path(results_dir), result)
                (run_dir / FAILED_FILE).unlink(missing_ok=True)
                usage.record(run_dir, result.training)
    except UnitLockLostError as e:  # another process holds the unit now: it is not this process's to mark
        usage.end(run_dir, "lock lost")
        result.state, result.error = "locked", str(e)
        return result
    except BaseException as e:
        if dist.main:
            usage.end(run_dir, "interrupted" if isinstance(e, KeyboardInterrupt) else "failed")
            mark_failed(run_dir, e)
        raise
    finally:
        if lock is not None:
            lock.release()
    result.seconds = time.perf_counter() - t0
    return result


def _prepare_dir(spec: UnitSpec, run_dir: Path, dist: Any) -> None:
    """config.json, env.json and stages.json (--force is applied by the driver: usebench.run.stages.force_reset)."""
    if dist.main:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(run_dir / "config.json", {**spec.config, "seed": spec.seed, "run_id": spec.run_id})
        write_json_atomic(run_dir / STAGES_FILE, [
            {"stage": k + 1, "method": s.method, "stage_id": stage_id(s.identity), "home": s.home,
             "pooling": s.pooling} for k, s in enumerate(spec.stages)])
        if not (run_dir / "env.json").is_file():
            write_json_atomic(run_dir / "env.json", {**env_info(spec.device), "world_size": dist.world})
    if dist.world > 1:
        import torch.distributed

        torch.distributed.barrier()


def _train_chain(spec: UnitSpec, data_root: Path, results_dir: Path, dist: Any, result: UnitResult,
                 lock: UnitLock | None = None) -> Path:
    """Train or reuse every stage in order, each in its home under its lock; returns the final checkpoint.
    Training stops after the step in which the unit's or the stage's lock was found taken over
    (:meth:`UnitLock.check`)."""
    from usebench.train.loop_state import CHECKPOINT_DIR

    previous: Path | None = None
    data: dict[str, Any] = {}  # the unit's corpus, loaded once if a stage trains on it
    for k, stage in enumerate(spec.stages):
        home = results_dir / stage.home
        with stage_lock(home, say, enabled=dist.world == 1) as held:
            checks = [x for x in (lock, held) if x is not None]
            fault_point("stage-locked")
            result.training.append(_stage(spec, k, previous, home, data_root, dist, data, checks))
        previous = home / CHECKPOINT_DIR
    assert previous is not None
    fault_point("exported")  # the last stage exported, the unit's method.json and results not written
    if dist.main:
        shutil.copyfile(previous / "method.json", results_dir / spec.run_id / "method.json")
    return previous


def _stage(spec: UnitSpec, k: int, previous: Path | None, home: Path, data_root: Path, dist: Any,
           data: dict[str, Any], locks: list[UnitLock] | None = None) -> str:
    """Train stage ``k`` in ``home`` (or resume it, or reuse its finished export); returns what happened."""
    from usebench.registry import METHODS
    from usebench.train.checkpoint import finished_checkpoint
    from usebench.train.loop_state import CHECKPOINT_DIR, STATE_DIR
    from usebench.train.loop import train

    stage = spec.stages[k]
    method = METHODS.get(stage.method)
    values = {**stage.values, "model": str(previous)} if previous is not None else dict(stage.values)
    cfg = method.config(stage.preset, values)
    note = _training_note(home, CHECKPOINT_DIR, STATE_DIR)
    where = "" if stage.home == spec.run_id else f" [{stage.home}]"
    say(f"  stage {k + 1}/{len(spec.stages)} {stage.method}: {note}{where}" if len(spec.stages) > 1
        else f"  {stage.method}: {note}{where}")
    if finished(home):  # an export found in the home must be this stage's (else a ConfigError names both)
        finished_checkpoint(home / CHECKPOINT_DIR, stage.method, config_hash(stage.identity))
        return note
    if previous is not None:
        repair_dropout(previous)
    if stage.data["kind"] == "corpus":
        data.setdefault("corpus", _load_corpus(spec, data_root))
        examples = data["corpus"].examples
    else:
        examples = _load_labeled(method, cfg, spec, stage, data_root)
    if "dev_corpus_sha256" in stage.data:  # the validation sentences the plan hashed are still those
        from usebench.train.validation import corpus_sha256, read_dev_corpus

        _check_same(stage.data["dev_corpus_sha256"], corpus_sha256(read_dev_corpus(cfg, cfg.batch_size)),
                    f"dev_corpus {cfg.dev_corpus}")
    if dist.main:
        _write_stage_files(spec, stage, home, values)
    dev_eval = _dev_evaluator(cfg, spec, data_root, home) if cfg.dev_every and cfg.dev_task else None
    curve_eval = curve_evaluator(cfg, spec, data_root) if cfg.curve_steps else None
    held = list(locks or ())

    def still_held(_step: int) -> None:  # a lock taken over (this process frozen past the timeout): stop
        for lk in held:
            lk.check()
        fault_point("train-step")

    train(method, cfg, examples, home, seed=spec.seed, device=spec.device, resume=True,
          show_progress=spec.show_progress, run_config=stage.identity, dev_eval=dev_eval,
          on_step=still_held if held else None, curve_eval=curve_eval)
    return note


def repair_dropout(checkpoint: Path) -> None:
    """An export written before exports carried the backbone's dropout rates (CT and ConSERT wrote zeros) gets
    them back before a later stage trains from it."""
    from usebench.train.checkpoint import read_method_json, restore_dropout

    meta = read_method_json(checkpoint) or {}
    if meta and "dropout_restored_from" not in meta and meta.get("base_model"):
        try:
            restore_dropout(checkpoint, str(meta["base_model"]))
        except (BenchError, OSError, ValueError) as e:
            say(f"  warning: could not restore the dropout rates of {checkpoint} from {meta['base_model']}: {e}")
            return
        write_json_atomic(checkpoint / "method.json", {**meta, "dropout_restored_from": meta["base_model"]})


def _write_stage_files(spec: UnitSpec, stage: StageSpec, home: Path, values: dict[str, Any]) -> None:
    """A stage home's config.json (written once, by the first unit that trains it) and env.json. A first stage
    whose home is a single-method unit's run directory gets that unit's config.json."""
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "config.json").is_file():
        if stage.home.startswith(STAGES_HOME):
            config = {"stage_id": stage_id(stage.identity), "method": stage.method, "preset": stage.preset,
                      "values": values, "data": stage.data, "seed": spec.seed, "pooling": stage.pooling,
                      "identity": stage.identity, "first_trained_by": spec.run_id}
        else:
            config = {**stage.identity, "run_id": home.name}
        write_json_atomic(home / "config.json", config)
    if not (home / "env.json").is_file():
        write_json_atomic(home / "env.json", env_info(spec.device))


def _training_note(out: Path, checkpoint_dir: str, state_dir: str) -> str:
    """What is about to happen to a stage: reused (finished export), resumed (a train state), or trained."""
    if (out / checkpoint_dir / "method.json").is_file():
        return "reusing its finished checkpoint"
    state = out / state_dir / "state.pt"
    if state.is_file():
        return "resuming from its last train state"
    return "training"


def _load_corpus(spec: UnitSpec, data_root: Path):
    from usebench.plan.corpus import load_corpus

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


def _evaluate(spec: UnitSpec, checkpoint: Path, data_root: Path, results_dir: Path, result: UnitResult) -> None:
    """Evaluate the final checkpoint on every task of the unit; a stored result that still holds is kept, one
    that does not is scored again from the checkpoint (the reason said in one line). A task whose data are not
    in the data root is skipped with the command that fetches them (an error with --strict): the launchers'
    "already done" asks the same generator (:func:`usebench.plan.held_results.result_targets`). A task whose result
    is not finite stores nothing; the unit fails once its other tasks ran (`bench eval`'s rule)."""
    scorer, failed = None, []
    for target in result_targets(spec, data_root, results_dir, result):
        if target.missing is not None:
            raise target.missing  # --strict: missing data fail the unit loudly
        if target.reason is None:
            result.results.append((target.task, target.path))
            continue
        if target.path.exists():
            say(f"  {target.task}/{target.split}: scoring again from the finished checkpoint: {target.reason}")
        scorer = scorer or _scorer(checkpoint, spec, results_dir)
        reason = _evaluate_one(spec, target.task, target.split, scorer, data_root, results_dir, result)
        if reason is not None:
            failed.append((target.task, reason))
    if failed:
        raise failed_tasks_error(failed)


def _scorer(checkpoint: Path, spec: UnitSpec, results_dir: Path) -> Any:
    from usebench.eval.encoder import HFEncoder
    from usebench.eval.scorer import DenseScorer

    # the results name the checkpoint by its place in the store (.stages/<home>/checkpoint), not by this machine's path
    label = str(checkpoint.relative_to(results_dir)) if checkpoint.is_relative_to(results_dir) else None
    return DenseScorer(HFEncoder(str(checkpoint), pooling=spec.eval_pooling, batch_size=spec.batch_size,
                                 device=spec.device, show_progress=spec.show_progress, label=label))


def trained_step_paths(spec: UnitSpec, results_dir: Path) -> list[dict[str, Any] | None]:
    """How each stage's steps ran (its checkpoint's ``step_path``, :mod:`usebench.train.step_path`): the fast path
    changes numbers within rounding, so a result says which path trained it. None for a stage exported before
    the record existed."""
    from usebench.train.checkpoint import read_method_json
    from usebench.train.loop_state import CHECKPOINT_DIR

    return [(read_method_json(results_dir / s.home / CHECKPOINT_DIR) or {}).get("step_path") for s in spec.stages]


def _evaluate_one(spec: UnitSpec, task: str, split: str, scorer: Any, data_root: Path, results_dir: Path,
                  result: UnitResult) -> str | None:
    """Evaluate and store one result (:func:`usebench.run.record_writer.score_and_store`, `bench eval`'s writer and
    rule); a task whose data is missing is skipped (an error with --strict). Returns why nothing was stored for a
    non-finite result (the unit fails once its other tasks ran), else None."""
    t0 = time.perf_counter()
    try:
        scored = score_and_store(task, split, scorer, data_root, results_dir, run=spec.run_id,
                                 method=_method_meta(spec, scorer, results_dir), seed=spec.seed, config=spec.config)
    except MissingDataError as e:
        if spec.strict:
            raise
        result.skipped.append((task, str(e)))
        return None
    if scored.failed is not None:
        say(f"  {task}/{split}: FAILED: {scored.failed}")
        return scored.failed
    fault_point("evaluated")
    ev = scored.evaluation
    result.results.append((task, scored.path))
    say(f"  {task}/{split}: {ev.main_metric} {ev.main_score * 100:.2f} ({ev.n_queries} items, "
        f"{time.perf_counter() - t0:.1f} s)")
    return None


def _method_meta(spec: UnitSpec, scorer: Any, results_dir: Path) -> dict[str, Any]:
    """What a unit's result records of its model: the chain, backbone, pooling, presets, step paths and dev data."""
    from usebench.eval.models import recorded_backbone  # cached per model: hashed once per unit
    from usebench.run.dev_data import unit_dev_data

    first_cfg = spec.config["config"] if "config" in spec.config else spec.config["stages"][0]["config"]
    meta = {"name": spec.label, "base_model": first_cfg["model"], "pooling": scorer.encoder.pooling,
            "max_length": scorer.encoder.max_length, "preset": spec.stages[0].preset,
            "train_corpus": spec.train_corpus or spec.stages[0].data["label"]}
    if "setting" in spec.config:
        meta["setting"] = spec.config["setting"]
    variant = stage_variant(spec)
    if variant:
        meta["variant"] = variant
    if spec.start:
        meta["nli_sts_model"] = spec.start
    meta["backbone"] = recorded_backbone(str(first_cfg["model"]))  # what pairs it with a published row
    meta["step_path"] = trained_step_paths(spec, results_dir)
    meta["dev_data"] = unit_dev_data([results_dir / s.home for s in spec.stages])  # what selected each checkpoint
    return meta


def stage_variant(spec: UnitSpec) -> str:
    """How the unit departs from its stages' presets, as report rows name it (planned:
    :func:`usebench.plan.planner.stage_variant`): "paper + max_steps=10", the preset alone when it is not the
    method's default, "" for none. Values the planner derives (a dev task "target", an inherited pooling, the
    backbone) are no part of it, so one experiment on four tasks stays one row."""
    return spec.variant


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

    from usebench.train.checkpoint import versions

    cuda = torch.cuda.is_available()
    return {"versions": versions(), "platform": platform.platform(), "python_executable": sys.executable,
            "argv": sys.argv, "device": device or ("cuda" if cuda else "cpu"),
            "gpu": torch.cuda.get_device_name(0) if cuda else None, "cpu_threads": torch.get_num_threads(),
            "git_sha": git_sha(), "created_at": now_iso()}
