"""A paper's recipe: one declarative TOML file per paper (``usebench/recipes/<paper>.toml``) that lists, for each
table and figure the paper page says can be regenerated, the `bench run` runs and `bench eval` jobs it needs, the
external inputs they read (GloVe vectors, published checkpoints, corpora `bench data` does not fetch), the report
tables it writes, and the published rows that can never be made here, each with its reason.

This module reads and checks a recipe strictly (an unknown key, method, task, setting, report table or published
table is an error naming the file and the key), and expands it into :class:`~usebench.plan.specs.RunOptions`:
the same options `bench run` builds from its command line, so the planner (:func:`usebench.plan.planner.plan_run`)
turns them into units as it does for `bench run`. `bench reproduce` (:mod:`usebench.reproduce.build`) plans, runs
and reports them.

Recipe layout (every key but ``paper`` and ``[[tables]]`` is optional)::

    paper = "tsdae"                          # must equal the file's stem
    title = "..."
    page = "docs/papers/tsdae.md"

    [inputs.glove]                           # an external input; {glove} in a run or eval names its value
    what = "GloVe vectors (glove.6B.300d.txt)"
    kind = "file"                            # file | model | extra
    option = "--glove"                       # the `bench reproduce` option that gives it (file)
    path = "corpora/x.txt"                   # or: where it is looked for under the data root (file)
    model = "kwang2049/SBERT-base-nli-v2"    # a checkpoint (model); module = "mteb" (extra)
    provides = "how to get it"

    [[tables]]
    id = "table2"                            # --tables takes these ids
    title = "Table 2: the main results"
    writes = ["paper-table2"]                # `bench report --list` names
    reference = "tsdae-table2"               # the published table the skeleton is checked against
    runs = [{methods = ["tsdae"], tasks = "useb", setting = "all", seeds = 5}]
    evals = [{model = "wordvec:{glove}", tasks = "useb", method = "wordvec"}]   # backbone = true: an eval
    never = [{label = "USE-large", reason = "..."}]                            # of the untrained backbone,
                                                                               # which --model replaces

The report's names (tables, figures, published tables) live a layer above this module: the caller passes them as
:class:`Known` (``usebench.reproduce.status.known_names``) and every ``writes``, ``reference`` and
``never`` label is checked against them.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.errors import ConfigError
from usebench.reproduce.recipe_cost import CpuProfile, parse_profile
from usebench.reproduce.recipe_fields import (hint as _hint, int_list as _int_list, int_value as _int,
                                          keys as _keys, keys_each as _keys_each, list_value as _list,
                                          seeds as _seeds, str_list as _str_list, str_value as _str,
                                          table_value as _table)

RECIPES_DIR = Path(__file__).resolve().parents[1] / "recipes"
PAPERS: tuple[str, ...] = ("tsdae", "denosent", "paser", "thesis", "laptop")
SETTINGS = ("unsupervised", "adapt-nli-first", "adapt-target-first", "supervised", "all")
INPUT_KINDS = ("file", "model", "extra")
PLACEHOLDER = re.compile(r"\{([a-z0-9_]+)\}")

TOP_KEYS = ("paper", "title", "page", "inputs", "tables", "elsewhere", "cost")
INPUT_KEYS = ("what", "kind", "option", "path", "model", "module", "provides")
TABLE_KEYS = ("id", "title", "writes", "reference", "runs", "evals", "search", "never", "note")
RUN_KEYS = ("methods", "tasks", "eval_tasks", "split", "seeds", "labeled_sizes", "corpus", "corpus_size",
            "corpus_sizes", "preset", "model", "set", "setting", "needs", "nli_sts_model", "eval_pooling")
EVAL_KEYS = ("model", "pooling", "tasks", "split", "method", "needs", "backbone")
SEARCH_KEYS = ("steps", "seeds", "preset", "corpus", "set")
NEVER_KEYS = ("label", "reason")
ELSEWHERE_KEYS = ("what", "reason")


@dataclass(frozen=True)
class Known:
    """The report's names a recipe may use: its tables and figures, and the published tables (label lists)."""

    writes: frozenset[str]
    published: dict[str, tuple[str, ...]]  # paper_reference.json table -> its row labels


