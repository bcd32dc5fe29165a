"""Per-item outcomes: what a task's metrics are computed from, item by item, stored beside each result.

A task that stores them returns an :class:`ItemTable` with its metrics (``Task.outcomes``): for sentence-pair tasks
each pair's similarity, graded gold score and binary label; for re-ranking and retrieval tasks each query's own
values (AP, RR, P@k, R@k, nDCG...). Every item carries its subset (a TwitterPara corpus, an STS subset, a forum, a
SciDocs subtask) and an id that is stable across runs on the same data (a pair's position in its subset file, a
query's id), so two runs of one task split pair item by item.

Each metric of the task is a :class:`Recipe` over the table: a statistic (``ap``, ``spearman``, ``pearson`` or the
``mean`` of a per-query column) of each of its subsets, then either the mean over the subsets (TwitterPara's
``ap_avg``, CQADupStack's forums, SciDocs' subtasks) or one statistic over the subsets pooled (STS12-16 "all").
:func:`metric_value` recomputes a metric from the table with the task's own functions, in the task's order, so the
value equals the stored score exactly; ``usebench/stats`` resamples the same recipes.

The file is a zip of ``.npy`` arrays (no pickle) and a JSON header, deflated, with fixed timestamps so that the same
outcomes give the same bytes (and sha256). Value columns are stored in the smallest dtype that holds them exactly
(a cosine computed in float32 is stored as float32) and read back as float64, bit for bit the values scored.
"""
from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from usebench.errors import BenchError

FORMAT = 1  # bump when the file's layout changes meaning
Kind = Literal["pairs", "queries"]
Stat = Literal["ap", "spearman", "pearson", "mean"]
Combine = Literal["mean", "pool"]
STATS: tuple[str, ...] = ("ap", "spearman", "pearson", "mean")
UNLABELLED = -1  # a pair that AP leaves out (usebench.tasks.pairs.UNLABELLED)
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest zip timestamp: the bytes depend on the content alone


class ItemsError(BenchError):
    """A per-item file that cannot be read, or items that do not reproduce their metric."""


@dataclass(frozen=True)
class Recipe:
    """How one metric is computed from the items: ``stat`` of each subset in ``subsets``, then ``combine``d
    (``mean``: the mean of the per-subset values; ``pool``: one ``stat`` over the subsets' items together).
    ``column``: the per-query column a ``mean`` averages (its NaN entries are no part of it: nDCG of a query
    without a relevant document)."""

    stat: Stat
    subsets: tuple[str, ...]
    combine: Combine = "mean"
    column: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"stat": self.stat, "subsets": list(self.subsets), "combine": self.combine, "column": self.column}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Recipe:
        if d.get("stat") not in STATS or d.get("combine") not in ("mean", "pool"):
            raise ItemsError(f"unknown metric recipe {dict(d)!r} (stat one of {', '.join(STATS)}; combine mean|pool)")
        return cls(d["stat"], tuple(d["subsets"]), d["combine"], str(d.get("column", "")))


@dataclass(frozen=True, eq=False)
class ItemTable:
    """Items of one evaluation: ``subset[i]`` indexes ``subsets``, ``ids[i]`` names the item within its subset,
    ``columns`` hold the values (pairs: ``score``, ``gold``, optional ``label``; queries: one column per measure)."""

    kind: Kind
    subsets: tuple[str, ...]
    subset: np.ndarray  # (n,) int
    ids: np.ndarray  # (n,) int (a pair's position in its subset) or str (a query id)
    columns: Mapping[str, np.ndarray]  # name -> (n,) float64 (label: int)
    recipes: Mapping[str, Recipe] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, subset: str) -> np.ndarray:
        """Positions of one subset's items."""
        return np.flatnonzero(self.subset == self.subsets.index(subset))

    def keys(self) -> list[tuple[str, str]]:
        """(subset, id) of every item: what pairs two runs' items."""
        return [(self.subsets[s], str(i)) for s, i in zip(self.subset.tolist(), self.ids.tolist())]

    def to_bytes(self) -> bytes:
        """The table as the items file (deterministic bytes)."""
        positions = self.ids.dtype.kind in "iu" and np.array_equal(self.ids, _positions(self.subset))
        header = {"format": FORMAT, "kind": self.kind, "subsets": list(self.subsets), "n": len(self),
                  "ids": "position" if positions else "stored",  # a pair's id, its position: implied, not stored
                  "columns": list(self.columns), "recipes": {m: r.to_dict() for m, r in self.recipes.items()}}
        arrays = {"subset": _compact(self.subset), **({} if positions else {"ids": _compact(self.ids)}),
                  **{f"col.{name}": _compact(values) for name, values in self.columns.items()}}
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
            _add(zf, "header.json", json.dumps(header, sort_keys=True).encode())
            for name, arr in arrays.items():
                out = io.BytesIO()
                np.lib.format.write_array(out, np.ascontiguousarray(arr), allow_pickle=False)
                _add(zf, f"{name}.npy", out.getvalue())
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, where: str = "the items file") -> ItemTable:
        """Read an items file (``where`` names it in errors)."""
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                header = json.loads(zf.read("header.json"))
                if header.get("format") != FORMAT:
                    raise ItemsError(f"{where}: items format {header.get('format')!r}, this usebench reads {FORMAT}")
                arrays = {n.removesuffix(".npy"): np.lib.format.read_array(io.BytesIO(zf.read(n)), allow_pickle=False)
                          for n in zf.namelist() if n.endswith(".npy")}
        except (zipfile.BadZipFile, KeyError, ValueError, OSError) as e:
            raise ItemsError(f"{where}: not a usebench items file ({type(e).__name__}: {e})") from None
        columns = {c: arrays[f"col.{c}"] if c == "label" else arrays[f"col.{c}"].astype(np.float64)
                   for c in header["columns"]}
        subset = arrays["subset"].astype(np.int64)
        ids = _positions(subset) if header.get("ids") == "position" else arrays["ids"]
        return cls(header["kind"], tuple(header["subsets"]), subset, ids, columns,
                   {m: Recipe.from_dict(r) for m, r in header["recipes"].items()})


