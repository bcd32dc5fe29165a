"""USEB's exact protocol as a sentence-transformers evaluator: scores while training, checkpoint selection.

::

    from sentence_transformers import SentenceTransformerTrainer
    from usebench.st import USEBEvaluator, selection_args

    evaluator = USEBEvaluator("askubuntu,cqadupstack,scidocs", split="dev")      # data from $BENCH_DATA
    args = SentenceTransformerTrainingArguments("out", eval_strategy="steps", eval_steps=500,
                                                **selection_args(evaluator))   # keep the best dev average
    SentenceTransformerTrainer(model, args, train_dataset=..., loss=..., evaluator=evaluator).train()

:class:`USEBEvaluator` is a ``SentenceEvaluator`` (sentence-transformers' ``BaseEvaluator``): it loads each task's
split once with the suite's adapter (the release check included), and at every call scores it with
:func:`usebench.eval.evaluate.score_split`, the function behind `bench eval`. Its metrics are the suite's, named
``<name>_<task>_<metric>``; the primary metric ``<name>_avg`` is the mean of the tasks' main scores, the TSDAE
paper's USEB average when the four tasks are evaluated on test. It writes sentence-transformers' CSV (one row
per call, named ``useb_evaluation_<name>_results.csv`` as its own evaluators name theirs) and fills the model card.
It works on the base install (sentence-transformers is a base dependency); training with sentence-transformers'
trainer needs the `st` extra (its ``datasets`` and ``accelerate``).

The model is encoded as `bench eval` encodes the checkpoint saved from it (``encode="auto"``): a plain
Transformer + Pooling (cls, mean or max) [+ Normalize] model runs through :meth:`HFEncoder.from_modules` (the same
tokenization, batching, pooling and fp32 forward), so the numbers equal `bench eval --model <its checkpoint>`'s
to the bit. Any other model (Dense layers, prompts, other poolings) is encoded with its own
``SentenceTransformer.encode``, as ``usebench.evaluate(model)`` encodes it; ``encode=`` forces either way.
"""
from __future__ import annotations

import csv
import logging
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from usebench.errors import BenchError, BenchValueError

try:  # sentence-transformers 6 moved the base class; 3-5 have it here
    from sentence_transformers.base.evaluation import BaseEvaluator as SentenceEvaluator
except ImportError:  # pragma: no cover - depends on the installed version
    try:
        from sentence_transformers.evaluation import SentenceEvaluator
    except ImportError as e:
        raise BenchError(f"usebench.st needs sentence-transformers>=3 (a base dependency of usebench: "
                         f"pip install -e .) ({e})") from None

import usebench.tasks  # noqa: F401  (enrols the adapters)
from usebench.eval.evaluate import Evaluation, LoadedSplit, load_split, score_split
from usebench.eval.models import module_pooling_mode
from usebench.eval.scorer import DenseScorer
from usebench.registry import TASKS

logger = logging.getLogger(__name__)
EncodeWay = Literal["auto", "engine", "sentence-transformers"]
ENGINE_POOLINGS = ("cls", "mean", "max")  # what `bench eval` reads from a sentence-transformers checkpoint
INSTALL_ST = "pip install -e '.[st]'"