@dataclass(frozen=True)
class Input:
    """An external input of a recipe and how a researcher provides it."""

    name: str
    what: str
    kind: str = "file"
    option: str = ""  # the `bench reproduce` option that gives it (--glove, or --input NAME=PATH for any)
    path: str = ""  # a file looked for under the data root when no option gives it
    model: str = ""  # a published checkpoint (HF id)
    module: str = ""  # an optional extra, present when this module imports
    provides: str = ""


@dataclass(frozen=True)
class RunEntry:
    """One `bench run` of a recipe, as its options (placeholders ``{input}`` resolved at expansion)."""

    methods: tuple[str, ...]
    tasks: str
    eval_tasks: str | None = None
    split: str | None = None
    seeds: int | tuple[int, ...] = 1
    labeled_sizes: tuple[int, ...] = ()
    corpus: str | tuple[str, ...] | None = None  # a list of files: concatenated, as repeated --corpus
    corpus_size: int | None = None
    preset: str | None = None
    model: str | None = None
    overrides: tuple[str, ...] = ()
    setting: str | None = None
    needs: tuple[str, ...] = ()  # inputs it reads (placeholders included)
    nli_sts_model: str | None = None  # the checkpoint its NLI+STSb chains start from (the command's option wins)
    eval_pooling: str | None = None  # score the final encoders with this pooling (a second row of one training)

    @property
    def corpus_files(self) -> tuple[str, ...]:
        """``corpus`` as a list of files (placeholders unresolved)."""
        return (self.corpus,) if isinstance(self.corpus, str) else tuple(self.corpus or ())

    def command(self) -> str:
        """The `bench run` command this entry stands for (as the paper page writes it)."""
        parts = ["bench run", f"--methods {','.join(self.methods)}", f"--tasks {self.tasks}"]
        seeds = ",".join(map(str, self.seeds)) if isinstance(self.seeds, tuple) else str(self.seeds)
        for flag, value in (("--eval-tasks", self.eval_tasks), ("--split", self.split), ("--setting", self.setting),
                            ("--nli-sts-model", self.nli_sts_model), ("--preset", self.preset),
                            ("--model", self.model), *(("--corpus", c) for c in self.corpus_files),
                            ("--eval-pooling", self.eval_pooling),
                            ("--corpus-size", self.corpus_size),
                            ("--labeled-sizes", ",".join(map(str, self.labeled_sizes)) or None)):
            if value is not None:
                parts.append(f"{flag} {value}")
        parts += [f"--set {s}" for s in self.overrides] + [f"--seeds {seeds}"]
        return " ".join(parts)


@dataclass(frozen=True)
class EvalEntry:
    """One `bench eval` job: an untrained or published model (a baseline row) on some tasks."""

    model: str
    tasks: str
    method: str  # the row's method for --methods (base, bm25, wordvec)
    pooling: str | None = None
    split: str = "test"
    needs: tuple[str, ...] = ()
    backbone: bool = False  # the untrained backbone of the paper's runs: `bench reproduce --model` replaces it

    def command(self) -> str:
        pooling = f" --pooling {self.pooling}" if self.pooling else ""
        split = f" --split {self.split}" if self.split != "test" else ""
        return f"bench eval --model {self.model}{pooling} --tasks {self.tasks}{split}"


# Recipe table ids that followed no number of the paper, and the ids that replaced them (an old id in a script or a
# note gets the new one, not a did-you-mean).
RENAMED = {("paser", "ablations"): "table4, table5, table8 and table9",
           ("thesis", "studies"): "tables5.11-5.13", ("thesis", "alpha"): "figure5.2"}


@dataclass(frozen=True)
class NeverRow:
    """A published row that can never be made here, and why."""

    label: str
    reason: str


