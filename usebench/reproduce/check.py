"""`bench check`: re-run a small, fixed subset (packaged model, fixed seed, smoke preset, real data) into a
fresh results store and compare every metric with the committed reference results.

Results are matched by (method, base model, pooling, task, split, seed), not by run id, so a config field
added elsewhere does not turn every result into "missing"; a changed config that moves a score shows up as
drift. The reference is written by ``bench check --update`` (a run of this same subset), never typed in.
"""
from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from usebench.errors import BenchError
from usebench.registry import Registry
from usebench.store import StoredResult, items_path, iter_results, write_bytes_atomic, write_json_atomic

# The Twitter URL training sentences (tokenised, one a line), relative to the data root.
TWITTER_CORPUS = "useb/extra/twitter_url_train_tok/a.toks"
# The laptop recipe's first corpus (usebench/recipes/laptop.toml adds PIT-2015's dev sentences since): both sides of
# the pairs, concatenated and de-duplicated; the CI subset keeps it, its reference results were scored on it.
LAPTOP_CORPUS = (TWITTER_CORPUS, "useb/extra/twitter_url_train_tok/b.toks")


@dataclass(frozen=True)
class EvalUnit:
    """Evaluate an existing model (``bench eval`` engine)."""

    name: str
    model: str
    tasks: tuple[str, ...]
    split: str = "test"
    seed: int = 0


@dataclass(frozen=True)
class TrainUnit:
    """Train a method briefly, then evaluate it (``bench run`` engine)."""

    name: str
    method: str
    model: str
    tasks: tuple[str, ...]
    corpus: str | tuple[str, ...]  # relative to the data root; several files are concatenated (as --corpus twice)
    corpus_size: int
    preset: str = "smoke"
    overrides: tuple[str, ...] = ()
    split: str = "test"
    seed: int = 0
    setting: str | None = None  # e.g. adapt-nli-first: the chain nli-sts>method, as `bench run --setting`
    nli_sts_model: str | None = None  # the checkpoint that chain starts from

    @property
    def corpus_files(self) -> tuple[str, ...]:
        return (self.corpus,) if isinstance(self.corpus, str) else self.corpus


Unit = EvalUnit | TrainUnit


@dataclass(frozen=True)
class Subset:
    """A named list of units; small enough for CI (2 CPU cores, a few minutes)."""

    name: str
    units: tuple[Unit, ...]
    about: str = ""


SUBSETS: Registry[Subset] = Registry("check subset")


class UnitRunner(Protocol):
    """Runs one unit, writing its results into ``results_dir`` (the real engines, or a fake in tests)."""

    def __call__(self, unit: Unit, data_root: Path, results_dir: Path) -> None: ...


def run_eval_unit(unit: EvalUnit, data_root: Path, results_dir: Path) -> None:
    """The `bench eval` engine, not strict: a task without data yields no result (reported as missing)."""
    from usebench.plan.eval_options import EvalOptions
    from usebench.run.evaluation import evaluate_model

    evaluate_model(EvalOptions(model=unit.model, batch_size=64, device="cpu"), ",".join(unit.tasks), unit.split,
                   data_root, results_dir, strict=False, force=True, seed=unit.seed)


def run_train_unit(unit: TrainUnit, data_root: Path, results_dir: Path) -> None:
    """The `bench run` engine on a fixed subsample of the unit's corpus file, evaluated on the unit's tasks."""
    from usebench.plan.specs import RunOptions
    from usebench.run.grid import run_benchmark

    corpus = tuple(Path(data_root) / f for f in unit.corpus_files)
    for path, rel in zip(corpus, unit.corpus_files):
        if not path.is_file():
            raise BenchError(f"check unit {unit.name!r}: training corpus {path} not found (the data root must "
                             f"hold {rel})")
    if unit.seed != 0:
        raise BenchError(f"check unit {unit.name!r}: `bench run` seeds start at 0 (got seed {unit.seed})")
    # With --corpus, the "train task" only names what is evaluated: every task shares the file's corpus.
    opts = RunOptions(methods=(unit.method,), tasks=",".join(unit.tasks), seeds=1, preset=unit.preset,
                      model=unit.model, corpus=corpus, corpus_size=unit.corpus_size, overrides=unit.overrides,
                      split=unit.split, force=True, device="cpu", show_progress=False, setting=unit.setting,
                      nli_sts_model=unit.nli_sts_model)
    outcome = run_benchmark(opts, Path(data_root), results_dir)
    if outcome.skipped:
        raise BenchError(f"check unit {unit.name!r} skipped: " + "; ".join(f"{w}: {r}" for w, r in outcome.skipped))


