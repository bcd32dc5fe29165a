"""The results store as a pandas DataFrame (``load_results``) and the reports' seed statistics over it
(``aggregate``).

``load_results`` reads every record with :func:`usebench.store.iter_results` (a corrupt file is an error
naming it), and MTEB's result files of the USEB tasks in place (:func:`usebench.store.mteb_results.all_results`), and writes one row per (run, stage chain, setting, seed, task, split, subset, metric), with the
record's config hash, its config identity (the hash without the seed: equal for the seed repeats of one
experiment) and its data sha256. The report's row of each record (:func:`usebench.stats.table_rows.row_key`) is
spelled out in the columns ``setting``, ``method``, ``base_model``, ``pooling``, ``corpus``, ``corpus_size``,
``labeled_size``, ``variant`` and ``limit`` (a `--limit` subsample, "" for every item), so ``aggregate`` groups
exactly as the report tables do; ``model`` and ``revision`` (usebench/api/frames.py) keep apart models that share a
report row. ``table`` turns any of these frames into one row per model and one column per task without averaging
two models into one cell.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from usebench.errors import BenchError

if TYPE_CHECKING:
    import pandas as pd

# The report's row (RowKey without its --split-configs field), as frame columns.
ROW_COLUMNS = ("setting", "method", "base_model", "pooling", "corpus", "corpus_size", "labeled_size", "variant",
               "limit")
CELL_COLUMNS = ("task", "split", "subset", "metric")
RESULT_COLUMNS = ("run_id", "chain", *ROW_COLUMNS, "model", "revision", "seed", *CELL_COLUMNS, "value", "main",
                  "config_hash", "config_identity", "data_sha256", "task_version", "scorer", "step_path", "partial", "path")
# What tells two models apart in aggregate's cells and usebench.table's rows, besides the report's row.
MODEL_COLUMNS = ("model", "revision")
# What aggregate needs of a frame: usebench.load_results' and usebench.evaluate's frames both have them.
NEEDED = (*CELL_COLUMNS, "value", "main")


class ResultsDirError(BenchError, FileNotFoundError, NotADirectoryError):
    """``load_results`` was given a path that is no results directory (also a ``FileNotFoundError``)."""
STAT_COLUMNS = ("main", "mean", "std", "n", "seeds")


def load_results(results_dir: str | Path) -> pd.DataFrame:
    """Every stored result under ``results_dir`` as a long frame (columns: :data:`RESULT_COLUMNS`)."""
    import warnings

    from usebench.store.mteb_results import all_results

    root = _results_root(results_dir)
    frame = results_frame(all_results(root))  # a results store, MTEB's result files of the USEB tasks, or both
    if frame.empty:
        warnings.warn(f"no results under {root} (a results directory holds <run_id>/<task>/<split>.json)",
                      stacklevel=2)
    return frame


def results_frame(results: Iterable[Any]) -> pd.DataFrame:
    """``results`` (stored results: ``path``, ``record``, ``task``, ``split``) as :func:`load_results`' frame."""
    import pandas as pd

    from usebench.api.frames import metric_rows, model_fields
    from usebench.stats.seeds import config_identity

    rows: list[dict[str, Any]] = []
    for result in results:
        record = result.record
        head = {"run_id": record["run_id"], "chain": str(record["method"]["name"]), **_row_fields(record),
                **model_fields(record), "seed": int(record["seed"]), "task": result.task, "split": result.split}
        tail = {"config_hash": record.get("config_hash"),
                "config_identity": config_identity(record.get("config") or {}),
                "data_sha256": record["task"].get("data_sha256"),
                "task_version": str(record["task"].get("version", "1")), **measurement(record),
                "partial": bool(record["task"].get("partial")), "path": str(result.path)}
        rows.extend({**head, **row, **tail} for row in metric_rows(record))
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    for col in ("corpus_size", "labeled_size"):
        frame[col] = frame[col].astype("Int64")  # None -> <NA>, kept as a group key (dropna=False below)
    return frame


def measurement(record: dict[str, Any]) -> dict[str, str | None]:
    """How a number was measured beyond its task and data (:mod:`usebench.store.validity`): the scorer's keys that change
    numbers, and the training step path (None: not recorded); seeds that differ in either are never averaged."""
    import json

    from usebench.store.validity import path_text, scorer_identity, training_path

    path = training_path(record)
    return {"scorer": json.dumps(scorer_identity(record), sort_keys=True),
            "step_path": None if path is None else path_text(path)}


def _results_root(results_dir: Any) -> Path:
    """``results_dir`` as an existing folder, else an error saying what was expected."""
    if not isinstance(results_dir, (str, Path)):
        from usebench.errors import BenchTypeError

        raise BenchTypeError(f"results_dir must be a path, got {type(results_dir).__name__} {results_dir!r}")
    root = Path(results_dir).expanduser()
    if root.is_file():
        raise ResultsDirError(f"{root} is a file; load_results reads a results directory, the folder of "
                              "<run_id>/<task>/<split>.json (the results_dir= of usebench.evaluate, the "
                              "--results-dir of bench run and bench eval)")
    if not root.is_dir():
        raise ResultsDirError(f"results directory {root} does not exist (the results_dir= of usebench.evaluate, "
                              "the --results-dir of bench run and bench eval)")
    return root