@dataclass(frozen=True)
class TableEntry:
    """One table or figure of the paper: what it writes, the runs and evals it needs."""

    id: str
    title: str
    writes: tuple[str, ...]
    reference: str | None = None
    runs: tuple[RunEntry, ...] = ()
    evals: tuple[EvalEntry, ...] = ()
    never: tuple[NeverRow, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Recipe:
    """A paper's recipe, checked."""

    paper: str
    path: Path
    title: str = ""
    page: str = ""
    inputs: dict[str, Input] = field(default_factory=dict)
    tables: tuple[TableEntry, ...] = ()
    elsewhere: tuple[tuple[str, str], ...] = ()  # (what, reason): tables not regenerated by `bench reproduce`
    cost: CpuProfile | None = None  # a CPU-scale recipe's measured units (usebench.reproduce.recipe_cost)

    def table(self, table_id: str) -> TableEntry:
        for t in self.tables:
            if t.id == table_id:
                return t
        if (self.paper, table_id) in RENAMED:
            raise ConfigError(f"--tables {table_id}: the {self.paper} recipe's table ids follow the paper's numbers "
                              f"now; {table_id} is {RENAMED[self.paper, table_id]}")
        raise ConfigError(f"--tables {table_id}: not a table of the {self.paper} recipe ({self.path}); its tables: "
                          f"{', '.join(t.id for t in self.tables)}" + _hint(table_id, [t.id for t in self.tables]))


def recipe_path(paper: str) -> Path:
    """The packaged recipe file of ``paper``."""
    if paper not in PAPERS:
        raise ConfigError(f"no recipe for {paper!r} (papers: {', '.join(PAPERS)})" + _hint(paper, PAPERS))
    return RECIPES_DIR / f"{paper}.toml"


def load_recipe(paper_or_path: str | Path, known: Known | None = None) -> Recipe:
    """Read and check a recipe: a paper name (the packaged file) or a path to a TOML file. With ``known`` the
    report names it uses are checked too."""
    path = Path(paper_or_path) if str(paper_or_path).endswith(".toml") else recipe_path(str(paper_or_path))
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"recipe {path}: cannot read it ({e.strerror})") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"recipe {path}: not valid TOML ({e})") from None
    return parse_recipe(data, path, known)


def parse_recipe(data: dict[str, Any], path: Path, known: Known | None = None) -> Recipe:
    """Check every key and value of a recipe read from ``path`` (errors name the file and the key)."""
    where = str(path)
    _keys(data, TOP_KEYS, where)
    paper = _str(data, "paper", where, required=True)
    if paper != path.stem:
        raise ConfigError(f"{where}: paper = {paper!r} must equal the file's name ({path.stem!r})")
    inputs = {name: _input(name, value, f"{where}: inputs.{name}")
              for name, value in _table(data, "inputs", where).items()}
    tables = tuple(_table_entry(t, f"{where}: tables[{i}]", inputs, known) for i, t in
                   enumerate(_list(data, "tables", where, required=True)))
    ids = [t.id for t in tables]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        raise ConfigError(f"{where}: tables: id {dup!r} is used twice")
    elsewhere = tuple((_str(e, "what", f"{where}: elsewhere[{i}]", required=True),
                       _str(e, "reason", f"{where}: elsewhere[{i}]", required=True))
                      for i, e in enumerate(_keys_each(_list(data, "elsewhere", where), ELSEWHERE_KEYS,
                                                       f"{where}: elsewhere")))
    return Recipe(paper=paper, path=path, title=_str(data, "title", where), page=_str(data, "page", where),
                  inputs=inputs, tables=tables, elsewhere=elsewhere,
                  cost=parse_profile(data.get("cost"), f"{where}: cost"))


def _input(name: str, value: Any, where: str) -> Input:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a table")
    _keys(value, INPUT_KEYS, where)
    inp = Input(name=name, **{k: _str(value, k, where) for k in INPUT_KEYS if k in value})
    if inp.kind not in INPUT_KINDS:
        raise ConfigError(f"{where}.kind: {inp.kind!r} is not one of {', '.join(INPUT_KINDS)}")
    needed = {"file": inp.option or inp.path, "model": inp.model, "extra": inp.module}[inp.kind]
    if not needed or not inp.what or not inp.provides:
        raise ConfigError(f"{where}: a {inp.kind} input needs what, provides and "
                          + {"file": "option or path", "model": "model", "extra": "module"}[inp.kind])
    return inp


def _table_entry(value: Any, where: str, inputs: dict[str, Input], known: Known | None) -> TableEntry:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a table")
    _keys(value, TABLE_KEYS, where)
    writes = tuple(_str_list(value, "writes", where, required=True))
    for name in writes if known else ():
        if name not in known.writes:
            raise ConfigError(f"{where}.writes: {name!r} is not a report table or figure (`bench report --list`)"
                              + _hint(name, sorted(known.writes)))
    reference = _str(value, "reference", where) or None
    if known and reference is not None and reference not in known.published:
        raise ConfigError(f"{where}.reference: {reference!r} is not a published table of "
                          "usebench/report/paper_reference.json" + _hint(reference, list(known.published)))
    labels = known.published.get(reference or "") if known else None
    runs = [_run(r, f"{where}.runs[{i}]", inputs) for i, r in enumerate(_list(value, "runs", where))]
    runs += _search_runs(value.get("search"), f"{where}.search", inputs)
    evals = tuple(_eval(e, f"{where}.evals[{i}]", inputs) for i, e in enumerate(_list(value, "evals", where)))
    never = tuple(_never(n, f"{where}.never[{i}]", labels) for i, n in enumerate(_list(value, "never", where)))
    return TableEntry(id=_str(value, "id", where, required=True), title=_str(value, "title", where, required=True),
                      writes=writes, reference=reference, runs=tuple(r for group in runs for r in group),
                      evals=evals, never=never, note=_str(value, "note", where))