def _add(zf: zipfile.ZipFile, name: str, payload: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, payload, compresslevel=9)


def _positions(subset: np.ndarray) -> np.ndarray:
    """Each item's position within its subset (0, 1, ... per subset, in table order)."""
    out = np.zeros(len(subset), np.int64)
    for code in np.unique(subset):
        rows = np.flatnonzero(subset == code)
        out[rows] = np.arange(len(rows))
    return out


def _compact(arr: np.ndarray) -> np.ndarray:
    """``arr`` in the smallest dtype that holds every value exactly (read back as float64 for value columns)."""
    arr = np.asarray(arr)
    if arr.dtype.kind in "US":
        return arr
    if arr.dtype.kind == "f":
        finite = arr[np.isfinite(arr)]
        if finite.size == arr.size and finite.size and np.array_equal(finite, np.round(finite)):
            small = _int_dtype(finite)
            if small is not None:
                return arr.astype(small)
        as32 = arr.astype(np.float32)
        same = np.array_equal(as32.astype(arr.dtype), arr, equal_nan=True)
        return as32 if same else arr
    if arr.dtype.kind in "iub":
        small = _int_dtype(arr)
        return arr.astype(small) if small is not None else arr
    raise ItemsError(f"cannot store an array of dtype {arr.dtype} as items")


def _int_dtype(values: np.ndarray) -> np.dtype | None:
    if values.size == 0:
        return np.dtype(np.int8)
    lo, hi = float(values.min()), float(values.max())
    for dt in (np.int8, np.int16, np.int32):
        info = np.iinfo(dt)
        if info.min <= lo and hi <= info.max:
            return np.dtype(dt)
    return None


def items_sha256(data: bytes) -> str:
    """sha256 of an items file's bytes (what its record holds)."""
    return hashlib.sha256(data).hexdigest()


# --- building tables ------------------------------------------------------------------------------------------

def pair_table(sets: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]],
               recipes: Mapping[str, Recipe], ids: Mapping[str, np.ndarray] | None = None) -> ItemTable:
    """Items of a pair task: ``{subset: (score, gold, label or None)}`` in subset order; an item's id is its
    position in its subset (the order the task reads its file in), or ``ids[subset]`` where given (a subsample's
    pairs keep their positions in the whole file)."""
    names = tuple(sets)
    score = np.concatenate([np.asarray(s, np.float64) for s, _, _ in sets.values()])
    gold = np.concatenate([np.asarray(g, np.float64) for _, g, _ in sets.values()])
    columns: dict[str, np.ndarray] = {"score": score, "gold": gold}
    labels = [lab for _, _, lab in sets.values()]
    if any(lab is not None for lab in labels):
        if any(lab is None for lab in labels):
            raise ItemsError("either every subset of a pair task has binary labels or none has")
        columns["label"] = np.concatenate([np.asarray(lab, np.int64) for lab in labels])
    subset = np.concatenate([np.full(len(s), i, np.int64) for i, (s, _, _) in enumerate(sets.values())])
    item_ids = np.concatenate([np.arange(len(s), dtype=np.int64) if ids is None else np.asarray(ids[name], np.int64)
                               for name, (s, _, _) in sets.items()])
    return ItemTable("pairs", names, subset, item_ids, columns, dict(recipes))