def _row_fields(record: dict[str, Any]) -> dict[str, Any]:
    """The report's row of ``record`` as the frame's row columns."""
    from usebench.stats.table_rows import row_key

    key = row_key(record)
    return {"setting": key.group, "method": key.method, "base_model": key.model, "pooling": key.pooling,
            "corpus": key.corpus, "corpus_size": key.corpus_size, "labeled_size": key.labeled_size,
            "variant": key.variant, "limit": key.limit}


def aggregate(frame: pd.DataFrame, averages: bool = True) -> pd.DataFrame:
    """Seed statistics per report row, model and (task, split, subset, metric), as the reports compute each cell.

    ``frame``: ``usebench.load_results``' frame, or ``usebench.evaluate``'s (one run: n = 1 per cell, grouped by
    model and revision).

    Within one cell the results must be seed repeats of one experiment (one data sha256, one config identity,
    each seed once), else :class:`usebench.stats.seeds.MixedRunsError` names the runs, as in a report. The
    values are :class:`usebench.stats.seeds.SeedStats`: the mean and the sample standard deviation (ddof=1;
    NaN for one seed), n and the seeds; ``main`` marks a task's main metric. With ``averages``, the report's averaged columns (``useb.avg``,
    ``sts.avg``, ``sts12_16.avg``... every column of usebench/stats/table_specs.py that is a mean of others) are
    added as rows with ``task`` = the column id, ``metric`` = ``"mean"`` and ``main`` true: each seed's mean over the parts,
    only seeds present in every part (:func:`usebench.stats.seeds.per_seed_average`).
    """
    import pandas as pd

    keys = _key_columns(frame)
    if "seed" not in frame.columns:  # usebench.evaluate's frame: one run, seed 0
        frame = frame.assign(seed=0)
    stats: dict[tuple, Any] = {}
    main: dict[tuple, bool] = {}
    for key, group in frame.groupby([*keys, *CELL_COLUMNS], dropna=False, sort=False):
        stats[key], main[key] = _cell(group), bool(group["main"].any())
    rows = [_stat_row(keys, key, s, main[key]) for key, s in stats.items()]
    if averages:
        rows.extend(_average_rows(keys, stats))
    return pd.DataFrame(rows, columns=[*keys, *CELL_COLUMNS, *STAT_COLUMNS])


def _key_columns(frame: pd.DataFrame) -> list[str]:
    """The columns that make a row of ``frame``'s statistics: the report's row and the model's identity,
    those of them that the frame has (usebench.evaluate's frame has model and revision only)."""
    from usebench.errors import BenchTypeError, BenchValueError

    if not hasattr(frame, "columns") or not hasattr(frame, "groupby"):
        raise BenchTypeError(f"aggregate expects a DataFrame of usebench.load_results or usebench.evaluate, got "
                             f"{type(frame).__name__}")
    missing = [c for c in NEEDED if c not in frame.columns]
    if missing:
        raise BenchValueError(f"aggregate expects a frame of usebench.load_results or usebench.evaluate; this one "
                              f"lacks the columns {missing} (it has {list(frame.columns)})")
    return [c for c in (*ROW_COLUMNS, *MODEL_COLUMNS) if c in frame.columns]


# The columns whose values the seeds of one cell share, and how a refusal says they differ (a None step path:
# not recorded, compared with nothing).
SAME_IN_A_CELL = (("data_sha256", "the data differ (sha256 "), ("config_identity", "the configs differ beyond the "
                                                                                   "seed (identity "),
                  ("task_version", "the task versions differ ("), ("scorer", "the scorers differ ("),
                  ("step_path", "the training step paths differ ("))


def _cell(group: pd.DataFrame):
    """The SeedStats of one cell, after the report's comparability checks (on the columns the frame has)."""
    from usebench.stats.seeds import MixedRunsError, SeedStats

    first = group.iloc[0]
    where = f"{first.get('method', first.get('model'))} on {first['task']}/{first['split']}"
    for column, what in SAME_IN_A_CELL:
        values = group[column].dropna().unique() if column in group.columns else ()
        if len(values) > 1:
            runs = ", ".join(sorted(group["run_id"].unique()))
            shown = [str(v)[:12] if column in ("data_sha256", "config_identity") else str(v) for v in values]
            raise MixedRunsError(f"cannot average {where}: {what}{', '.join(shown)}) "
                                 f"in runs {runs}; use separate stores or move the stale results away")
    seeds = group["seed"].tolist()
    if len(set(seeds)) != len(seeds):
        twice = sorted({s for s in seeds if seeds.count(s) > 1})
        where_from = "path" if "path" in group.columns else "run_id"
        raise MixedRunsError(f"cannot average {where}: seed {twice[0]} appears twice "
                             f"({', '.join(map(str, group.loc[group['seed'] == twice[0], where_from]))})")
    return SeedStats({int(s): float(v) for s, v in zip(group["seed"], group["value"])})