def _run(value: Any, where: str, inputs: dict[str, Input]) -> list[RunEntry]:
    """One run (several with ``corpus_sizes``: one `bench run` per size, as the paper's Fig. 3 is drawn)."""
    from usebench.plan.planner import parse_methods

    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a table")
    _keys(value, RUN_KEYS, where)
    methods = tuple(_str_list(value, "methods", where, required=True))
    try:
        from usebench import methods as _plugins  # noqa: F401  (enrols the plugins)

        parse_methods(methods)
    except ConfigError as e:
        raise ConfigError(f"{where}.methods: {e}") from None
    needs = tuple(_str_list(value, "needs", where))
    tasks, eval_tasks = _str(value, "tasks", where, required=True), _str(value, "eval_tasks", where) or None
    _check_tasks(tasks, f"{where}.tasks", needs, inputs)
    if eval_tasks:
        _check_tasks(eval_tasks, f"{where}.eval_tasks", needs, inputs)
    setting = _str(value, "setting", where) or None
    if setting is not None and setting not in SETTINGS:
        raise ConfigError(f"{where}.setting: {setting!r} is not one of {', '.join(SETTINGS)}")
    split = _str(value, "split", where) or None
    if split not in (None, "test", "dev"):
        raise ConfigError(f"{where}.split: {split!r} is not test or dev")
    base = dict(methods=methods, tasks=tasks, eval_tasks=eval_tasks, split=split, seeds=_seeds(value, where),
                labeled_sizes=tuple(_int_list(value, "labeled_sizes", where)), corpus=_corpus(value, where),
                preset=_str(value, "preset", where) or None, model=_str(value, "model", where) or None,
                overrides=tuple(_str_list(value, "set", where)), setting=setting,
                nli_sts_model=_str(value, "nli_sts_model", where) or None,
                eval_pooling=_str(value, "eval_pooling", where) or None)
    if base["nli_sts_model"] and setting not in ("adapt-nli-first", "all"):
        raise ConfigError(f"{where}.nli_sts_model: only NLI+STSb chains start from it (setting adapt-nli-first or "
                          f"all), this run's setting is {setting or 'unsupervised'}")
    _check_overrides(base["overrides"], f"{where}.set")
    sizes = _int_list(value, "corpus_sizes", where) or [_int(value, "corpus_size", where)]
    runs = [RunEntry(**base, corpus_size=size, needs=needs) for size in sizes]
    for run in runs:
        _check_placeholders(run, where, inputs)
    return [_with_needs(r) for r in runs]


def _corpus(value: dict[str, Any], where: str) -> str | tuple[str, ...] | None:
    """``corpus``: one file, or a list of files concatenated (and de-duplicated) as repeated ``--corpus``."""
    if isinstance(value.get("corpus"), list):
        return tuple(_str_list(value, "corpus", where, required=True))
    return _str(value, "corpus", where) or None


def _search_runs(value: Any, where: str, inputs: dict[str, Input]) -> list[list[RunEntry]]:
    """The TSDAE App. A search (``bench config-search`` with the paper's winners) as its `bench run` runs."""
    from usebench.report import search_runs
    from usebench.reproduce import config_search as cs

    if value is None:
        return []
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a table")
    _keys(value, SEARCH_KEYS, where)
    steps = _str_list(value, "steps", where, required=True)
    extra = tuple(_str_list(value, "set", where))
    _check_overrides(extra, f"{where}.set")
    runs: list[RunEntry] = []

    def collect(step: Any, settings: list[dict[str, Any]]) -> None:
        for setting in settings:
            runs.append(RunEntry(methods=(search_runs.METHOD,), tasks=search_runs.TASK, split=search_runs.SPLIT,
                                 seeds=_seeds(value, where), corpus=_str(value, "corpus", where) or cs.CORPUS,
                                 preset=_str(value, "preset", where) or cs.PRESET,
                                 overrides=(*extra, *cs.overrides(setting))))

    try:
        cs.search(steps, "paper", collect, Path("."), {})
    except ConfigError as e:
        raise ConfigError(f"{where}.steps: {e}") from None
    for run in runs:
        _check_placeholders(run, where, inputs)
    return [[_with_needs(r) for r in runs]]


