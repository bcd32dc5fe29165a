"""One useb dataset by usebench's engine, in the kit's keys and rounding; the kit's data folders and errors.

The kit's exceptions are kept: a bad ``dataset_name`` or ``eval_type`` is an ``AssertionError`` there (its
``assert``), a missing folder a ``FileNotFoundError`` (``os.listdir``) and a missing file an ``AssertionError``;
ours are :class:`~usebench.errors.BenchError` s that are also those types, so code written for the kit catches
them, and they name the user's own folder and how to fill it.
"""
from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from usebench.errors import BenchValueError, MissingDataError
from usebench.useb.scoring import KIT_BATCH_SIZE, KitScorer, RecordingEncoder, SembFn

log = logging.getLogger("usebench.useb")

# The kit's dataset names, in its order, with the kit's main metric.
DATASETS = ("askubuntu", "cqadupstack", "twitterpara", "scidocs")
MAIN_METRIC = {"askubuntu": "map_askubuntu_title", "cqadupstack": "map@100_cqadupstack_avg",
               "twitterpara": "ap_twitter_avg", "scidocs": "map_scidocs_cosine_avg"}
SPLITS = {"valid": "dev", "test": "test"}  # the kit's eval_type -> our split
DATA_EVAL = "useb/data-eval"
FILL = ("unzip the kit's data-eval.zip there (its README's download), or run `bench data download useb` and pass "
        "data_eval_path=$BENCH_DATA/useb/data-eval")


class KitArgumentError(BenchValueError, AssertionError):
    """A ``dataset_name``, ``eval_type`` or evaluator argument the kit would refuse with an ``assert``."""


class KitDataError(MissingDataError, FileNotFoundError, AssertionError):
    """A dataset missing from the kit's data folder: the kit raises ``FileNotFoundError`` (folder) or
    ``AssertionError`` (file) there; this is both, and names the user's folder and how to fill it."""

    def __init__(self, message: str, path: str | Path):
        Exception.__init__(self, message)
        self.path, self.fetch = Path(path), "bench data download useb"


def check_dataset_name(dataset_name: Any) -> str:
    name = dataset_name.lower() if isinstance(dataset_name, str) else dataset_name
    if name not in DATASETS:
        raise KitArgumentError(f"dataset_name should be one of these: {list(DATASETS)}, got {dataset_name!r}")
    return name


def check_split(eval_type: Any) -> str:
    if eval_type not in SPLITS:
        raise KitArgumentError(f"eval_type should be one of {list(SPLITS)}, got {eval_type!r}")
    return SPLITS[eval_type]


def required_files(name: str, split: str) -> list[str]:
    """The files of dataset ``name`` that the evaluation of ``split`` reads, relative to a data-eval folder."""
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.registry import TASKS

    split = "test" if name == "twitterpara" else split
    return [f.removeprefix(f"{DATA_EVAL}/") for f in TASKS.get(name).files(split)]


def check_folder(data_eval_path: Any, names: list[str], split: str) -> Path:
    """The user's data-eval folder, holding every file the datasets ``names`` need; else :class:`KitDataError`
    naming that folder (never a temporary one) and how to fill it."""
    path = Path(data_eval_path).expanduser().resolve()
    if not path.is_dir():
        raise KitDataError(f"data_eval_path {str(data_eval_path)!r} is not a folder (the kit's data-eval, with "
                           f"askubuntu/, cqadupstack/, twitterpara/ and scidocs/ inside): {FILL}", path)
    for name in names:
        missing = [f for f in required_files(name, split) if not (path / f).is_file()]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise KitDataError(f"{path} has no {missing[0]}{more}: the {name} dataset is missing from "
                               f"data_eval_path; {FILL}", path / missing[0])
    return path


def data_root(path: Path, stack: ExitStack) -> Path:
    """The usebench data root whose ``useb/data-eval`` is the folder ``path``: its grandparent when it already
    sits at ``<root>/useb/data-eval``, else a temporary root linking to it (deleted with ``stack``)."""
    if path.name == "data-eval" and path.parent.name == "useb":
        return path.parent.parent
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="usebench-useb-")))
    (tmp / "useb").mkdir()
    (tmp / "useb" / "data-eval").symlink_to(path, target_is_directory=True)
    return tmp


def dataset_root(dataset_dir: Any, name: str, stack: ExitStack) -> Path:
    """A data root for one dataset folder (an evaluator's ``datasets_dir``, e.g. ``data-eval/askubuntu``)."""
    path = Path(dataset_dir).expanduser().resolve()
    if path.name == name and path.parent.name == "data-eval" and path.parent.parent.name == "useb":
        return path.parent.parent.parent
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="usebench-useb-")))
    (tmp / DATA_EVAL).mkdir(parents=True)
    (tmp / DATA_EVAL / name).symlink_to(path, target_is_directory=True)
    return tmp


