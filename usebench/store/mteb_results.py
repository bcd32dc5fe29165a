"""MTEB's result files of the USEB tasks as usebench result records (no MTEB needed to read them).

``mteb.evaluate`` writes ``<cache>/results/<model>/<revision>/USEB-<Task>.json`` (and ``model_meta.json`` beside
it). :func:`read_results` turns each split of each such file into the record `bench eval` stores
(usebench/store/records.py ``make_record``): the scores unrounded (from the ``usebench`` block the USEB tasks
write; MTEB rounds its own copies to 6 decimals), the data sha256, counts and release check the evaluation
recorded, the model as MTEB names it (name, revision). :func:`import_results` files them into a results store, where ``bench report``
and ``usebench.load_results`` read them like any other result. ``USEB-Average`` is not imported: the reports
compute the average from the four tasks (the ``useb.avg`` column). Files of other MTEB tasks are not USEB's and are
left alone.

It lives with the store (it imports nothing but the store), so the results loaders and the report read it as they
read the store; MTEB's task classes are usebench/mteb/.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from usebench.errors import BenchError
from usebench.store.files import check_writable
from usebench.store.marker import nested_stores
from usebench.store.records import (MTEB_PREFIX, StoredResult, iter_results, make_record, model_slug, result_path,
                                    run_id, save_result)

TASK_PREFIX = MTEB_PREFIX
AVERAGE_FILE = "USEB-Average.json"
# folders between an MTEB cache and a result file: results/<model>/<revision>[/experiments/<kwargs>]
MAX_DEPTH = 5
KNOWN = {"USEB-AskUbuntu": "askubuntu", "USEB-CQADupStack": "cqadupstack", "USEB-TwitterPara": "twitterpara",
         "USEB-SciDocs": "scidocs"}  # as usebench/mteb/metadata.py names them (kept here: no MTEB import)


def result_files(folder: str | Path) -> list[Path]:
    """The USEB task files under ``folder`` (an MTEB cache, its ``results/``, a model or revision folder, or one
    file), in path order; MTEB's downloaded leaderboard copy (``remote/``) is not searched."""
    root = Path(folder).expanduser()
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise BenchError(f"MTEB results folder {root} does not exist (mteb.evaluate writes to its cache, "
                         "~/.cache/mteb or $MTEB_CACHE, unless given cache=mteb.ResultCache(PATH))")
    # MTEB's layout has a fixed depth: a bounded glob, never a walk through a results store's checkpoints (bench
    # report and load_results look here in every store)
    found = (p for depth in range(MAX_DEPTH + 1) for p in root.glob("*/" * depth + f"{TASK_PREFIX}*.json"))
    nested = nested_stores(root)  # a store nested in this one (results/laptop in results/) is read on its own
    return sorted(p for p in found if p.stem in KNOWN and "remote" not in p.relative_to(root).parts
                  and p.relative_to(root).parts[0] not in nested)


def model_info(path: Path) -> dict[str, Any]:
    """MTEB's ``model_meta.json`` beside the result (or two folders up, for MTEB's experiments), else the model
    name and revision from the folder names ``<model>/<revision>/``."""
    for folder in (path.parent, path.parent.parent.parent):
        meta = folder / "model_meta.json"
        if meta.is_file():
            return _read(meta)
    return {"name": path.parent.parent.name.replace("__", "/"), "revision": path.parent.name}


def read_results(folder: str | Path) -> list[dict[str, Any]]:
    """Every split of every USEB task file under ``folder`` as a usebench result record (see the module doc)."""
    records = []
    for path in result_files(folder):
        payload, meta = _read(path), model_info(path)
        for split, entries in (payload.get("scores") or {}).items():
            for entry in entries:
                records.append(to_record(path, payload, split, entry, meta))
    return records