def _eval(value: Any, where: str, inputs: dict[str, Input]) -> EvalEntry:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a table")
    _keys(value, EVAL_KEYS, where)
    needs = tuple(_str_list(value, "needs", where))
    entry = EvalEntry(model=_str(value, "model", where, required=True), tasks=_str(value, "tasks", where,
                                                                                   required=True),
                      method=_str(value, "method", where, required=True), pooling=_str(value, "pooling", where)
                      or None, split=_str(value, "split", where) or "test", needs=needs,
                      backbone=_bool(value, "backbone", where))
    if entry.method not in ("base", "bm25", "wordvec"):
        raise ConfigError(f"{where}.method: {entry.method!r} is not base, bm25 or wordvec (the row an eval fills)")
    if entry.split not in ("test", "dev"):
        raise ConfigError(f"{where}.split: {entry.split!r} is not test or dev")
    _check_tasks(entry.tasks, f"{where}.tasks", needs, inputs)
    for name in [*PLACEHOLDER.findall(entry.model), *needs]:
        if name not in inputs:
            raise ConfigError(f"{where}: input {name!r} is not declared under [inputs]" + _hint(name, list(inputs)))
    return EvalEntry(**{**entry.__dict__, "needs": tuple(dict.fromkeys([*needs, *PLACEHOLDER.findall(entry.model)]))})


def _bool(value: dict[str, Any], key: str, where: str) -> bool:
    v = value.get(key, False)
    if not isinstance(v, bool):
        raise ConfigError(f"{where}.{key}: expected true or false, got {v!r}")
    return v


def _never(value: Any, where: str, labels: tuple[str, ...] | None) -> NeverRow:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a table")
    _keys(value, NEVER_KEYS, where)
    row = NeverRow(_str(value, "label", where, required=True), _str(value, "reason", where, required=True))
    if labels is not None and row.label not in labels:
        raise ConfigError(f"{where}.label: {row.label!r} is not a row of the published table (reference)"
                          + _hint(row.label, labels))
    return row


def _check_tasks(spec: str, where: str, needs: tuple[str, ...], inputs: dict[str, Input]) -> None:
    """Every task name resolves; tasks of an extra the recipe declares (``needs``) are checked when it is here."""
    from usebench import tasks as _adapters  # noqa: F401  (enrols the adapters)
    from usebench.tasks import expand_tasks

    extras = [inputs[n] for n in needs if n in inputs and inputs[n].kind == "extra"]
    if any(not _module_present(i.module) for i in extras):
        return  # e.g. mteb:<Task> names only resolve with the mteb extra installed
    try:
        expand_tasks(spec)
    except Exception as e:  # noqa: BLE001  the registry's own message names the unknown task
        raise ConfigError(f"{where}: {e}") from None


def _check_overrides(items: tuple[str, ...], where: str) -> None:
    for item in items:
        if "=" not in item or not item.split("=", 1)[0].strip():
            raise ConfigError(f"{where}: {item!r} is not KEY=VALUE or METHOD.KEY=VALUE")


def _check_placeholders(run: RunEntry, where: str, inputs: dict[str, Input]) -> None:
    for name in [*_placeholders(run), *run.needs]:
        if name not in inputs:
            raise ConfigError(f"{where}: input {name!r} is not declared under [inputs]" + _hint(name, list(inputs)))


def _placeholders(run: RunEntry) -> list[str]:
    texts = [*run.corpus_files, run.model or "", *run.overrides]
    return [name for text in texts for name in PLACEHOLDER.findall(text)]


def _with_needs(run: RunEntry) -> RunEntry:
    return RunEntry(**{**run.__dict__, "needs": tuple(dict.fromkeys([*run.needs, *_placeholders(run)]))})


def _module_present(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


__all__ = ["PAPERS", "RECIPES_DIR", "EvalEntry", "Input", "Known", "NeverRow", "Recipe", "RunEntry", "TableEntry",
           "load_recipe", "parse_recipe", "recipe_path"]
