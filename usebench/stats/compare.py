"""`bench compare A B` and ``usebench.compare``: B - A per task, paired over the test items (and the seeds).

A and B are each a run id (one seed), a run id without its ``__s<seed>`` (every seed of that configuration), a
table row's label as the reports print it (``minilm (mean)``, ``TSDAE``), or a method name when it names one row
only. A name that fits several rows is refused with the rows it fits. Per task both sides have results for: the
main metric's (or ``metric``'s) B - A, its paired bootstrap interval, a paired permutation test over items, and
Holm's correction over the tasks compared. Two sides are paired only on the same items: the same data (sha256),
task version and item ids; otherwise the task is refused with the reason, as is a side without per-item outcomes.
A quick evaluation's results (`--limit`) say so beside their side's name, and pair only with results over the same
subsample.
"""
from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from usebench.errors import BenchError
from usebench.stats.table_rows import ResultIndex, RowKey, index_results, row_label
from usebench.stats.seeds import MixedRunsError, check_comparable
from usebench.stats.intervals import NotPairableError, Resampler
from usebench.stats.loading import NoItemsError, measurement_of
from usebench.stats.paired import Paired, holm, paired, verdict
from usebench.store import StoredResult
from usebench.store.validity import limit_text


@dataclass(frozen=True)
class Side:
    """What one of A and B resolved to: its label, how the name was read, and its results."""

    name: str
    label: str
    how: str  # "run", "configuration", "row" or "method"
    results: tuple[StoredResult, ...]

    @property
    def seeds(self) -> list[int]:
        return sorted({int(r.record["seed"]) for r in self.results})

    @property
    def limited(self) -> str:
        """"" when every result is over every test item, else the --limit subsamples its results are over."""
        return "; ".join(sorted({limit_text(r.record["task"]["limit"]) for r in self.results
                                 if r.record["task"].get("limit")}))

    def heading(self) -> str:
        """How the comparison names the side: label, how it was read, its seeds, and a --limit mark."""
        mark = f"; limited: {self.limited}" if self.limited else ""
        return f"{self.label} ({self.how}; seeds {', '.join(map(str, self.seeds))}{mark})"


@dataclass(frozen=True)
class TaskComparison:
    """One task's B - A (``result``), or why it was not compared (``reason``)."""

    task: str
    split: str
    metric: str
    result: Paired | None = None
    p_holm: float | None = None
    reason: str = ""
    a_score: float | None = None
    b_score: float | None = None

    @property
    def verdict(self) -> str:
        return self.reason if self.result is None else verdict(self.result, self.p_holm)


@dataclass(frozen=True)
class Comparison:
    """A against B on every task they share (or the tasks asked for)."""

    a: Side
    b: Side
    tasks: tuple[TaskComparison, ...]
    resampler: Resampler
    only_one_side: tuple[str, ...] = field(default_factory=tuple)  # tasks one side has and the other lacks

    def notes(self) -> list[str]:
        """How the numbers were made: the interval, the test, the correction, the level."""
        tested = sum(t.result is not None for t in self.tasks)
        several = any(len(s.seeds) > 1 for s in (self.a, self.b))
        out = [f"Δ = B − A ×100. Interval: {self.resampler.describe(several)}, paired (A and B on the same item "
               "resamples; each side's seeds drawn on their own).",
               "p: paired permutation test over items (A's and B's outcomes swapped on random halves of the items, "
               f"{self.resampler.resamples:,} permutations; a pair task's similarities as ranks within each system; "
               "within seed pairs when both have several) unless the row says otherwise; two-sided; the smallest p "
               f"it can give is 1/{self.resampler.resamples + 1:,}.",
               f"Holm's correction over the {tested} task(s) compared; distinguishable from 0 means the Holm-adjusted "
               f"p < {1 - self.resampler.level:g} and the {self.resampler.level:.0%} interval excludes 0."]
        if self.only_one_side:
            out.append(f"Not compared (results on one side only): {', '.join(self.only_one_side)}.")
        for name, side in (("A", self.a), ("B", self.b)):
            if side.limited:
                out.append(f"{name} is a quick evaluation over {side.limited} (--limit): its scores are estimates "
                           "on those items, compared only with results over the same subsample.")
        return out


def resolve(name: str, results: Sequence[StoredResult]) -> Side:
    """The results ``name`` stands for (see the module docstring); a clear error when it names none or several."""
    runs = [r for r in results if r.record["run_id"] == name]
    if runs:
        return Side(name, name, "run", tuple(runs))
    config = [r for r in results if str(r.record["run_id"]).rsplit("__s", 1)[0] == name]
    if config:
        return Side(name, name, "configuration", tuple(config))
    index = index_results(results)
    labels = {key: {row_label(key, False), row_label(key, True)} for key in index.rows}
    rows = [k for k, names in labels.items() if name in names]
    how = "row"
    if not rows:
        rows, how = [k for k in index.rows if k.method == name], "method"
    if len(rows) > 1:
        rows = sorted(rows, key=lambda k: k.sort_key())
        listed = "; ".join(f"{row_label(k, True)} [{', '.join(sorted(_run_ids(index, k)))}]" for k in rows)
        raise BenchError(f"{name!r} names {len(rows)} rows of the store: {listed}. Give one row's label or a run id")
    if rows:
        found = tuple(r for cell in index.rows[rows[0]].values() for r in cell)
        return Side(name, row_label(rows[0], True), how, found)
    known = sorted({r.record["run_id"] for r in results} | {n for names in labels.values() for n in names}
                   | {k.method for k in index.rows})
    close = difflib.get_close_matches(name, known, n=3)
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
    raise BenchError(f"{name!r} is no run id, configuration, row label or method name of the store{hint}")