def all_results(folder: str | Path) -> list[StoredResult]:
    """What ``bench report`` and ``usebench.load_results`` read from ``folder``: the results store's own files and
    the records of MTEB's result files of the USEB tasks under it (an MTEB cache, or a store beside one), so that
    ``mteb.evaluate``'s output is read in place, without :func:`import_results`."""
    stored = list(iter_results(folder))
    root = Path(folder).expanduser()
    if root.is_dir():
        for path in result_files(root):
            payload, meta = _read(path), model_info(path)
            stored += [StoredResult(path, to_record(path, payload, split, entry, meta))
                       for split, entries in (payload.get("scores") or {}).items() for entry in entries]
    return stored


def to_record(path: Path, payload: dict[str, Any], split: str, entry: dict[str, Any],
              meta: dict[str, Any]) -> dict[str, Any]:
    """One MTEB score entry (one split, subset ``default``) as a usebench record."""
    block = entry.get("usebench")
    if not isinstance(block, dict) or "exact" not in block:
        raise BenchError(f"{path}: split {split!r} has no `usebench` block: not written by usebench's MTEB tasks "
                         "(usebench.mteb.tasks()); usebench reads only those")
    name, revision = str(meta.get("name") or "unknown"), str(meta.get("revision") or "")
    exact = block["exact"]
    scores = {k: float(v) for k, v in exact["scores"].items()}
    subsets = {s: {k: float(v) for k, v in m.items()} for s, m in exact.get("subsets", {}).items()}
    # the settings the model was loaded with (usebench/eval/mteb_model.py: loader_kwargs; experiment_kwargs when they
    # differ from the checkpoint's, and in files of earlier versions); the config keeps the key its run ids hash
    kwargs = {**(meta.get("loader_kwargs") or {}), **(meta.get("experiment_kwargs") or {})}
    method = {"name": "base", "base_model": name, "pooling": str(kwargs.get("pooling") or ""),
              "max_length": kwargs.get("max_length") or meta.get("max_tokens"), "source": "mteb"}
    config = {"name": "mteb", "base_model": name, "revision": revision, "source": "mteb",
              "experiment_kwargs": kwargs}
    task = {"name": block["task"], "split": block["split"], "group": block.get("group", "useb"),
            "version": block.get("task_version"), "data_sha256": block.get("data_sha256"),
            "n_queries": block.get("n_queries"), "release": block.get("release", {}),
            "partial": bool(block.get("partial")), "mteb_task": payload.get("task_name"),
            "mteb_dataset_revision": payload.get("dataset_revision")}
    scorer = {"kind": "dense", "similarity": "cosine", "model": name, "revision": revision, "source": "mteb",
              "mteb_version": entry.get("mteb_version") or payload.get("mteb_version"), "mteb_file": str(path)}
    timings = dict(block.get("timings") or {})
    return make_record(run=run_id("mteb", model_slug(name), config, 0), task=task, method=method, seed=0,
                       scores=scores, main_metric=block["main_metric"], subsets=subsets, scorer=scorer,
                       timings=timings, config=config)


def import_results(folder: str | Path, results_dir: str | Path, overwrite: bool = False) -> list[Path]:
    """File the USEB results under ``folder`` into the results store ``results_dir``; a stored result of the same
    run with other scores is an error unless ``overwrite``. Returns the paths written or found equal."""
    records = read_results(folder)
    check_writable(results_dir, "results directory", "results_dir=")
    written = []
    for record in records:
        path = result_path(results_dir, record["run_id"], record["task"]["name"], record["task"]["split"])
        if path.is_file() and not overwrite:
            stored = _read(path)
            if stored.get("scores") == record["scores"] and \
                    stored.get("task", {}).get("data_sha256") == record["task"]["data_sha256"]:
                written.append(path)
                continue
            raise BenchError(f"{path} holds another result of run {record['run_id']} (other scores or data); "
                             "pass overwrite=True to replace it")
        written.append(save_result(results_dir, record))
    return written


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise BenchError(f"{path}: cannot read an MTEB result file ({e})") from None
    if not isinstance(data, dict):
        raise BenchError(f"{path}: not an MTEB result file (a JSON object expected)")
    return data
