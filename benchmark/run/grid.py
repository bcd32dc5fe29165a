"""The engine behind `bench run`: train each method on each task's unlabeled corpus, evaluate, aggregate.

A run unit is (method, corpus, seed). Its config (method config from preset + ``--model``/``--max-steps``/
``--set``, plus the corpus sha256) is hashed into the run id ``<method>__<model-slug>__<cfg8>__s<seed>``; the run
directory ``<results>/<run_id>/`` holds ``config.json``, ``env.json``, ``method.json``, ``log.jsonl``,
``checkpoint/`` and one ``<task>/<split>.json`` per evaluation. A unit whose checkpoint and results exist is
skipped (``--force`` re-runs it); a killed training resumes from ``train_state/``. Exact duplicate corpus lines
are dropped. With ``--corpus`` every task
shares that corpus, so each method/seed trains once and is evaluated on all tasks. ``base`` (the base model with
its own pooling) and ``bm25`` are evaluated without training, through ``benchmark.run.evaluation``.
"""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.train.config import config_to_dict, parse_overrides
from benchmark.errors import BenchError, ConfigError, MissingDataError
from benchmark.results import (
    StoredResult,
    result_path,
    run_id,
    save_result,
    write_json_atomic,
)

UNTRAINED = ("base", "bm25")


@dataclass(frozen=True)
class RunOptions:
    """Everything `bench run` was asked for."""

    methods: tuple[str, ...]
    tasks: str
    eval_tasks: str | None = None
    seeds: int = 1
    preset: str | None = None
    model: str | None = None
    corpus: tuple[Path, ...] = ()
    corpus_size: int | None = None  # train on a fixed subsample of this many sentences (TSDAE paper Fig. 3)
    max_steps: int | None = None
    overrides: tuple[str, ...] = ()
    split: str = "test"
    force: bool = False
    strict: bool = False
    device: str | None = None
    batch_size: int = 64  # evaluation batch size
    show_progress: bool = True


@dataclass(frozen=True)
class Corpus:
    """A training corpus and how it is named in tables and configs."""

    label: str  # the task it belongs to, or file:<name>
    texts: list[str]
    sha256: str
    files: tuple[str, ...]
    duplicates_dropped: int = 0


@dataclass
class RunOutcome:
    """Results of this invocation: (row label, task) -> stored results over seeds; skips with reasons."""

    cells: dict[tuple[str, str], list[StoredResult]] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    run_dirs: list[Path] = field(default_factory=list)

    def add(self, row: str, task: str, path: Path) -> None:
        """Record a stored result once (with --corpus, several train tasks share one unit)."""
        cell = self.cells.setdefault((row, task), [])
        if all(r.path != path for r in cell):
            cell.append(_stored(path))


def method_overrides(method_name: str, config_cls: type, items: Sequence[str]) -> dict[str, Any]:
    """``--set`` items for one method: ``key=value`` applies to every method, ``method.key=value`` to one."""
    mine = []
    for item in items:
        key = item.split("=", 1)[0]
        if "." in key:
            target, _, rest = key.partition(".")
            if target == method_name:
                mine.append(rest + item[len(key):])
        else:
            mine.append(item)
    try:
        return parse_overrides(config_cls, mine)
    except ConfigError as e:
        raise ConfigError(f"{method_name}: {e} (prefix a method-specific key, e.g. --set "
                          f"{method_name}.key=value)") from None


def load_corpus(task_name: str, opts: RunOptions, data_root: Path) -> Corpus:
    """The task's unlabeled corpus, or the concatenation of ``--corpus`` files (one sentence per line)."""
    from benchmark.data.corpus import read_corpus
    from benchmark.registry import TASKS

    if opts.corpus:
        texts = [t for f in opts.corpus for t in read_corpus(f)]
        label, files = "file:" + "+".join(Path(f).name for f in opts.corpus), tuple(str(f) for f in opts.corpus)
    else:
        texts = TASKS.get(task_name).train_corpus(data_root)
        label, files = task_name, tuple(TASKS.get(task_name).train_files())
    # Exact duplicate lines are dropped (first occurrence kept): a sentence twice in one batch is a false
    # negative for the contrastive methods, and the released USEB train files are already unique.
    unique = list(dict.fromkeys(texts))
    dropped = len(texts) - len(unique)
    if opts.corpus_size:
        unique = subsample_corpus(unique, opts.corpus_size, label)
    h = hashlib.sha256("\n".join(unique).encode("utf-8", "surrogatepass")).hexdigest()
    return Corpus(label, unique, h, files, dropped)


