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
once per query), the tasks' protocols are usebench's (usebench/tasks/*.py, each reproducing the kit's to the
digit) with the scores computed from the raw vectors by the kit's own torch arithmetic (usebench/useb/scoring.py:
tied cosines tie as in the kit), and the data's release counts and checksums are checked: data that is not the
release (e.g. a cut copy) is evaluated, as the kit would, with a warning. TwitterPara has no dev split:
``eval_type='valid'`` evaluates its test set, with the kit's warning. ``evaluator_map`` and the evaluator
classes (``usebench.useb.evaluators``) are the kit's too, with its arguments.
"""
from __future__ import annotations

import json
from contextlib import ExitStack

from usebench.useb import evaluators
from usebench.useb.engine import (DATASETS, MAIN_METRIC, SPLITS, KitArgumentError, KitDataError, check_dataset_name,
                                  check_folder, check_split, data_root, log, scores)
from usebench.useb.evaluators import evaluator_map
from usebench.useb.scoring import KIT_BATCH_SIZE, SembFn


def run_on(dataset_name: str, semb_fn: SembFn, eval_type: str = "test", data_eval_path: str = "./data-eval",
           *, show_progress: bool = True) -> dict[str, float]:
    """Scores of one dataset (``'AskUbuntu'``, ``'CQADupStack'``, ``'TwitterPara'`` or ``'SciDocs'``, any case),
    as the kit's ``run_on``: ``{metric key: round(score * 100, 2)}``."""
    name = check_dataset_name(dataset_name)
    split = check_split(eval_type)
    folder = check_folder(data_eval_path, [name], split)
    with ExitStack() as stack:
        return scores(name, semb_fn, split, data_root(folder, stack), show_progress)


def run(semb_fn_askubuntu: SembFn, semb_fn_cqadupstack: SembFn, semb_fn_twitterpara: SembFn,
        semb_fn_scidocs: SembFn, eval_type: str = "test", data_eval_path: str = "./data-eval", *,
        show_progress: bool = True) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """The four datasets, as the kit's ``run``: ``(results, results_main_metric)``, the detailed scores per
    dataset and each dataset's main score plus their mean under ``'avg'``; both are also written to
    ``results.detailed.json`` and ``results.average_precision.json`` in the working directory, as the kit does.
    Every dataset's files are checked before anything is encoded."""
    split = check_split(eval_type)
    folder = check_folder(data_eval_path, list(DATASETS), split)
    results: dict[str, dict[str, float]] = {}
    main: dict[str, float] = {}
    with ExitStack() as stack:
        root = data_root(folder, stack)
        for name, fn in zip(DATASETS, (semb_fn_askubuntu, semb_fn_cqadupstack, semb_fn_twitterpara,
                                       semb_fn_scidocs)):
            results[name] = scores(name, fn, split, root, show_progress)
            main[name] = results[name][MAIN_METRIC[name]]
    main["avg"] = sum(main.values()) / len(main.values())  # the kit's arithmetic, on the rounded scores
    log.info("Main evaluation scores (average precision): %s", main)
    for path, payload in (("results.detailed.json", results), ("results.average_precision.json", main)):
        with open(path, "w") as f:
            json.dump(payload, f, indent=4)
    return results, main


__all__ = ["KIT_BATCH_SIZE", "KitArgumentError", "KitDataError", "SPLITS", "evaluator_map", "evaluators", "run",
           "run_on"]