class USEBEvaluator(SentenceEvaluator):
    """The suite's tasks as a sentence-transformers evaluator; see the module docstring.

    :param tasks: task names or groups (``"useb"``), comma-separated or a list.
    :param split: ``"dev"`` (the default: select checkpoints on dev) or ``"test"``; a task without it is left
        out with a warning (TwitterPara has no dev split).
    :param data_root: the data root (default ``$BENCH_DATA``).
    :param name: the metrics' prefix (default ``useb_<split>``).
    :param batch_size: texts per forward pass.
    :param encode: ``"auto"``, ``"engine"`` (refuse a model `bench eval` would encode differently) or
        ``"sentence-transformers"`` (the model's own ``encode``).
    :param write_csv: append one row per call to ``<output_path>/useb_evaluation_<name>_results.csv``.
    :param allow_partial: evaluate data that is not the full release.
    """

    def __init__(self, tasks: str | Sequence[str] = "useb", split: str = "dev", *,
                 data_root: str | Path | None = None, name: str | None = None, batch_size: int = 64,
                 encode: EncodeWay = "auto", write_csv: bool = True, allow_partial: bool = False,
                 show_progress_bar: bool = False):
        super().__init__()
        if encode not in ("auto", "engine", "sentence-transformers"):
            raise BenchValueError(f"encode must be 'auto', 'engine' or 'sentence-transformers', got {encode!r}")
        if split not in ("dev", "test"):
            raise BenchValueError(f"split must be 'dev' or 'test', got {split!r}")
        self.split, self.encode, self.batch_size, self.write_csv = split, encode, batch_size, write_csv
        self.show_progress_bar = show_progress_bar
        self.name = name if name is not None else f"useb_{split}"
        self.loaded = _load(_task_names(tasks, split), split, _root(data_root), allow_partial)
        self.tasks = [loaded.task.name for loaded in self.loaded]
        self.greater_is_better = True
        self.primary_metric = f"{self.name}_avg" if self.name else "avg"
        # sentence-transformers' own naming, <kind>_evaluation[_<name>]_results.csv
        self.csv_file = "useb_evaluation" + (f"_{self.name}" if self.name else "") + "_results.csv"
        self.last_evaluations: list[Evaluation] = []
        self.last_encoding: str | None = None

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1,
                 steps: int = -1) -> dict[str, float]:
        """Score ``model`` on every task (eval mode, restored afterwards) and return the prefixed metrics."""
        encoder, self.last_encoding = model_encoder(model, self.encode, self.batch_size, self.show_progress_bar)
        was_training = model.training
        model.eval()
        try:
            self.last_evaluations = [score_split(loaded, DenseScorer(encoder)) for loaded in self.loaded]
        finally:
            model.train(was_training)
        metrics = self.metrics(self.last_evaluations)
        logger.info("USEBEvaluator (%s, epoch %s, step %s): avg %.4f", self.split, epoch, steps, metrics["avg"])
        if output_path is not None and self.write_csv:
            self._write_csv(Path(output_path), epoch, steps, metrics)
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics

    def metrics(self, evaluations: list[Evaluation]) -> dict[str, float]:
        """``<task>_<metric>`` for every metric of every task, and ``avg``: the mean of the main scores (in the
        tasks' order, as the reports' ``useb.avg`` computes it)."""
        out = {f"{ev.task}_{m}": float(v) for ev in evaluations for m, v in ev.scores.items()}
        out["avg"] = float(np.mean([ev.main_score for ev in evaluations]))
        return out

    def _write_csv(self, folder: Path, epoch: int, steps: int, metrics: dict[str, float]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / self.csv_file
        keys = list(metrics)
        new = not path.is_file()
        with path.open("a" if not new else "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            if new:
                writer.writerow(["epoch", "steps", *keys])
            writer.writerow([epoch, steps, *(metrics[k] for k in keys)])

    @property
    def description(self) -> str:
        return f"USEB ({self.split}: {', '.join(self.tasks)})"

    def get_config_dict(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "split": self.split, "encode": self.encode}


def _task_names(tasks: str | Sequence[str], split: str) -> list[str]:
    """The tasks (groups expanded) that have ``split``; the others are left out with a warning."""
    from usebench.tasks import expand_tasks

    spec = tasks if isinstance(tasks, str) else ",".join(tasks)
    names = expand_tasks(spec)
    kept = [n for n in names if split in TASKS.get(n).splits]
    for n in names:
        if n not in kept:
            warnings.warn(f"USEBEvaluator: task {n!r} has no {split!r} split (it has: "
                          f"{', '.join(TASKS.get(n).splits)}); left out", stacklevel=3)
    if not kept:
        raise BenchValueError(f"no task of {spec!r} has a {split!r} split")
    for n in kept:
        if n.startswith(("mteb:", "mteb-evaluator:")):  # MTEB's evaluator asks a loaded checkpoint, not this model
            raise BenchValueError(f"USEBEvaluator scores the suite's own protocols; {n!r} runs MTEB's evaluator "
                                  "(use MTEB's evaluators, or usebench.mteb for USEB inside MTEB)")
    return kept


def _root(data_root: str | Path | None) -> Path:
    from usebench.paths import default_data_root

    return Path(data_root or default_data_root()).expanduser()


def _load(names: list[str], split: str, root: Path, allow_partial: bool) -> list[LoadedSplit]:
    """Each task's split, read and release-checked once (a missing file names the command that fetches it)."""
    return [load_split(name, split, root, allow_partial) for name in names]


def engine_parts(model: Any) -> tuple[Any, str, int] | str:
    """(transformer, pooling, max length) when `bench eval` would encode ``model``'s checkpoint exactly as the
    model does (Transformer + Pooling cls/mean/max [+ Normalize: cosine ignores it], no default prompt); else the
    reason it would not."""
    modules = list(model) if hasattr(model, "__iter__") else []
    kinds = [type(m).__name__ for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        return f"its modules are {kinds} (`bench eval` reads a Transformer + Pooling [+ Normalize] checkpoint)"
    pooling = module_pooling_mode(modules[1])
    if pooling not in ENGINE_POOLINGS:
        return f"its pooling is {pooling!r} (`bench eval` reads {', '.join(ENGINE_POOLINGS)})"
    if getattr(model, "default_prompt_name", None):
        return f"it has a default prompt ({model.default_prompt_name!r})"
    transformer = getattr(modules[0], "auto_model", None)
    if transformer is None or getattr(model, "tokenizer", None) is None:
        return "its Transformer module has no auto_model/tokenizer"
    return transformer, pooling, int(model.max_seq_length)


def model_encoder(model: Any, way: EncodeWay, batch_size: int, show_progress: bool) -> tuple[Any, str]:
    """(the Encoder for ``model``, which way it encodes) -- see the module docstring."""
    from usebench.eval.encoder_adapter import sentence_transformer_encoder, sentence_transformer_name

    parts = engine_parts(model) if way != "sentence-transformers" else "asked for"
    if isinstance(parts, tuple):
        from usebench.eval.encoder import HFEncoder

        transformer, pooling, max_length = parts
        name = sentence_transformer_name(model)
        return HFEncoder.from_modules(transformer, model.tokenizer, name=name, pooling=pooling,
                                      max_length=max_length, batch_size=batch_size,
                                      show_progress=show_progress), "engine"
    if way == "engine":
        raise BenchValueError(f"encode='engine': `bench eval` would not encode this model as it encodes itself: "
                              f"{parts}; use encode='auto' or 'sentence-transformers'")
    encoder = sentence_transformer_encoder(model, sentence_transformer_name(model), batch_size=batch_size,
                                           device=None, show_progress=show_progress)
    return encoder, "sentence-transformers"


def selection_args(evaluator: USEBEvaluator) -> dict[str, Any]:
    """``SentenceTransformerTrainingArguments`` keywords that keep the checkpoint with the best primary metric
    (the trainer prefixes evaluator metrics with ``eval_``). Only the trainer uses them: without the `st` extra this
    is where the error naming it is raised (sentence-transformers' own names ``transformers[torch]``)."""
    require_trainer()
    return {"metric_for_best_model": f"eval_{evaluator.primary_metric}", "greater_is_better": True,
            "load_best_model_at_end": True}


def require_trainer() -> None:
    """Sentence-transformers' trainer (``SentenceTransformerTrainer``, ``model.fit``) needs ``datasets`` and
    ``accelerate``: the `st` extra. Raise a clear error naming it when either is missing."""
    import importlib.util

    missing = [m for m in ("datasets", "accelerate") if importlib.util.find_spec(m) is None]
    if missing:
        raise BenchError(f"training with sentence-transformers needs {' and '.join(missing)}: the `st` extra, "
                         f"{INSTALL_ST} (USEBEvaluator itself works without it)")