def real_runner(unit: Unit, data_root: Path, results_dir: Path) -> None:
    """Dispatch a unit to the real engine."""
    if isinstance(unit, EvalUnit):
        run_eval_unit(unit, data_root, results_dir)
    else:
        run_train_unit(unit, data_root, results_dir)


Status = Literal["ok", "drift", "missing", "new", "data", "stale"]


@dataclass(frozen=True)
class Diff:
    """One metric of one result: reference vs fresh, in points (x100)."""

    where: str  # method/model/pooling s<seed> task/split
    metric: str  # a metric, or what a "data" / "stale" line is about
    reference: float | None
    fresh: float | None
    status: Status

    @property
    def delta(self) -> float | None:
        return None if self.reference is None or self.fresh is None else self.fresh - self.reference


@dataclass
class CheckOutcome:
    diffs: list[Diff] = field(default_factory=list)
    seconds: float = 0.0
    failed_units: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed_units and all(d.status in ("ok", "new") for d in self.diffs)


def result_key(r: StoredResult) -> str:
    m = r.record["method"]
    return f"{m['name']}/{m.get('base_model')}/{m.get('pooling')} s{r.record['seed']} {r.task}/{r.split}"


def _by_key(results_dir: Path, only_tasks: tuple[str, ...] | None = None) -> dict[str, StoredResult]:
    out: dict[str, StoredResult] = {}
    for r in iter_results(results_dir):
        if only_tasks is not None and r.task not in only_tasks:
            continue
        key = result_key(r)
        if key in out:
            raise BenchError(f"{results_dir}: two results for {key} ({out[key].path} and {r.path})")
        out[key] = r
    return out


def compare_stores(reference_dir: Path, fresh_dir: Path, tol: float, only_tasks: tuple[str, ...] | None = None
                   ) -> list[Diff]:
    """Every metric of every reference result against the fresh one (absolute tolerance ``tol`` points);
    ``only_tasks`` limits both sides to some tasks (a partial re-run)."""
    if not reference_dir.is_dir():
        raise BenchError(f"no reference results at {reference_dir}; create them with `bench check --update`")
    ref, fresh = _by_key(reference_dir, only_tasks), _by_key(fresh_dir, only_tasks)
    if not ref:
        raise BenchError(f"{reference_dir} holds no results; create them with `bench check --update`")
    diffs: list[Diff] = []
    for key in sorted(set(ref) | set(fresh)):
        r, f = ref.get(key), fresh.get(key)
        if r is not None and f is not None and r.record["task"].get("data_sha256") != f.record["task"].get("data_sha256"):
            diffs.append(Diff(key, "data_sha256", None, None, "data"))
        why = None if r is None else reference_stale_reason(r)
        if why:
            diffs.append(Diff(key, f"reference: {why}; refresh it with `bench check --update`", None, None, "stale"))
        rs, fs = (r.record["scores"] if r else {}), (f.record["scores"] if f else {})
        for metric in sorted(set(rs) | set(fs)):
            a = None if metric not in rs else float(rs[metric]) * 100
            b = None if metric not in fs else float(fs[metric]) * 100
            if a is None:
                status: Status = "new"
            elif b is None:
                status = "missing"
            else:
                status = "ok" if abs(b - a) <= tol else "drift"
            diffs.append(Diff(key, metric, a, b, status))
    return diffs


def reference_stale_reason(ref: StoredResult) -> str | None:
    """Why a reference result no longer holds under the task as it is now (:mod:`usebench.store.validity`: a valid record
    of the task's current version), or None. Its data are compared with the fresh run's (status "data") and its
    metrics one by one (a metric the task gained shows as "new")."""
    from dataclasses import replace

    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.registry import TASKS
    from usebench.store.validity import expected_result, stale_reason

    if ref.task not in TASKS.names():
        return None  # a task this installation does not register: nothing to hold it to
    return stale_reason(ref.record, replace(expected_result(ref.task, ref.split, None), metrics=()))


def run_subset(subset: Subset, data_root: Path, results_dir: Path, runner: UnitRunner = real_runner
               ) -> list[tuple[str, str]]:
    """Run every unit; a unit that fails is recorded (its results will be missing), not fatal."""
    failed = []
    for unit in subset.units:
        try:
            runner(unit, data_root, results_dir)
        except BenchError as e:
            failed.append((unit.name, str(e)))
    return failed


def restrict(subset: Subset, tasks: tuple[str, ...]) -> Subset:
    """The part of ``subset`` that evaluates ``tasks`` (units without any of them are dropped)."""
    units = tuple(dataclasses.replace(u, tasks=tuple(t for t in u.tasks if t in tasks)) for u in subset.units)
    return Subset(f"{subset.name}[{','.join(tasks)}]", tuple(u for u in units if u.tasks), subset.about)


