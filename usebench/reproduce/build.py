"""`bench reproduce`'s plan: a paper's recipe (:mod:`usebench.reproduce.recipes`) expanded into the `bench run` options
of each run, planned by :func:`usebench.plan.planner.plan_run` exactly as `bench run` plans them, and merged into one
plan per evaluation split (a unit that several tables need is planned and trained once: the planner's run ids are
content hashes, so identical units from two runs share one id). The recipe's `bench eval` jobs become the plan's
baseline rows, run by the same engine as `bench run --methods base,bm25`.

Inputs a run or eval needs (GloVe vectors, a corpus, a published checkpoint, an optional extra) are resolved first:
a run whose input is missing is not planned and is listed with the option or command that provides it.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from usebench.data.memo import planning
from usebench.errors import BenchError, ConfigError
from usebench.reproduce.merged_runs import RecipeRun, merge_refusal, merged_runs
from usebench.reproduce.recipes import PLACEHOLDER, EvalEntry, Input, Recipe, RunEntry, TableEntry
from usebench.plan.specs import BaselineSpec, Plan, RunOptions



@dataclass(frozen=True)
class Given:
    """What `bench reproduce` was given on top of the recipe (None: the recipe's value)."""

    preset: str | None = None
    model: str | None = None
    seeds: tuple[int, tuple[int, ...]] | None = None  # (count, listed seeds) as `bench run --seeds` parses them
    max_steps: int | None = None
    overrides: tuple[str, ...] = ()  # appended after the recipe's: a later --set wins
    device: str | None = None
    batch_size: int = 64
    nli_sts_model: str | None = None
    methods: frozenset[str] | None = None  # --methods: only these methods' runs and rows
    labeled_sizes: tuple[int, ...] | None = None  # replace the recipe's (a smoke check on small labeled sets)
    corpus_sizes: tuple[int, ...] | None = None  # replace the recipe's corpus sizes (Fig. 3, the thesis' 100k)
    inputs: dict[str, str] = field(default_factory=dict)  # --glove / --input NAME=PATH
    force: bool = False
    strict: bool = False
    allow_merged_runs: bool = False  # a smoke check may merge runs the recipe lists as distinct (named in the plan)
    results_dir: Path | None = None  # the store the runs go to: work it holds needs no WordNet, extra or Java

    def merging_options(self) -> str:
        """The options that can merge a recipe's runs, as typed ("" when none was given)."""
        parts = [f"--preset {self.preset}"] if self.preset else []
        parts += [f"--model {self.model}"] if self.model else []
        parts += [f"--set {s}" for s in self.overrides]
        parts += [f"--labeled-sizes {','.join(map(str, self.labeled_sizes))}"] if self.labeled_sizes else []
        parts += [f"--corpus-sizes {','.join(map(str, self.corpus_sizes))}"] if self.corpus_sizes else []
        return " ".join(parts)


@dataclass(frozen=True)
class InputState:
    """An input as found here: its value (a path or model id) and, when missing, why and how to provide it."""

    input: Input
    value: str
    present: bool
    why: str = ""


@dataclass
class PlannedRun:
    """One run or eval of a table: its command and options, or why it is not planned."""

    table: str
    command: str
    opts: RunOptions | None = None
    baseline: BaselineSpec | None = None
    split: str = "test"
    blocked: str = ""  # a missing input or requirement: not planned
    error: str = ""  # the planner refused its configuration here (a run that would fail): not planned
    excluded: str = ""  # left out by --methods
    run_ids: list[str] = field(default_factory=list)
    plan: Plan | None = field(default=None, repr=False)  # its own plan, until merged


@dataclass
class ReproducePlan:
    """The whole plan of a recipe: per split one merged :class:`Plan`, and which table each unit serves."""

    recipe: Recipe
    tables: list[TableEntry]
    inputs: dict[str, InputState]
    runs: list[PlannedRun] = field(default_factory=list)
    plans: dict[str, Plan] = field(default_factory=dict)
    unit_tables: dict[str, list[str]] = field(default_factory=dict)  # run id -> table ids
    merged: list[str] = field(default_factory=list)  # runs merged by the options (--allow-merged-runs)

    @property
    def units(self) -> list:
        return [u for p in self.plans.values() for u in p.units]


def resolve_inputs(recipe: Recipe, given: Given, data_root: Path) -> dict[str, InputState]:
    """Every declared input, found or not (a given path wins over the data root's)."""
    unknown = sorted(set(given.inputs) - set(recipe.inputs))
    if unknown:
        flag = "--glove" if unknown[0] == "glove" else f"--input {unknown[0]}"
        raise ConfigError(f"{flag}: not an input of the {recipe.paper} recipe ({recipe.path}); its inputs: "
                          f"{', '.join(recipe.inputs) or 'none'}")
    return {name: _resolve(inp, given.inputs.get(name), data_root) for name, inp in recipe.inputs.items()}


def _resolve(inp: Input, value: str | None, data_root: Path) -> InputState:
    how = f"give {inp.option} PATH" if inp.option else f"provide it: {inp.provides}"
    if inp.kind == "file":
        path = Path(value).resolve() if value else (data_root / inp.path if inp.path else None)
        if path is None:
            return InputState(inp, "", False, f"{inp.what}: not given ({inp.option} PATH; {inp.provides})")
        found = path.is_file()
        return InputState(inp, str(path), found, "" if found else f"{inp.what}: {path} not found ({how})")
    if inp.kind == "extra":
        found = importlib.util.find_spec(inp.module) is not None
        return InputState(inp, inp.module, found, "" if found else f"{inp.what}: not installed ({inp.provides})")
    from usebench.eval.models import check_model_available

    model = value or inp.model
    try:
        check_model_available(model)
    except BenchError as e:
        # the loader's own hint (`--model minilm`) is for `bench run`; here the input itself is what is needed
        return InputState(inp, model, False, f"{inp.what}: {str(e).split('; ')[0]} ({inp.provides})")
    return InputState(inp, model, True)


def build_plan(recipe: Recipe, table_ids: list[str] | None, given: Given, data_root: Path) -> ReproducePlan:
    """Expand the selected tables (all by default) into planned runs and merge them per split."""
    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench.registry import METHODS
    from usebench.plan.planner import check_set_prefixes

    check_set_prefixes(given.overrides, set(METHODS.names()))  # a typo in METHOD. is an error, not a dropped --set
    unknown = sorted((given.methods or set()) - set(METHODS.names()) - {"base", "bm25", "wordvec"})
    if unknown:
        raise ConfigError(f"--methods {unknown[0]}: " + METHODS.unknown_message(unknown[0])
                          + "; the untrained rows are base, bm25, wordvec")
    tables = [recipe.table(t) for t in table_ids] if table_ids else list(recipe.tables)
    rp = ReproducePlan(recipe, tables, resolve_inputs(recipe, given, data_root))
    rp.merged = _merged_runs(tables, given, rp.inputs, set(METHODS.names()))
    if rp.merged and not given.allow_merged_runs:
        raise ConfigError(merge_refusal(rp.merged, given.merging_options()))
    with planning():  # every run of the recipe shares one read of each file and one check of each stage
        for table in tables:
            rp.runs += [_plan_run(table.id, r, given, rp.inputs, data_root) for r in sized_runs(table.runs, given)]
            rp.runs += [_plan_eval(table.id, e, given, rp.inputs) for e in table.evals]
    _merge(rp)
    return rp


def _merged_runs(tables: list[TableEntry], given: Given, inputs: dict[str, InputState],
                 trained: set[str]) -> list[str]:
    """The pairs of the tables' runs that ``given``'s options would merge (usebench/reproduce/merged_runs.py)."""
    if not given.merging_options():
        return []
    bare_given = replace(given, preset=None, model=None, overrides=(), labeled_sizes=None, corpus_sizes=None)
    runs = []
    for table in tables:
        for index, entry in enumerate(table.runs, 1):
            bare = run_options(entry, bare_given, inputs)
            for sized in sized_runs((entry,), given):
                opts = run_options(sized, given, inputs)
                if bare is not None and opts is not None:
                    runs.append(RecipeRun(table.id, index, entry.command(), bare, opts))
    return merged_runs(runs, trained)


def sized_runs(runs: tuple[RunEntry, ...], given: Given) -> list[RunEntry]:
    """The recipe's runs with --labeled-sizes and --corpus-sizes applied (one run per corpus size, once each)."""
    out: list[RunEntry] = []
    for run in runs:
        if given.labeled_sizes is not None and run.labeled_sizes:
            run = replace(run, labeled_sizes=given.labeled_sizes)
        sizes = [run.corpus_size] if given.corpus_sizes is None or run.corpus_size is None else given.corpus_sizes
        out += [r for r in (replace(run, corpus_size=size) for size in sizes) if r not in out]
    return out


def run_options(entry: RunEntry, given: Given, inputs: dict[str, InputState]) -> RunOptions | None:
    """The `bench run` options of one recipe run with the command line's on top; None when --methods leaves none
    of its methods."""
    methods = tuple(m for m in entry.methods if given.methods is None or _selected(m, given.methods))
    if not methods:
        return None
    if given.seeds is not None:
        seeds, seed_list = given.seeds
    elif isinstance(entry.seeds, tuple):
        seeds, seed_list = len(entry.seeds), entry.seeds
    else:
        seeds, seed_list = entry.seeds, ()
    fill = _filler(inputs)
    start = (given.nli_sts_model or entry.nli_sts_model) if entry.setting in ("all", "adapt-nli-first") else None
    corpus = tuple(Path(fill(c)) for c in entry.corpus_files)
    sets = tuple(fill(s) for s in entry.overrides if not (given.model and entry.model and _key(s) in BACKBONE_BOUND)
                 and not _left_out(s, entry.methods, methods))
    return RunOptions(methods=methods, tasks=entry.tasks, eval_tasks=entry.eval_tasks, seeds=seeds,
                      seed_list=tuple(seed_list), preset=given.preset or entry.preset,
                      model=given.model or (fill(entry.model) if entry.model else None),
                      corpus=corpus, corpus_size=entry.corpus_size,
                      max_steps=given.max_steps, overrides=sets + given.overrides,
                      split=entry.split, force=given.force, strict=given.strict, device=given.device,
                      batch_size=given.batch_size, show_progress=False, setting=entry.setting,
                      labeled_sizes=entry.labeled_sizes, nli_sts_model=start, eval_pooling=entry.eval_pooling)


BACKBONE_BOUND = ("decoder_model",)  # a recipe value chosen for its run's backbone (DistilBERT's BERT decoder)
MODEL_KEYS = ("model", "decoder_model")  # overrides naming a checkpoint the unit loads when it starts


def _left_out(item: str, listed: tuple[str, ...], kept: tuple[str, ...]) -> bool:
    """A recipe's ``METHOD.key=value`` for a method of the run that --methods left out: it has nothing to reach
    (a prefix that names no method of the run at all stays, so that the planner refuses the typo)."""
    method, dot, _ = item.split("=", 1)[0].strip().partition(".")
    if not dot:
        return False

    def parts(specs: tuple[str, ...]) -> set[str]:
        return {part.strip() for spec in specs for part in spec.split(">")}

    return method in parts(listed) - parts(kept)


def _key(item: str) -> str:
    """``tsdae.decoder_model=x`` -> ``decoder_model``."""
    return item.split("=", 1)[0].strip().split(".")[-1]


def _models_missing(opts: RunOptions) -> str:
    """Checkpoints named by ``--set [M.]model|decoder_model=`` that cannot be loaded here: a unit would fail on
    them when it starts, after the others trained, so the run is refused now."""
    from usebench.eval.models import check_model_available

    missing = []
    for item in opts.overrides:
        if _key(item) in MODEL_KEYS:
            try:
                check_model_available(item.split("=", 1)[1].strip())
            except BenchError as e:
                missing.append(f"--set {item}: {str(e).split('; ')[0]}")
    return "; ".join(missing)


def _model_missing(model: str) -> str:
    """Why an evaluated model cannot be loaded here ("" when it can, or when it is BM25 or word vectors)."""
    from usebench.eval.bm25 import MODEL_NAMES
    from usebench.eval.models import check_model_available

    if model in MODEL_NAMES or model.startswith("wordvec:"):
        return ""
    try:
        check_model_available(model)
    except BenchError as e:
        return f"{model}: {str(e).split('; ')[0]}"
    return ""


def _selected(method: str, chosen: frozenset[str]) -> bool:
    """A method spec (or chain ``a>b``) is kept when each of its parts was chosen with --methods."""
    return all(part.strip() in chosen for part in method.split(">"))


def _filler(inputs: dict[str, InputState]):
    def fill(text: str) -> str:
        return PLACEHOLDER.sub(lambda m: inputs[m.group(1)].value, text)
    return fill


def _blocked(needs: tuple[str, ...], inputs: dict[str, InputState]) -> str:
    return "; ".join(inputs[n].why for n in needs if not inputs[n].present)


def _plan_run(table: str, entry: RunEntry, given: Given, inputs: dict[str, InputState],
              data_root: Path) -> PlannedRun:

    pr = PlannedRun(table, entry.command())
    opts = run_options(entry, given, inputs)
    if opts is None:
        pr.excluded = f"--methods leaves none of {', '.join(entry.methods)}"
        return pr
    pr.opts = opts
    pr.blocked = _blocked(entry.needs, inputs) or _models_missing(opts)
    if pr.blocked:
        return pr
    try:
        plan, opts = _plan_dropping_foreign_sets(opts, given.overrides, data_root, given.results_dir)
    except ConfigError as e:  # this data or these options refuse the run: it would fail later, so say it now
        pr.error = str(e)
        return pr
    except BenchError as e:  # a backbone not here, WordNet, Java, an extra: what to install is in the message
        pr.blocked = str(e)
        return pr
    pr.split, pr.opts, pr.plan = plan.split, replace(opts, split=plan.split), plan
    return pr


def _plan_dropping_foreign_sets(opts: RunOptions, given_sets: tuple[str, ...], data_root: Path,
                                results_dir: Path | None = None) -> tuple[Plan, RunOptions]:
    """Plan ``opts``; a command-line ``--set METHOD.KEY=V`` whose method is not in this run (``sbert-nli.batch_size``
    on a run without NLI stages) is dropped for this run, as it names a method of another run of the recipe. The
    recipe's own overrides are never dropped: their errors stand. Returns the plan and the options it was made
    with."""
    from usebench.plan.planner import plan_run

    while True:
        try:
            return plan_run(opts, data_root, results_dir), opts
        except ConfigError as e:
            foreign = [s for s in given_sets if s in opts.overrides and f"--set {s!r}" in str(e)
                       and "is not a method of this run" in str(e)]
            if not foreign:
                raise
            opts = replace(opts, overrides=tuple(s for s in opts.overrides if s != foreign[0]))


def _plan_eval(table: str, entry: EvalEntry, given: Given, inputs: dict[str, InputState]) -> PlannedRun:
    from usebench.tasks import expand_tasks

    pr = PlannedRun(table, entry.command(), split=entry.split)
    if given.methods is not None and entry.method not in given.methods:
        pr.excluded = f"--methods leaves out {entry.method}"
        return pr
    pr.blocked = _blocked(entry.needs, inputs)
    if pr.blocked:
        return pr
    # the untrained backbone row follows --model, as the trained rows' backbone does
    model = given.model if entry.backbone and given.model else _filler(inputs)(entry.model)
    pr.blocked = _model_missing(model)
    if pr.blocked:  # found now, not when the evaluation starts after every unit trained
        return pr
    pr.baseline = BaselineSpec(entry.method, model, tuple(expand_tasks(entry.tasks)), entry.pooling)
    return pr


def _merge(rp: ReproducePlan) -> None:
    """One plan per split: units deduplicated by run id (the same content, the same id), baselines by model and
    pooling with the union of their tasks; notes and skips once."""
    baselines: dict[tuple[str, str, str, str | None], list[str]] = {}
    for pr in rp.runs:
        plan, pr.plan = pr.plan, None
        merged = rp.plans.setdefault(pr.split, Plan(split=pr.split))
        if plan is not None:
            for unit in plan.units:
                pr.run_ids.append(unit.run_id)
                tables = rp.unit_tables.setdefault(unit.run_id, [])
                if pr.table not in tables:
                    tables.append(pr.table)
                _add_unit(merged, unit)
            merged.notes += [n for n in plan.notes if n not in merged.notes]
            merged.skipped += [s for s in plan.skipped if s not in merged.skipped]
            for b in plan.baselines:
                baselines.setdefault((pr.split, b.name, b.model, b.pooling), []).extend(b.evals)
        if pr.baseline is not None:
            b = pr.baseline
            baselines.setdefault((pr.split, b.name, b.model, b.pooling), []).extend(b.evals)
    for (split, name, model, pooling), evals in baselines.items():
        rp.plans.setdefault(split, Plan(split=split)).baselines.append(
            BaselineSpec(name, model, tuple(dict.fromkeys(evals)), pooling))
    rp.plans = {s: p for s, p in rp.plans.items() if p.units or p.baselines or p.skipped or p.notes}


def _add_unit(merged: Plan, unit: Any) -> None:
    """Add ``unit`` once: a unit another table already planned (the same run id: the same training) is evaluated
    on the tasks of both (Table 3's USEB and Table 11's STS of one Wikipedia-trained model)."""
    for i, have in enumerate(merged.units):
        if have.run_id == unit.run_id:
            evals = tuple(dict.fromkeys([*have.evals, *unit.evals]))
            if evals != have.evals:
                merged.units[i] = replace(have, evals=evals)
            return
    merged.units.append(unit)


__all__ = ["Given", "InputState", "PlannedRun", "ReproducePlan", "build_plan", "resolve_inputs", "run_options"]
