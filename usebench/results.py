"""The results store as a pandas DataFrame (``load_results``) and the reports' seed statistics over it
(``aggregate``).

``load_results`` reads every record with :func:`usebench.store.iter_results` (a corrupt file is an error
naming it) and writes one row per (run, stage chain, setting, seed, task, split, subset, metric), with the
record's config hash, its config identity (the hash without the seed: equal for the seed repeats of one
experiment) and its data sha256. The report's row of each record (:func:`usebench.report.rows.row_key`) is
spelled out in the columns ``setting``, ``method``, ``base_model``, ``pooling``, ``corpus``, ``corpus_size``,
``labeled_size`` and ``variant``, so ``aggregate`` groups exactly as the report tables do.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

# The report's row (RowKey without its --split-configs field), as frame columns.
ROW_COLUMNS = ("setting", "method", "base_model", "pooling", "corpus", "corpus_size", "labeled_size", "variant")
CELL_COLUMNS = ("task", "split", "subset", "metric")
RESULT_COLUMNS = ("run_id", "chain", *ROW_COLUMNS, "seed", *CELL_COLUMNS, "value", "main", "config_hash",
                  "config_identity", "data_sha256", "partial", "path")
STAT_COLUMNS = ("main", "mean", "std", "n", "seeds")


def load_results(results_dir: str | Path) -> pd.DataFrame:
    """Every stored result under ``results_dir`` as a long frame (columns: :data:`RESULT_COLUMNS`)."""
    import pandas as pd

    from usebench.errors import BenchError
    from usebench.report.stats import config_identity
    from usebench.store import iter_results
    from usebench.frames import metric_rows

    root = Path(results_dir).expanduser()
    if not root.is_dir():
        raise BenchError(f"results directory {root} does not exist (pass the --results-dir a run wrote to)")
    rows: list[dict[str, Any]] = []
    for result in iter_results(root):
        record = result.record
        head = {"run_id": record["run_id"], "chain": str(record["method"]["name"]), **_row_fields(record),
                "seed": int(record["seed"]), "task": result.task, "split": result.split}
        tail = {"config_hash": record.get("config_hash"),
                "config_identity": config_identity(record.get("config") or {}),
                "data_sha256": record["task"].get("data_sha256"), "partial": bool(record["task"].get("partial")),
                "path": str(result.path)}
        rows.extend({**head, **row, **tail} for row in metric_rows(record))
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    for col in ("corpus_size", "labeled_size"):
        frame[col] = frame[col].astype("Int64")  # None -> <NA>, kept as a group key (dropna=False below)
    return frame


def _row_fields(record: dict[str, Any]) -> dict[str, Any]:
    """The report's row of ``record`` as the frame's row columns."""
    from usebench.report.rows import row_key

    key = row_key(record)
    return {"setting": key.group, "method": key.method, "base_model": key.model, "pooling": key.pooling,
            "corpus": key.corpus, "corpus_size": key.corpus_size, "labeled_size": key.labeled_size,
            "variant": key.variant}


def aggregate(frame: pd.DataFrame, averages: bool = True) -> pd.DataFrame:
    """Seed statistics per report row and (task, split, subset, metric), as the reports compute each cell.

    Within one cell the results must be seed repeats of one experiment (one data sha256, one config identity,
    each seed once), else :class:`usebench.report.stats.MixedRunsError` names the runs, as in a report. The
    values are :class:`usebench.report.stats.SeedStats`: the mean and the sample standard deviation (ddof=1;
    NaN for one seed), n and the seeds; ``main`` marks a task's main metric. With ``averages``, the report's averaged columns (``useb.avg``,
    ``sts.avg``, ``sts12_16.avg``... every column of usebench/report/tables.py that is a mean of others) are
    added as rows with ``task`` = the column id, ``metric`` = ``"mean"`` and ``main`` true: each seed's mean over the parts,
    only seeds present in every part (:func:`usebench.report.stats.per_seed_average`).
    """
    import pandas as pd

    stats: dict[tuple, Any] = {}
    main: dict[tuple, bool] = {}
    for key, group in frame.groupby([*ROW_COLUMNS, *CELL_COLUMNS], dropna=False, sort=False):
        stats[key], main[key] = _cell(group), bool(group["main"].any())
    rows = [_stat_row(key, s, main[key]) for key, s in stats.items()]
    if averages:
        rows.extend(_average_rows(stats))
    return pd.DataFrame(rows, columns=[*ROW_COLUMNS, *CELL_COLUMNS, *STAT_COLUMNS])


def _cell(group: pd.DataFrame):
    """The SeedStats of one cell, after the report's comparability checks."""
    from usebench.report.stats import MixedRunsError, SeedStats

    first = group.iloc[0]
    where = f"{first['method']} on {first['task']}/{first['split']}"
    for column, what in (("data_sha256", "the data differ (sha256"), ("config_identity", "the configs differ beyond "
                                                                                         "the seed (identity")):
        values = group[column].unique()
        if len(values) > 1:
            runs = ", ".join(sorted(group["run_id"].unique()))
            raise MixedRunsError(f"cannot average {where}: {what} {', '.join(str(v)[:12] for v in values)}) "
                                 f"in runs {runs}; use separate stores or move the stale results away")
    seeds = group["seed"].tolist()
    if len(set(seeds)) != len(seeds):
        twice = sorted({s for s in seeds if seeds.count(s) > 1})
        raise MixedRunsError(f"cannot average {where}: seed {twice[0]} appears twice "
                             f"({', '.join(group.loc[group['seed'] == twice[0], 'path'])})")
    return SeedStats({int(s): float(v) for s, v in zip(group["seed"], group["value"])})


def _stat_row(key: tuple, s, main: bool) -> dict[str, Any]:
    cols = [*ROW_COLUMNS, *CELL_COLUMNS]
    return {**dict(zip(cols, key)), "main": main, "mean": s.mean, "std": s.std, "n": s.n, "seeds": tuple(s.seeds)}


def _average_rows(stats: dict[tuple, Any]) -> list[dict[str, Any]]:
    """The report's mean-of-columns cells for every (row, split) that has all of a column's parts."""
    from usebench.report.stats import SeedStats, per_seed_average
    from usebench.report.tables import COLUMNS

    n_row = len(ROW_COLUMNS)
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
                        out.append(_stat_row((*row, col.id, split, "", "mean"), s, True))
    return out
