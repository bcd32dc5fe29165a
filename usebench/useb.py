"""A drop-in for the TSDAE paper's evaluation kit (``useb`` 0.0.1 on PyPI, UKPLab/useb): ``run`` and
``run_on`` with the kit's signatures and return values, computed by usebench's engine.

Migrating is one import: ``from useb import run, run_on`` becomes ``from usebench.useb import run, run_on``.

What is the same as the kit: the arguments (``semb_fn`` from a list of strings to a tensor ``(n, d)``,
``eval_type`` ``'valid'`` or ``'test'``, ``data_eval_path`` the kit's ``data-eval`` folder), the result keys
(``map_askubuntu_title``, ``map@100_cqadupstack_<forum>``, ``ap_twitter_pit``, ``map_scidocs_cite_euclidean``,
...), every value ``round(x * 100, 2)``, ``run``'s ``(results, results_main_metric)`` with
``results_main_metric['avg']`` the mean of the four rounded main scores, and the two JSON files ``run`` writes
in the working directory (``results.detailed.json``, ``results.average_precision.json``). ``semb_fn`` is called
as the kit calls it: on batches of at most 32 texts, each stripped, under ``torch.no_grad``.

What differs: each unique text is encoded once per task (the kit encodes AskUbuntu's and SciDocs' candidates
once per query), the tasks' protocols are usebench's (usebench/tasks/*.py, each reproducing the kit's to the digit),
and the data's release counts and checksums are checked: data that is not the release (e.g. a cut copy) is
evaluated, as the kit would, with a warning. TwitterPara has no dev split: ``eval_type='valid'`` evaluates its
test set, with the kit's warning.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from usebench.errors import BenchError

log = logging.getLogger("usebench.useb")

# The kit's dataset names, in its order, with our task, the kit's main metric and its batch size.
DATASETS = ("askubuntu", "cqadupstack", "twitterpara", "scidocs")
MAIN_METRIC = {"askubuntu": "map_askubuntu_title", "cqadupstack": "map@100_cqadupstack_avg",
               "twitterpara": "ap_twitter_avg", "scidocs": "map_scidocs_cosine_avg"}
KIT_BATCH_SIZE = 32  # every evaluator of the kit: bsz=32
SPLITS = {"valid": "dev", "test": "test"}  # the kit's eval_type -> our split

SembFn = Callable[[list[str]], Any]


def run_on(dataset_name: str, semb_fn: SembFn, eval_type: str = "test", data_eval_path: str = "./data-eval",
           *, show_progress: bool = True) -> dict[str, float]:
    """Scores of one dataset (``'AskUbuntu'``, ``'CQADupStack'``, ``'TwitterPara'`` or ``'SciDocs'``, any case),
    as the kit's ``run_on``: ``{metric key: round(score * 100, 2)}``."""
    name = dataset_name.lower()
    if name not in DATASETS:
        raise BenchError(f"dataset_name should be one of these: {list(DATASETS)}, got {dataset_name!r}")
    split = _split(eval_type)
    with ExitStack() as stack:
        root = _data_root(data_eval_path, stack)
        return _scores(name, semb_fn, split, root, show_progress)


def run(semb_fn_askubuntu: SembFn, semb_fn_cqadupstack: SembFn, semb_fn_twitterpara: SembFn,
        semb_fn_scidocs: SembFn, eval_type: str = "test", data_eval_path: str = "./data-eval", *,
        show_progress: bool = True) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """The four datasets, as the kit's ``run``: ``(results, results_main_metric)``, the detailed scores per
    dataset and each dataset's main score plus their mean under ``'avg'``; both are also written to
    ``results.detailed.json`` and ``results.average_precision.json`` in the working directory, as the kit does."""
    split = _split(eval_type)
    results: dict[str, dict[str, float]] = {}
    main: dict[str, float] = {}
    with ExitStack() as stack:
        root = _data_root(data_eval_path, stack)
        for name, fn in zip(DATASETS, (semb_fn_askubuntu, semb_fn_cqadupstack, semb_fn_twitterpara,
                                       semb_fn_scidocs)):
            results[name] = _scores(name, fn, split, root, show_progress)
            main[name] = results[name][MAIN_METRIC[name]]
    main["avg"] = sum(main.values()) / len(main.values())  # the kit's arithmetic, on the rounded scores
    log.info("Main evaluation scores (average precision): %s", main)
    for path, payload in (("results.detailed.json", results), ("results.average_precision.json", main)):
        with open(path, "w") as f:
            json.dump(results if payload is results else main, f, indent=4)
    return results, main