def subsample_corpus(texts: list[str], n: int, label: str) -> list[str]:
    """The first ``n`` sentences of one fixed permutation (seed 0), in corpus order: the same subset for every
    seed and method, and nested across sizes (the 128-sentence subset is inside the 256 one)."""
    import numpy as np

    if n > len(texts):
        raise ConfigError(f"--corpus-size {n}: the {label} corpus has only {len(texts)} distinct sentences")
    keep = np.sort(np.random.default_rng(0).permutation(len(texts))[:n])
    return [texts[i] for i in keep]


def env_info(device: str | None) -> dict[str, Any]:
    """Machine and library facts recorded per run (env.json)."""
    import torch

    from benchmark.train.checkpoint import versions
    from benchmark.results import git_sha, now_iso

    cuda = torch.cuda.is_available()
    return {"versions": versions(), "platform": platform.platform(), "python_executable": sys.executable,
            "argv": sys.argv, "device": device or ("cuda" if cuda else "cpu"),
            "gpu": torch.cuda.get_device_name(0) if cuda else None, "cpu_threads": torch.get_num_threads(),
            "git_sha": git_sha(), "created_at": now_iso()}


def run_benchmark(opts: RunOptions, data_root: Path, results_dir: Path) -> RunOutcome:
    """Train and evaluate every (train task, method, seed) unit of ``opts``; returns what to tabulate."""
    import methods  # noqa: F401  (enrols the plugins)
    import tasks  # noqa: F401
    from benchmark.registry import METHODS
    from tasks import expand_tasks

    for m in opts.methods:
        if m not in UNTRAINED and m not in METHODS:
            raise ConfigError(METHODS.unknown_message(m) + f"; untrained baselines: {', '.join(UNTRAINED)}")
    train_tasks = expand_tasks(opts.tasks)
    extra = expand_tasks(opts.eval_tasks) if opts.eval_tasks else []
    outcome = RunOutcome()
    done_untrained: set[tuple[str, str]] = set()
    for task in train_tasks:
        evals = list(dict.fromkeys([task, *extra]))
        corpus: Corpus | None = None
        for m in opts.methods:
            if m in UNTRAINED:
                if int(os.environ.get("RANK", "0")) != 0:
                    continue  # under torchrun, baselines are evaluated by rank 0 only
                todo = [t for t in evals if (m, t) not in done_untrained]
                done_untrained.update((m, t) for t in todo)
                if todo:
                    _run_untrained(m, todo, opts, data_root, results_dir, outcome)
                continue
            if corpus is None:
                try:
                    corpus = load_corpus(task, opts, data_root)
                except MissingDataError as e:
                    if opts.strict:
                        raise
                    outcome.skipped.append((f"train on {task}", str(e)))
                    break
            for seed in range(opts.seeds):
                _run_unit(METHODS.get(m), seed, corpus, evals, opts, data_root, results_dir, outcome)
    return outcome


def _run_untrained(name: str, evals: list[str], opts: RunOptions, data_root: Path, results_dir: Path,
                   outcome: RunOutcome) -> None:
    from benchmark.eval.models import DEFAULT_MODEL
    from benchmark.run.evaluation import EvalOptions, evaluate_model

    model = "bm25" if name == "bm25" else (opts.model or DEFAULT_MODEL)
    ev_opts = EvalOptions(model=model, batch_size=opts.batch_size, device=opts.device)
    res = evaluate_model(ev_opts, ",".join(evals), opts.split, data_root, results_dir, strict=opts.strict,
                         force=opts.force)
    outcome.skipped.extend(res.skipped)
    row = f"{name} ({model})"
    for task in evals:
        path = result_path(results_dir, res.run_id, task, opts.split)
        if path.is_file():
            outcome.add(row, task, path)


def _stored(path: Path) -> StoredResult:
    import json

    return StoredResult(path, json.loads(path.read_text(encoding="utf-8")))


def _unit_config(method: Any, corpus: Corpus, opts: RunOptions) -> tuple[Any, dict[str, Any]]:
    values = method_overrides(method.name, method.Config, opts.overrides)
    if opts.model:
        values["model"] = opts.model
    if opts.max_steps:
        values["max_steps"] = opts.max_steps
    preset = opts.preset or method.default_preset
    cfg = method.config(preset, values)
    config = {"method": method.name, "preset": preset, "config": config_to_dict(cfg),
              "corpus": {"label": corpus.label, "sha256": corpus.sha256, "sentences": len(corpus.texts),
                         "duplicates_dropped": corpus.duplicates_dropped}}
    if opts.corpus_size:  # reports draw the corpus-size curve (and separate rows) from this key
        config["corpus_size"] = opts.corpus_size
    return cfg, config


