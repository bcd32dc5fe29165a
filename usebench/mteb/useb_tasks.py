"""USEB's tasks as MTEB task objects: MTEB's runner (``mteb.evaluate``) drives them, usebench's engine scores them.

Each ``USEB-<Task>`` is an MTEB ``AbsTask`` whose ``load_data`` reads the split with the suite's adapter
(:func:`usebench.eval.evaluate.load_split`: the release check included, from the data root, never the hub) and
whose ``_evaluate_subset`` runs :func:`usebench.eval.evaluate.score_split`, the function behind `bench eval`, with
an encoder that asks the MTEB model for the vectors through MTEB's own ``encode`` protocol. With the model that
``bench eval`` would load (``usebench.eval.mteb_model.load_mteb_model``) the vectors, hence every score, are
bit-identical to `bench eval`'s.

MTEB keeps task metadata on the class (``AbsTask.unload_data`` drops an instance's copy), and the dataset revision
here is the content of the data root, so each call builds its classes (:func:`task_class`).

``calculate_descriptive_statistics()`` gives MTEB's own statistics schema of the task's type (usebench/mteb/stats.py),
on the files the task reads. MTEB keeps a task's statistics in a file named after the task inside its own package; a
USEB task's file is under ``$BENCH_CACHE/mteb-descriptive-stats``, named after the task and its dataset revision, so
two data roots never share one and ``metadata.descriptive_stats`` (what MTEB's checks read) is the data's own.
"""
from __future__ import annotations

import hashlib
import warnings
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

import usebench.tasks  # noqa: F401  (enrols the adapters)
from usebench._version import __version__
from usebench.eval.encoder_adapter import to_matrix
from usebench.eval.evaluate import Evaluation, LoadedSplit, load_split, score_split
from usebench.errors import BenchError
from usebench.eval.scorer import DenseScorer
from usebench.mteb.metadata import (AVERAGE_ANNOTATIONS, AVERAGE_DESCRIPTION, AVERAGE_METRIC, AVERAGE_NAME,
                                    BENCHMARK_DESCRIPTION, BENCHMARK_NAME, MTEB_METRICS, TSDAE, TSDAE_URL, USEB_META)
from usebench.paths import default_cache_dir
from usebench.registry import TASKS

INSTALL = "pip install -e '.[mteb]'"
try:
    import mteb
    from mteb.abstasks.abstask import AbsTask
    from mteb.abstasks.aggregate_task_metadata import AggregateTaskMetadata
    from mteb.abstasks.aggregated_task import AbsTaskAggregate
    from mteb.abstasks.task_metadata import TaskMetadata
except ImportError as e:  # imported only where MTEB is wanted: say what to install
    raise BenchError(f"USEB's MTEB tasks need the `mteb` extra: {INSTALL} ({e})") from None

SUBSET = "default"  # USEB tasks have one MTEB subset
STATS_FOLDER = "mteb-descriptive-stats"  # under $BENCH_CACHE


class UsebTaskMetadata(TaskMetadata):
    """MTEB's ``TaskMetadata`` with the descriptive statistics file under the suite's cache, named after the task and
    its dataset revision (the data's sha256), not inside MTEB's package under the task's name alone."""

    @property
    def descriptive_stat_path(self) -> Path:
        revision = str(self.dataset.get("revision", ""))[:16]
        return default_cache_dir() / STATS_FOLDER / str(self.type) / f"{self.name}-{revision}.json"


class MtebModelEncoder:
    """An MTEB model as the engine's Encoder: the texts go to ``model.encode`` as MTEB's evaluators send them (a
    DataLoader of ``{"text": [...]}`` batches, the task's metadata, split and subset, the runner's encode_kwargs).
    Queries and documents alike (``prompt_type=None``): USEB's protocol encodes every text the same way."""

    def __init__(self, model: Any, metadata: Any, split: str, encode_kwargs: dict[str, Any]):
        self.model, self.metadata, self.split = model, metadata, split
        self.kwargs = dict(encode_kwargs)
        meta = getattr(model, "mteb_model_meta", None)
        self.name = str(getattr(meta, "name", None) or type(model).__name__)
        self.revision = getattr(meta, "revision", None)
        self.device = None  # exact search runs on the engine's default device (every backend returns the same top-k)

    def encode(self, texts: list[str]) -> Any:
        from datasets import Dataset
        from torch.utils.data import DataLoader

        loader = DataLoader(Dataset.from_dict({"text": list(texts)}), batch_size=int(self.kwargs.get("batch_size", 32)))
        out = self.model.encode(loader, task_metadata=self.metadata, hf_split=self.split, hf_subset=SUBSET,
                                prompt_type=None, **self.kwargs)
        return to_matrix(out, len(texts), self.name, f" (task {self.metadata.name}, split {self.split})")

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "revision": self.revision, "source": "mteb-model",
                "mteb_version": mteb.__version__}