def _run_ids(index: ResultIndex, key: RowKey) -> set[str]:
    return {r.record["run_id"] for cell in index.rows[key].values() for r in cell}


def compare_sides(a: Side, b: Side, *, tasks: Sequence[str] | None = None, split: str = "test",
                  metric: str | None = None, resampler: Resampler | None = None) -> Comparison:
    """B - A on every task both have a result for on ``split`` (or on ``tasks``), Holm-corrected over them."""
    resampler = resampler or Resampler()
    if {r.path for r in a.results} == {r.path for r in b.results}:
        raise BenchError(f"A ({a.name}) and B ({b.name}) are the same results: nothing to compare")
    have_a, have_b = _by_task(a, split), _by_task(b, split)
    names = list(tasks) if tasks else sorted(set(have_a) & set(have_b))
    rows = [_one(t, split, have_a.get(t, []), have_b.get(t, []), metric, resampler) for t in names]
    tested = [i for i, r in enumerate(rows) if r.result is not None]
    adjusted = holm([rows[i].result.p_value for i in tested])
    for i, p in zip(tested, adjusted):
        rows[i] = replace(rows[i], p_holm=p)
    lonely = () if tasks else tuple(sorted(set(have_a) ^ set(have_b)))
    if not rows:
        raise BenchError(f"A ({a.name}) and B ({b.name}) share no task on the {split} split (A has "
                         f"{', '.join(sorted(have_a)) or 'none'}; B has {', '.join(sorted(have_b)) or 'none'})")
    return Comparison(a, b, tuple(rows), resampler, lonely)


def _by_task(side: Side, split: str) -> dict[str, list[StoredResult]]:
    out: dict[str, list[StoredResult]] = {}
    for r in side.results:
        if r.split == split:
            out.setdefault(r.task, []).append(r)
    return out


def _one(task: str, split: str, a: list[StoredResult], b: list[StoredResult], metric: str | None,
         resampler: Resampler) -> TaskComparison:
    """One task compared, or the reason it is not."""
    main = (a or b)[0].record["main_metric"] if (a or b) else ""
    metric = metric or main
    missing = [side for side, got in (("A", a), ("B", b)) if not got]
    if missing:
        return TaskComparison(task, split, metric, reason=f"not compared: no result of {' or '.join(missing)} on "
                                                          f"{task}/{split}")
    items_a, items_b = (sorted({limit_text(r.record["task"].get("limit")) for r in side}) for side in (a, b))
    if items_a != items_b:
        return TaskComparison(task, split, metric, reason=f"not compared: A is over {', '.join(items_a)}, B over "
                                                          f"{', '.join(items_b)} (not the same test items)")
    try:
        check_comparable(a)
        check_comparable(b)
        ma, mb = measurement_of(a), measurement_of(b)
        return TaskComparison(task, split, metric, paired(resampler, ma, mb, metric), a_score=ma.point(metric),
                              b_score=mb.point(metric))
    except (MixedRunsError, NoItemsError, NotPairableError, BenchError) as e:  # BenchError: e.g. an unknown metric
        return TaskComparison(task, split, metric, reason=f"not compared: {e}")


def comparison_lines(comp: Comparison) -> list[str]:
    """The comparison as text: who A and B are, one line per task and its verdict, then the notes."""
    out = [f"A: {comp.a.heading()}", f"B: {comp.b.heading()}", ""]
    for t in comp.tasks:
        if t.result is None:
            out.append(f"{t.task}/{t.split} {t.metric}: {t.reason}")
            continue
        r = t.result
        out.append(f"{t.task}/{t.split} {t.metric}: A {t.a_score * 100:.2f}, B {t.b_score * 100:.2f}, "
                   f"Δ {r.delta * 100:+.2f} [{r.low * 100:+.2f}, {r.high * 100:+.2f}], p = {r.p_value:.3g} "
                   f"(Holm {t.p_holm:.3g}; {r.test}), {r.n_items:,} items, seeds {r.seeds_a}/{r.seeds_b}")
        out.append(f"  -> {t.verdict}")
    return out + [""] + comp.notes()


def comparison_records(comp: Comparison) -> list[dict[str, object]]:
    """One JSON-able record per task (0-1 units; None where it was not compared)."""
    out = []
    for t in comp.tasks:
        r = t.result
        out.append({"task": t.task, "split": t.split, "metric": t.metric, "a": comp.a.label, "b": comp.b.label,
                    "a_score": t.a_score, "b_score": t.b_score, "delta": r and r.delta, "ci_low": r and r.low,
                    "ci_high": r and r.high, "level": comp.resampler.level, "p_value": r and r.p_value,
                    "p_holm": t.p_holm, "test": r and r.test, "n_items": r and r.n_items,
                    "seeds_a": r and r.seeds_a, "seeds_b": r and r.seeds_b,
                    "distinguishable": None if r is None else t.verdict.startswith("distinguishable"),
                    "verdict": t.verdict, "reason": t.reason})
    return out