def query_table(parts: Mapping[str, tuple[Sequence[str], Mapping[str, Sequence[float]]]],
                recipes: Mapping[str, Recipe]) -> ItemTable:
    """Items of a ranking task: ``{subset: (query ids, {measure: per-query values})}`` in subset order; every
    subset has the same measures (NaN where a measure is undefined for a query)."""
    names = tuple(parts)
    measures = list(next(iter(parts.values()))[1]) if parts else []
    for name, (qids, values) in parts.items():
        if list(values) != measures or any(len(v) != len(qids) for v in values.values()):
            raise ItemsError(f"subset {name!r}: measures {list(values)} of {len(qids)} queries, expected {measures}")
    ids = np.array([q for qids, _ in parts.values() for q in distinct_ids(qids)], dtype=str)
    subset = np.concatenate([np.full(len(q), i, np.int64) for i, (q, _) in enumerate(parts.values())]) \
        if parts else np.zeros(0, np.int64)
    columns = {m: np.concatenate([np.asarray(v[m], np.float64) for _, v in parts.values()]) for m in measures}
    return ItemTable("queries", names, subset, ids, columns, dict(recipes))


def distinct_ids(qids: Sequence[str]) -> list[str]:
    """Query ids, a repeat of one named by its occurrence (``q#2``): stable on the same data, one item each."""
    seen: dict[str, int] = {}
    out = []
    for q in map(str, qids):
        seen[q] = seen.get(q, 0) + 1
        out.append(q if seen[q] == 1 else f"{q}#{seen[q]}")
    return out


def mean_recipes(metrics: Mapping[str, tuple[str, Sequence[str]]]) -> dict[str, Recipe]:
    """``{metric: (column, subsets)}`` -> recipes that average the column within each subset, then over subsets."""
    return {m: Recipe("mean", tuple(subsets), "mean", column) for m, (column, subsets) in metrics.items()}


# --- recomputing a metric exactly -------------------------------------------------------------------------------

def subset_statistic(table: ItemTable, recipe: Recipe, rows: np.ndarray) -> float:
    """``recipe.stat`` over the items at ``rows``, with the functions the tasks use (same values, same order)."""
    from usebench.eval.metrics import binary_average_precision, pearson, spearman

    if recipe.stat == "mean":
        values = table.columns[recipe.column][rows]
        values = values[~np.isnan(values)]
        return float(np.mean(values)) if values.size else 0.0
    score, gold = table.columns["score"][rows], table.columns["gold"][rows]
    if recipe.stat == "ap":
        label = table.columns["label"][rows]
        keep = label != UNLABELLED
        return binary_average_precision(label[keep], score[keep])
    return spearman(score, gold) if recipe.stat == "spearman" else pearson(score, gold)


def recipe_groups(table: ItemTable, recipe: Recipe) -> list[np.ndarray]:
    """The item positions each of the recipe's values is computed over: its subsets' items together (``pool``), or
    one group per subset (``mean``, whose values are then averaged)."""
    if recipe.combine == "pool":
        return [np.concatenate([table.rows(s) for s in recipe.subsets])]
    return [table.rows(s) for s in recipe.subsets]


def metric_value(table: ItemTable, metric: str) -> float:
    """``metric`` recomputed from the items: equal to the score the task stored for it."""
    recipe = recipe_of(table, metric)
    return float(np.mean([subset_statistic(table, recipe, rows) for rows in recipe_groups(table, recipe)]))


def items_used(table: ItemTable, metric: str) -> int:
    """How many items ``metric`` is computed over: its subsets' items, less the pairs AP leaves out (no binary label)
    and the queries where a measure is undefined (NaN)."""
    recipe = recipe_of(table, metric)
    rows = np.concatenate([table.rows(s) for s in recipe.subsets])
    if recipe.stat == "ap":
        return int((table.columns["label"][rows] != UNLABELLED).sum())
    if recipe.stat == "mean":
        return int((~np.isnan(table.columns[recipe.column][rows])).sum())
    return int(rows.size)


def recipe_of(table: ItemTable, metric: str) -> Recipe:
    """The recipe of ``metric``; an error naming the metrics the items can give."""
    if metric not in table.recipes:
        raise ItemsError(f"the stored items give {', '.join(sorted(table.recipes)) or 'no metric'}, not {metric!r}")
    return table.recipes[metric]


@dataclass(frozen=True)
class Outcomes:
    """What a task computes from its raw scores: the metrics, the per-subset metrics and the per-item outcomes
    (None: the task stores none, e.g. the BM25 rescoring wrappers and MTEB's tasks)."""

    metrics: dict[str, float]
    subsets: dict[str, dict[str, float]]
    items: ItemTable | None = None


def check_reproduces(table: ItemTable, scores: Mapping[str, float], where: str) -> None:
    """Every metric the items give must equal the task's score (a mismatch is a bug: nothing is stored)."""
    for metric in table.recipes:
        if metric not in scores:
            raise ItemsError(f"{where}: the items give {metric!r}, which the task's scores lack")
        again = metric_value(table, metric)
        if not np.isclose(again, scores[metric], rtol=0, atol=1e-12, equal_nan=True):  # NaN: refused later
            raise ItemsError(f"{where}: {metric} recomputed from the per-item outcomes is {again!r}, the task "
                             f"computed {scores[metric]!r}; nothing is stored (a bug: please report it)")