def _stat_row(keys: list[str], key: tuple, s, main: bool) -> dict[str, Any]:
    cols = [*keys, *CELL_COLUMNS]
    return {**dict(zip(cols, key)), "main": main, "mean": s.mean, "std": s.std, "n": s.n, "seeds": tuple(s.seeds)}


def _average_rows(keys: list[str], stats: dict[tuple, Any]) -> list[dict[str, Any]]:
    """The report's mean-of-columns cells for every (row, split) that has all of a column's parts."""
    from usebench.stats.seeds import SeedStats, per_seed_average
    from usebench.stats.table_specs import COLUMNS

    n_row = len(keys)
    by_row: dict[tuple, dict[tuple[str, str, str], Any]] = {}
    for key, s in stats.items():
        row, (task, split, subset, metric) = key[:n_row], key[n_row:]
        if subset == "":
            by_row.setdefault(row, {})[(task, split, metric)] = s
    out = []
    for row, cells in by_row.items():
        for split in sorted({split for _, split, _ in cells}):
            def cell(col_id: str) -> SeedStats:
                col = COLUMNS[col_id]
                if col.mean_of:
                    return per_seed_average([cell(part) for part in col.mean_of])
                return cells.get((col.task or "", split, col.metric or ""), SeedStats({}))

            for col in COLUMNS.values():
                if col.mean_of:
                    s = cell(col.id)
                    if s.n:
                        out.append(_stat_row(keys, (*row, col.id, split, "", "mean"), s, True))
    return out


def table(frame, *, metric: str = "main", split: str | None = None, index: list[str] | None = None,
          scale: float = 100.0, decimals: int | None = 2):
    """One row per model, one column per task: each task's main score (or ``metric``) x ``scale``.

    ``frame``: what ``usebench.evaluate``, ``usebench.load_results`` or ``usebench.aggregate`` returned (the
    first two are aggregated over seeds first). Rows are the models' full identities (the report row's columns,
    ``model`` and ``revision``; those equal for every row are left out unless named in ``index``), so two models
    never share a cell: results that would (other configs under one row) are refused, never averaged. A missing
    value in an index column is shown as ``""``, never dropped. ``split``: default ``"test"`` where present.
    """
    from usebench.errors import BenchValueError

    stats = frame if "mean" in frame.columns else aggregate(frame)
    rows = _cells(stats, metric, split)
    keys = [c for c in (*ROW_COLUMNS, "model", "revision") if c in rows.columns]
    if index is None:
        index = _varying(rows, keys) or (["model"] if "model" in keys else keys[:1])
    unknown = [c for c in index if c not in rows.columns]
    if unknown:
        raise BenchValueError(f"index: no column {unknown} in the frame (it has {list(rows.columns)})")
    rows = rows.assign(**{c: rows[c].astype(object).where(rows[c].notna(), "") for c in index})
    twice = rows[rows.duplicated([*index, "task"], keep=False)]
    if not twice.empty:
        apart = [c for c in keys if c not in index and twice[c].astype(str).nunique() > 1]
        raise BenchValueError(f"{len(twice)} scores share a cell of index={index} (task {twice['task'].iloc[0]!r}); "
                              f"they are not averaged: add {apart or 'a column that tells them apart'} to index")
    out = rows.pivot(index=index, columns="task", values="mean")[list(dict.fromkeys(rows["task"]))] * scale
    out.columns.name = None
    return out.round(decimals) if decimals is not None else out


def _varying(rows, keys: list[str]) -> list[str]:
    """The key columns whose values differ between rows, less those that repeat an earlier one (a function's
    ``method``, ``base_model`` and ``model`` are all its name)."""
    chosen: list[str] = []
    for c in keys:
        values = rows[c].astype(str)
        if values.nunique() > 1 and not any((values == rows[o].astype(str)).all() for o in chosen):
            chosen.append(c)
    return chosen


def _cells(stats, metric: str, split: str | None):
    """The task-level rows of ``metric`` (``"main"``: each task's main metric) on ``split``."""
    from usebench.errors import BenchValueError

    top = stats[stats["subset"] == ""]
    chosen = top[top["main"].astype(bool)] if metric == "main" else top[top["metric"] == metric]
    splits = list(dict.fromkeys(chosen["split"]))
    if split is None:
        split = "test" if "test" in splits or not splits else splits[0]
        if len(splits) > 1 and "test" not in splits:
            raise BenchValueError(f"the frame holds the splits {splits}: pass split=")
    chosen = chosen[chosen["split"] == split]
    if chosen.empty:
        raise BenchValueError(f"no {metric!r} score on split {split!r} in the frame (splits {splits or 'none'}, "
                              f"metrics {sorted(set(top['metric']))[:8]})")
    return chosen