def run_check(subset: Subset, data_root: Path, against: Path, tol: float, *, work_dir: Path | None = None,
              fresh: Path | None = None, runner: UnitRunner = real_runner,
              only_tasks: tuple[str, ...] | None = None) -> CheckOutcome:
    """Re-run ``subset`` (or take ``fresh``) and compare it with ``against``."""
    t0 = time.perf_counter()
    outcome = CheckOutcome()
    if fresh is not None:
        outcome.diffs = compare_stores(against, fresh, tol, only_tasks)
    else:
        with _work_dir(work_dir) as wd:
            outcome.failed_units = run_subset(subset, data_root, wd, runner)
            outcome.diffs = compare_stores(against, wd, tol, only_tasks)
    outcome.seconds = time.perf_counter() - t0
    return outcome


def update_reference(subset: Subset, data_root: Path, against: Path, work_dir: Path | None = None,
                     runner: UnitRunner = real_runner) -> list[Path]:
    """Run ``subset`` and replace the result files under ``against`` with its results (records and the per-item
    files they name)."""
    with _work_dir(work_dir) as wd:
        failed = run_subset(subset, data_root, wd, runner)
        if failed:
            raise BenchError("cannot write a reference from a failed run: " +
                             "; ".join(f"{n}: {e}" for n, e in failed))
        results = list(iter_results(wd))
        if not results:
            raise BenchError(f"subset {subset.name!r} produced no results (is the data under {data_root}?)")
        if against.is_dir():
            for old in list(iter_results(against)):
                old.path.unlink()
                items_path(old.path).unlink(missing_ok=True)
        written = []
        for r in results:
            rel = r.path.relative_to(wd)
            if items_path(r.path).is_file():
                written.append(write_bytes_atomic(items_path(against / rel), items_path(r.path).read_bytes()))
            written.append(write_json_atomic(against / rel, r.record))
    return written


class _work_dir:
    """The given folder (kept), or a temporary one removed on exit."""

    def __init__(self, path: Path | None):
        self.path, self.tmp = path, None

    def __enter__(self) -> Path:
        if self.path is not None:
            self.path.mkdir(parents=True, exist_ok=True)
            return self.path
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-check-"))
        return self.tmp

    def __exit__(self, *exc) -> None:
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)


def print_diffs(outcome: CheckOutcome, tol: float) -> None:
    """The diff table (every metric), then a one-line verdict."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 140)  # CI logs: no wrapping of the result names
    table = Table(title=f"bench check (tolerance {tol} points)")
    for col in ("result", "metric", "reference", "fresh", "Δ", "status"):
        table.add_column(col, justify="right" if col in ("reference", "fresh", "Δ") else "left")
    style = {"ok": "green", "new": "yellow", "drift": "bold red", "missing": "bold red", "data": "bold red",
             "stale": "bold red"}
    for d in outcome.diffs:
        fmt = lambda v: "—" if v is None else f"{v:.2f}"
        delta = "—" if d.delta is None else f"{d.delta:+.2f}"
        table.add_row(d.where, d.metric, fmt(d.reference), fmt(d.fresh), delta, f"[{style[d.status]}]{d.status}[/]")
    console.print(table)
    for name, err in outcome.failed_units:
        console.print(f"[bold red]unit {name} failed[/]: {err}")
    bad = [d for d in outcome.diffs if d.status in ("drift", "missing", "data", "stale")]
    verdict = "[green]OK[/]" if outcome.ok else f"[bold red]FAILED[/] ({len(bad)} metrics off or missing)"
    console.print(f"{verdict}: {len(outcome.diffs)} metrics compared in {outcome.seconds:.1f} s")


SUBSETS.add("ci", Subset(
    name="ci",
    about=("all-MiniLM-L6-v2 (packaged) on TwitterPara and STSb; SimCSE (smoke preset, 12 steps of 8) trained on "
           "a 128-sentence sample of the Twitter URL training sentences, evaluated on STSb; and one unit of the "
           "laptop recipe cut short: TSDAE's laptop preset adapting MiniLM (NLI+STS -> target) for 8 steps on a "
           "256-sentence sample of its corpus, evaluated on STSb; seed 0; CPU"),
    units=(
        EvalUnit("minilm", model="minilm", tasks=("twitterpara", "stsb")),
        TrainUnit("simcse-smoke", method="simcse", model="minilm", tasks=("stsb",), corpus=TWITTER_CORPUS,
                  corpus_size=128, overrides=("max_steps=12", "batch_size=8", "log_every=4")),
        TrainUnit("tsdae-laptop", method="tsdae", model="minilm", tasks=("stsb",), corpus=LAPTOP_CORPUS,
                  corpus_size=256, preset="laptop", overrides=("max_steps=8",), setting="adapt-nli-first",
                  nli_sts_model="minilm"),
    ),
))
