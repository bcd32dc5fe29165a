"""Evaluate a model on a list of tasks and store the results (the engine behind `bench eval`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


from benchmark.errors import MissingDataError
from benchmark.eval.evaluate import Evaluation, evaluate, to_record
from benchmark.results import result_path, run_id, save_result
from benchmark.eval.scorer import DenseScorer, Scorer


@dataclass(frozen=True)
class EvalOptions:
    """How to build the scorer for `bench eval`."""

    model: str = "minilm"
    pooling: str | None = None
    max_length: int | None = None
    batch_size: int = 64
    device: str | None = None
    cache_dir: Path | None = None
    precision: str = "fp32"  # fp32 on every device; "bf16" (autocast) only when asked for


@dataclass
class EvalOutcome:
    run_id: str
    evaluations: list[Evaluation] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (task, reason)
    reused: list[str] = field(default_factory=list)


def build_scorer(opts: EvalOptions) -> tuple[Scorer, dict, dict]:
    """The scorer for ``opts.model`` plus its method description and config (for the run id and records)."""
    from benchmark.eval.bm25 import MODEL_NAMES, bm25_method

    if opts.model in MODEL_NAMES:  # lexical baseline: `--model bm25 | bm25-elasticsearch | bm25-anserini`
        return bm25_method(opts.model)
    if opts.model.startswith("wordvec:"):  # bag of words: `--model wordvec:PATH` (the paper's Avg. GloVe row)
        from benchmark.eval.wordvec import WordVecEncoder

        wv = WordVecEncoder(opts.model.removeprefix("wordvec:"))
        method = {"name": "wordvec", "base_model": opts.model, "pooling": wv.pooling, "max_length": wv.max_length}
        return DenseScorer(wv), method, {**method, "vectors_sha256": wv.sha256()[:16]}
    from benchmark.eval.encoder import load_encoder
    from benchmark.eval.models import model_fingerprint

    encoder = load_encoder(opts.model, pooling=opts.pooling, max_length=opts.max_length,
                           batch_size=opts.batch_size, device=opts.device,
                           cache_dir=str(opts.cache_dir) if opts.cache_dir else None, precision=opts.precision)
    method = {"name": encoder.info.method.get("method", "base"), "base_model": opts.model,
              "pooling": encoder.pooling, "max_length": encoder.max_length}
    # The precision is in the config, hence in the run id: a bf16 result is never reused or averaged as fp32.
    config = {**method, "model_fingerprint": model_fingerprint(encoder.info)[:16], "precision": encoder.precision}
    if not encoder.info.method and encoder.info.pooling and Path(encoder.info.path, "modules.json").is_file():
        method["sentence_encoder"] = True  # an out-of-the-box sentence-transformers model (report block)
    return DenseScorer(encoder), method, config


def evaluate_model(opts: EvalOptions, task_spec: str, split: str, data_root: Path, results_dir: Path,
                   strict: bool = False, force: bool = False, seed: int = 0) -> EvalOutcome:
    """Evaluate on every task of ``task_spec``; a task with missing data is skipped (or an error if strict)."""
    import tasks  # noqa: F401  (enrols the adapters)
    from benchmark.eval.models import model_slug
    from benchmark.registry import TASKS
    from tasks import expand_tasks

    names = expand_tasks(task_spec)
    scorer, method, config = build_scorer(opts)
    # The method name comes from a checkpoint's method.json: slug it so the run id is always a safe folder name.
    outcome = EvalOutcome(run_id=run_id(model_slug(method["name"]), model_slug(opts.model), config, seed))
    for name in names:
        path = result_path(results_dir, outcome.run_id, name, split)
        if path.is_file() and not force:
            outcome.reused.append(name)
            continue
        task = TASKS.get(name)
        if split not in task.splits and not strict:  # e.g. `--split dev` over a group that includes TwitterPara
            outcome.skipped.append((name, f"task {name!r} has no {split!r} split (it has: {', '.join(task.splits)})"))
            continue
        try:
            ev = evaluate(name, scorer, split, data_root)
        except MissingDataError as e:
            if strict:
                raise
            outcome.skipped.append((name, str(e)))
            continue
        save_result(results_dir, to_record(ev, run=outcome.run_id, method=method, seed=seed, scorer=scorer,
                                           config=config))
        outcome.evaluations.append(ev)
    return outcome