def _run_unit(method: Any, seed: int, corpus: Corpus, evals: list[str], opts: RunOptions, data_root: Path,
              results_dir: Path, outcome: RunOutcome) -> None:
    """Train (or reuse) one (method, corpus, seed) unit and evaluate it on ``evals``."""
    from benchmark.eval.models import model_slug
    from benchmark.train.loop import CHECKPOINT_DIR, train
    from benchmark.train.runtime import init_distributed

    cfg, config = _unit_config(method, corpus, opts)
    rid = run_id(method.name, model_slug(cfg.model), config, seed)
    run_dir = Path(results_dir) / rid
    dist = init_distributed()  # under torchrun every rank trains; only rank 0 writes and evaluates
    if dist.main:
        if opts.force and run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(run_dir / "config.json", {**config, "seed": seed, "run_id": rid})
        if not (run_dir / "env.json").is_file():
            write_json_atomic(run_dir / "env.json", {**env_info(opts.device), "world_size": dist.world})
    if dist.world > 1:
        import torch.distributed

        torch.distributed.barrier()
    dev_eval = _dev_evaluator(cfg, opts, data_root) if cfg.dev_every else None
    train(method, cfg, corpus.texts, run_dir, seed=seed, device=opts.device, resume=True,
          show_progress=opts.show_progress, run_config={**config, "seed": seed}, dev_eval=dev_eval)
    if not dist.main:
        return
    ckpt = run_dir / CHECKPOINT_DIR
    shutil.copyfile(ckpt / "method.json", run_dir / "method.json")
    outcome.run_dirs.append(run_dir)
    row = f"{method.name} ({corpus.label})"
    scorer = None
    for task in evals:
        path = result_path(results_dir, rid, task, opts.split)
        if not path.is_file():
            scorer = scorer or _scorer(ckpt, opts)
            if not _evaluate_into(task, scorer, rid, method, cfg, config, seed, corpus, opts, data_root,
                                  results_dir, outcome):
                continue
        outcome.add(row, task, path)


def _scorer(ckpt: Path, opts: RunOptions) -> Any:
    from benchmark.eval.encoder import HFEncoder
    from benchmark.eval.scorer import DenseScorer

    return DenseScorer(HFEncoder(str(ckpt), batch_size=opts.batch_size, device=opts.device,
                                 show_progress=opts.show_progress))


def _evaluate_into(task: str, scorer: Any, rid: str, method: Any, cfg: Any, config: dict[str, Any], seed: int,
                   corpus: Corpus, opts: RunOptions, data_root: Path, results_dir: Path,
                   outcome: RunOutcome) -> bool:
    """Evaluate and store one result; a task whose data is missing is skipped (an error with --strict)."""
    from benchmark.eval.evaluate import evaluate, to_record

    try:
        ev = evaluate(task, scorer, opts.split, data_root)
    except MissingDataError as e:
        if opts.strict:
            raise
        outcome.skipped.append((task, str(e)))
        return False
    except BenchError as e:
        if opts.strict or f"no {opts.split!r} split" not in str(e):
            raise
        outcome.skipped.append((task, str(e)))
        return False
    meta = {"name": method.name, "base_model": cfg.model, "pooling": method.eval_pooling(cfg),
            "max_length": scorer.encoder.max_length, "preset": config["preset"], "train_corpus": corpus.label}
    save_result(results_dir, to_record(ev, run=rid, method=meta, seed=seed, scorer=scorer, config=config))
    return True


def _dev_evaluator(cfg: Any, opts: RunOptions, data_root: Path):
    """checkpoint dir -> main score on ``cfg.dev_task``'s dev split (its data is checked before training)."""
    from benchmark.eval.encoder import HFEncoder
    from benchmark.eval.evaluate import evaluate
    from benchmark.registry import TASKS
    from benchmark.eval.scorer import DenseScorer

    TASKS.get(cfg.dev_task).require(data_root, "dev")

    def score(ckpt: Path) -> float:
        enc = HFEncoder(str(ckpt), batch_size=opts.batch_size, device=opts.device, show_progress=False)
        return evaluate(cfg.dev_task, DenseScorer(enc), "dev", data_root).main_score

    return score