def scores_dict(ev: Evaluation) -> dict[str, Any]:
    """MTEB's ScoresDict of one evaluation: the suite's metrics under its own names and, where MTEB defines a metric
    the same way, under MTEB's name too (:func:`mteb_names`); the per-subset metrics likewise; and a ``usebench``
    block with what a usebench result records (data sha256, counts, release check) and the scores as exact decimal
    strings (MTEB rounds the numbers of its result files to 6 decimals; usebench stores them unrounded,
    usebench/store/mteb_results.py reads these back)."""
    task = TASKS.get(ev.task)
    scores = {k: float(v) for k, v in ev.scores.items()}
    subsets = {s: {k: float(v) for k, v in m.items()} for s, m in ev.subsets.items()}
    block = {"task": ev.task, "split": ev.split, "group": task.group, "task_version": task.version,
             "suite_version": __version__, "main_metric": ev.main_metric, "data_sha256": ev.data_sha256,
             "n_queries": ev.n_queries, "partial": ev.partial, "release": ev.release, "timings": ev.timings,
             "exact": {"scores": {k: repr(v) for k, v in scores.items()},
                       "subsets": {s: {k: repr(v) for k, v in m.items()} for s, m in subsets.items()}}}
    named_subsets = {s: {**m, **mteb_names(ev.task, m)} for s, m in subsets.items()}
    return {**scores, **mteb_names(ev.task, scores), "subsets": named_subsets, "usebench": block}


def mteb_names(task: str, scores: dict[str, float]) -> dict[str, float]:
    """The metrics of ``scores`` that MTEB names otherwise, under MTEB's names (usebench/mteb/metadata.py)."""
    names = MTEB_METRICS.get(task, {})
    return {names[k]: v for k, v in scores.items() if k in names}


class UsebTask(AbsTask):
    """One USEB task under MTEB's runner (subclassed per data root by :func:`task_class`)."""

    usebench_task: ClassVar[str]
    data_root: ClassVar[Path]
    allow_partial: ClassVar[bool] = False
    data_sha256: ClassVar[dict[str, str]]  # split -> the sha256 the revision was computed from

    def load_data(self, num_proc: int | None = None, *, timer: Any = None, **kwargs: Any) -> None:
        """Each evaluated split read and release-checked by the suite's adapter (no hub): refused before
        anything is encoded if its files changed since the task was built (the revision would be wrong)."""
        if self.data_loaded:
            return
        splits = {}
        for split in self.eval_splits:
            loaded = load_split(self.usebench_task, split, self.data_root, self.allow_partial)
            if loaded.data_sha256 != self.data_sha256[split]:
                raise BenchError(f"{self.metadata.name} ({split}): the files under {self.data_root} changed since "
                                 "the task was built (sha256 differs); build the tasks again (usebench.mteb.tasks())")
            splits[split] = loaded
        self.dataset = {SUBSET: splits}
        self.data_loaded = True

    def _evaluate_subset(self, model: Any, data_split: LoadedSplit, *, hf_split: str, hf_subset: str,
                         encode_kwargs: dict[str, Any], prediction_folder: Path | None = None,
                         num_proc: int | None = None, timer: Any = None, **kwargs: Any) -> dict[str, Any]:
        encoder = MtebModelEncoder(model, self.metadata, hf_split, encode_kwargs)
        return scores_dict(score_split(data_split, DenseScorer(encoder)))

    def _calculate_descriptive_statistics_from_split(self, split: str, *, hf_subset: str | None = None,
                                                     compute_overall: bool = False,
                                                     num_proc: int | None = None) -> dict[str, Any]:
        """MTEB's statistics of ``split`` in the schema of the task's MTEB type, on the files the task reads."""
        from usebench.mteb.stats import split_statistics

        if not self.data_loaded:
            self.load_data()
        return split_statistics(self.dataset[SUBSET][split])


def revision(shas: dict[str, str]) -> str:
    """The dataset revision: the split's data sha256 (as a usebench result records it), or one over the splits."""
    if len(shas) == 1:
        return next(iter(shas.values()))
    return hashlib.sha256(";".join(f"{s}:{h}" for s, h in sorted(shas.items())).encode()).hexdigest()