def check_dataset_dir(dataset_dir: Any, name: str) -> None:
    """An evaluator's ``datasets_dir`` holds the dataset's files (both splits), as the kit's constructor checks."""
    path = Path(dataset_dir).expanduser()
    if not path.is_dir():
        raise KitDataError(f"datasets_dir {str(dataset_dir)!r} is not a folder (the kit's data-eval/{name}): {FILL}",
                           path)
    for split in ("dev", "test"):
        for f in required_files(name, split):
            if not (path / f.removeprefix(f"{name}/")).is_file():
                raise KitDataError(f"{path} has no {f.removeprefix(name + '/')} (the kit's data-eval/{name}); {FILL}",
                                   path)


def scores(name: str, semb_fn: SembFn, split: str, root: Path, show_progress: bool,
           bsz: int = KIT_BATCH_SIZE) -> dict[str, float]:
    """One dataset by usebench's engine with the kit's arithmetic, in the kit's keys, rounded as the kit."""
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.eval.evaluate import evaluate

    if name == "twitterpara" and split == "dev":
        log.warning("TwitterPara does not have a development set and here the model is evaluated on the test set "
                    "instead.")
        split = "test"
    scorer = KitScorer(RecordingEncoder(semb_fn, show_progress, bsz), name)
    ev = evaluate(name, scorer, split, root, allow_partial=True)
    if ev.partial:
        problems = ev.release["partial"]
        log.warning("%s (%s): the data is not the full release (%s); evaluated as it is, as the kit would", name,
                    split, "; ".join(map(str, problems[:2])) + (" ..." if len(problems) > 2 else ""))
    out = KIT_KEYS[name](ev.scores, ev.subsets, scorer, split, root)
    return {k: round(v * 100, 2) for k, v in out.items()}


def _askubuntu(scores: dict, subsets: dict, *_: Any) -> dict[str, float]:
    return {f"{m}_askubuntu_title": scores[m] for m in ("map", "p@1", "p@5", "mrr")}


def _cqadupstack(scores: dict, subsets: dict, *_: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for forum, values in subsets.items():  # the kit's order: each forum's two scores together
        out[f"map@100_cqadupstack_{forum}"] = values["map@100"]
        out[f"ndcg@10_cqadupstack_{forum}"] = values["ndcg@10"]
    out["map@100_cqadupstack_avg"] = scores["map@100"]
    out["ndcg@10_cqadupstack_avg"] = scores["ndcg@10"]
    return out


def _twitterpara(scores: dict, subsets: dict, *_: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for corpus in ("twitterurl", "pit"):
        out[f"ap_twitter_{corpus}"] = scores[f"ap_{corpus}"]
        out[f"spearman_twitter_{corpus}"] = scores[f"spearman_{corpus}"]
    out["ap_twitter_avg"] = scores["ap_avg"]
    out["spearman_twitter_avg"] = scores["spearman_avg"]
    return out


def _scidocs(scores: dict, subsets: dict, scorer: KitScorer, split: str, root: Path) -> dict[str, float]:
    """The cosine scores are the engine's; the kit's euclidean variant (negative distance between the raw
    vectors, its torch arithmetic) is scored here over the same queries with the same trec evaluation."""
    from usebench.registry import TASKS
    from usebench.tasks.scidocs import SUBTASKS, subtask_metrics

    data = TASKS.get("scidocs").load(split, root)
    euclidean = {s: subtask_metrics(data.queries[s], data.qrels[s],
                                    [scorer.neg_distances(q.text, q.candidate_texts) for q in data.queries[s]])
                 for s in SUBTASKS}
    out: dict[str, float] = {}
    for subtask in SUBTASKS:
        out[f"map_scidocs_{subtask}_euclidean"] = euclidean[subtask]["map"]
        out[f"ndcg_scidocs_{subtask}_euclidean"] = euclidean[subtask]["ndcg"]
        out[f"map_scidocs_{subtask}_cosine"] = subsets[subtask]["map"]
        out[f"ndcg_scidocs_{subtask}_cosine"] = subsets[subtask]["ndcg"]
    for measure in ("map", "ndcg"):
        out[f"{measure}_scidocs_euclidean_avg"] = float(np.mean([euclidean[s][measure] for s in SUBTASKS]))
    for measure in ("map", "ndcg"):
        out[f"{measure}_scidocs_cosine_avg"] = scores[f"{measure}_avg"]
    return out


KIT_KEYS: dict[str, Callable[..., dict[str, float]]] = {
    "askubuntu": _askubuntu, "cqadupstack": _cqadupstack, "twitterpara": _twitterpara, "scidocs": _scidocs}

__all__ = ["DATASETS", "KitArgumentError", "KitDataError", "MAIN_METRIC", "SPLITS", "check_folder", "scores"]