def _split(eval_type: str) -> str:
    if eval_type not in SPLITS:
        raise BenchError(f"eval_type should be one of {list(SPLITS)}, got {eval_type!r}")
    return SPLITS[eval_type]


def _data_root(data_eval_path: str | os.PathLike, stack: ExitStack) -> Path:
    """The usebench data root whose ``useb/data-eval`` is the kit's ``data_eval_path``: its grandparent when it
    already sits at ``<root>/useb/data-eval``, else a temporary root linking to it."""
    path = Path(data_eval_path).expanduser().resolve()
    if not path.is_dir():
        raise BenchError(f"data_eval_path {data_eval_path!r} is not a folder (the kit's data-eval, with askubuntu/, "
                         "cqadupstack/, twitterpara/ and scidocs/ inside)")
    if path.name == "data-eval" and path.parent.name == "useb":
        return path.parent.parent
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="usebench-useb-")))
    (tmp / "useb").mkdir()
    (tmp / "useb" / "data-eval").symlink_to(path, target_is_directory=True)
    return tmp


class RecordingEncoder:
    """The kit's call pattern around ``semb_fn`` (usebench/encoders.py ``FunctionEncoder``), keeping each text's
    raw vector: SciDocs' euclidean scores need them unnormalised."""

    def __init__(self, semb_fn: SembFn, show_progress: bool):
        from usebench.encoders import FunctionEncoder

        self.inner = FunctionEncoder(semb_fn, "semb_fn", batch_size=KIT_BATCH_SIZE, show_progress=show_progress,
                                     kind="useb-kit semb_fn", strip=True)
        self.name, self.device = self.inner.name, None
        self.raw: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str]) -> np.ndarray:
        import torch

        with torch.no_grad():
            out = self.inner.encode(texts)
        self.raw.update(zip(texts, out))
        return out

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


def _scores(name: str, semb_fn: SembFn, split: str, root: Path, show_progress: bool) -> dict[str, float]:
    """One dataset by usebench's engine, in the kit's keys, rounded as the kit rounds."""
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.eval.evaluate import evaluate
    from usebench.eval.scorer import DenseScorer

    if name == "twitterpara" and split == "dev":
        log.warning("TwitterPara does not have a development set and here the model is evaluated on the test set "
                    "instead.")
        split = "test"
    encoder = RecordingEncoder(semb_fn, show_progress)
    ev = evaluate(name, DenseScorer(encoder), split, root, allow_partial=True)
    if ev.partial:
        problems = ev.release["partial"]
        log.warning("%s (%s): the data is not the full release (%s); evaluated as it is, as the kit would", name,
                    split, "; ".join(map(str, problems[:2])) + (" ..." if len(problems) > 2 else ""))
    scores = KIT_KEYS[name](ev.scores, ev.subsets, encoder, split, root)
    return {k: round(v * 100, 2) for k, v in scores.items()}


def _askubuntu(scores: dict, subsets: dict, *_: Any) -> dict[str, float]:
    return {f"{m}_askubuntu_title": scores[m] for m in ("map", "p@1", "p@5", "mrr")}


def _cqadupstack(scores: dict, subsets: dict, *_: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for forum, values in subsets.items():
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


def _scidocs(scores: dict, subsets: dict, encoder: RecordingEncoder, split: str, root: Path) -> dict[str, float]:
    """The cosine scores are the engine's; the kit's euclidean variant (negative distance between the raw
    vectors) is scored here over the same queries with the same trec evaluation (usebench/tasks/scidocs.py)."""
    from usebench.registry import TASKS
    from usebench.tasks.scidocs import SUBTASKS, subtask_metrics

    data = TASKS.get("scidocs").load(split, root)
    euclidean = {s: subtask_metrics(data.queries[s], data.qrels[s],
                                    [_neg_distances(encoder.raw, q.text, q.candidate_texts) for q in data.queries[s]])
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


def _neg_distances(raw: dict[str, np.ndarray], query: str, candidates: tuple[str, ...]) -> np.ndarray:
    """``-||q - d||`` for each candidate (higher is better, as the kit scores it)."""
    if not candidates:
        return np.zeros(0, dtype=np.float64)
    docs = np.stack([raw[t] for t in candidates])
    return (-np.linalg.norm(raw[query][None, :] - docs, axis=-1)).astype(np.float64)


KIT_KEYS: dict[str, Callable[..., dict[str, float]]] = {
    "askubuntu": _askubuntu, "cqadupstack": _cqadupstack, "twitterpara": _twitterpara, "scidocs": _scidocs}

__all__ = ["run", "run_on"]