def task_class(task: str, data_root: Path, splits: tuple[str, ...], allow_partial: bool) -> type[UsebTask]:
    """The MTEB task class of ``task`` on ``data_root``'s files (a missing file is an error naming the command
    that fetches it)."""
    meta, adapter = USEB_META[task], TASKS.get(task)
    shas = {split: adapter.data_sha256(data_root, split) for split in splits}
    metadata = UsebTaskMetadata(
        name=meta.name, description=meta.description, reference=TSDAE_URL, type=meta.type, category="t2t",
        modalities=["text"], eval_splits=list(splits), eval_langs=["eng-Latn"], main_score=adapter.main_metric,
        dataset={"path": f"usebench-data-root:{meta.folder}", "revision": revision(shas)},
        date=meta.date, domains=list(meta.domains), task_subtypes=list(meta.subtypes), license=meta.license,
        annotations_creators=meta.annotations, dialect=[], sample_creation="found", bibtex_citation=meta.citation,
    )
    name = meta.name.replace("-", "")
    return type(name, (UsebTask,), {"metadata": metadata, "usebench_task": task, "data_root": Path(data_root),
                                    "allow_partial": allow_partial, "data_sha256": shas, "__module__": __name__})


def build_tasks(names: list[str], data_root: Path, splits: tuple[str, ...], allow_partial: bool) -> list[UsebTask]:
    """One task object per name, evaluating the requested splits it has (a task with none of them is left out,
    with a warning, as `bench eval` skips it)."""
    out = []
    for task in names:
        have = tuple(s for s in splits if s in TASKS.get(task).splits)
        if not have:
            warnings.warn(f"{USEB_META[task].name} has no {'/'.join(splits)} split (it has: "
                          f"{', '.join(TASKS.get(task).splits)}); left out", stacklevel=3)
            continue
        out.append(task_class(task, data_root, have, allow_partial)())
    return out


class UsebAverage(AbsTaskAggregate):
    """``USEB-Average`` (metadata set per data root by :func:`build_average`): the mean of the four main scores,
    taken unrounded from the tasks' ``usebench`` blocks (MTEB hands an aggregate the results it read back from its
    cache, whose numbers it rounded to 6 decimals), with each part's main score beside it."""

    def task_results_to_scores(self, task_results: list[Any]) -> dict[str, dict[str, dict[str, Any]]]:
        by_name = {r.task_name: r for r in task_results}
        scores: dict[str, dict[str, dict[str, Any]]] = {}
        for split in self.metadata.eval_splits:
            parts = {name: _main_score(by_name[name], split) if name in by_name else None
                     for name in self.taskname_to_task}
            values = list(parts.values())
            # np.mean in USEB's task order: the arithmetic of the reports' useb.avg (per_seed_average)
            mean = None if any(v is None for v in values) else float(np.mean(values))
            scores[split] = {SUBSET: {AVERAGE_METRIC: mean, "main_score": mean, "parts": parts}}
        return scores


def _main_score(result: Any, split: str) -> float | None:
    """A USEB task result's main score on ``split``, unrounded (its ``usebench`` block), None if absent."""
    entry = next((e for e in result.scores.get(split, []) if e.get("hf_subset") == SUBSET), None)
    if entry is None:
        return None
    block = entry.get("usebench") or {}
    exact = (block.get("exact") or {}).get("scores", {}).get(block.get("main_metric"))
    return float(exact) if exact is not None else float(entry["main_score"])


def build_average(parts: list[UsebTask]) -> UsebAverage:
    """``USEB-Average``: MTEB's aggregate of the four tasks' main scores on test (their mean)."""
    metadata = AggregateTaskMetadata(name=AVERAGE_NAME, description=AVERAGE_DESCRIPTION, tasks=parts,
                                     main_score=AVERAGE_METRIC, type="Reranking", eval_splits=["test"],
                                     reference=TSDAE_URL, bibtex_citation=TSDAE,
                                     annotations_creators=AVERAGE_ANNOTATIONS)
    return type("USEBAverage", (UsebAverage,), {"metadata": metadata, "__module__": __name__})()


def build_benchmark(parts: list[UsebTask]) -> Any:
    """MTEB's ``Benchmark`` of the four tasks and their average."""
    return mteb.Benchmark(name=BENCHMARK_NAME, tasks=[*parts, build_average(parts)], description=BENCHMARK_DESCRIPTION,
                          reference=TSDAE_URL, citation=TSDAE)
