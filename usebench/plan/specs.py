"""What `bench run` plans, as plain picklable data: the options it was given, each run unit with its stages, the
untrained baseline rows, and the plan that holds them (built by :func:`usebench.plan.planner.plan_run`; any launcher
hands a :class:`UnitSpec` to :func:`usebench.run.unit.run_unit` in another process or on another machine)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usebench.plan.chains import start_label



@dataclass(frozen=True)
class RunOptions:
    """Everything `bench run` was asked for."""

    methods: tuple[str, ...]  # method names or chains "a>b"; untrained baselines base, bm25
    tasks: str
    eval_tasks: str | None = None
    seeds: int = 1
    seed_list: tuple[int, ...] = ()  # `--seeds 1,7,42`: these seeds instead of 0..seeds-1
    preset: str | None = None
    model: str | None = None
    corpus: tuple[Path, ...] = ()
    corpus_size: int | None = None  # train on a fixed subsample of this many sentences (TSDAE paper Fig. 3)
    max_steps: int | None = None
    overrides: tuple[str, ...] = ()
    split: str | None = None  # None: test; dev with --labeled-sizes (tasks without one on test, as the paper)
    force: bool = False
    strict: bool = False
    device: str | None = None
    batch_size: int = 64  # evaluation batch size
    show_progress: bool = True
    setting: str | None = None  # unsupervised | adapt-nli-first | adapt-target-first | supervised | all
    labeled_sizes: tuple[int, ...] = ()  # pre-training: the supervised stage on nested labeled subsets
    nli_sts_model: str | None = None  # a published NLI+STSb checkpoint that nli-sts>m chains start from
    reevaluate: tuple[str, ...] = ()  # tasks whose stored results finished units score again (no retraining)
    # Score the units' final encoders with this built-in pooling instead of their method's own: a second row of the
    # same training (its stages are shared, never trained again), e.g. SimCSE's [CLS] without the MLP it trained.
    eval_pooling: str | None = None


@dataclass(frozen=True)
class StageSpec:
    """One stage of a unit: a method, its preset and overrides (JSON-able), and what it trains on."""

    method: str
    preset: str
    values: dict[str, Any]  # config overrides; a later stage's `model` is set at run time
    data: dict[str, Any]  # {"kind": "corpus"|"labeled", "label", "sha256", ...}: recorded and re-checked
    home: str = ""  # where it trains, relative to the results dir (usebench.run.stages)
    identity: dict[str, Any] = field(default_factory=dict)  # hashed into its checkpoint's config_hash
    pooling: str = ""  # the pooling it exports
    steps: int | None = None  # its step budget (None: not computed)
    # How its resolved config departs from its preset's as the planner resolves it for this unit (the keys a
    # user changed with --preset, --set or --max-steps): "paper + max_steps=10"; "" for the default preset as is
    variant: str = ""


@dataclass(frozen=True)
class UnitSpec:
    """A run unit as plain data (picklable): what `run_unit` needs, whichever process runs it."""

    run_id: str
    chain: tuple[str, ...]
    stages: tuple[StageSpec, ...]
    seed: int
    task: str  # the target task whose data the unit trains on (and whose dev split "target" means)
    corpus_files: tuple[str, ...]  # --corpus files, replacing the task's own corpus
    corpus_size: int | None
    evals: tuple[str, ...]
    config: dict[str, Any]  # hashed into the run id; written to config.json and every result
    row: str  # the row label of `bench run`'s table
    split: str = "test"
    device: str | None = None
    batch_size: int = 64
    strict: bool = False
    force: bool = False
    show_progress: bool = True
    start: str | None = None  # --nli-sts-model: the published checkpoint the chain starts from
    test_where_no_dev: bool = False  # split dev by default (--labeled-sizes): a task without one on test
    variant: str = ""  # the stages' departures from their presets (StageSpec.variant), one label for the unit
    train_corpus: str = ""  # the data of the stage trained on the target task (the unit's row corpus)
    eval_pooling: str | None = None  # RunOptions.eval_pooling: the pooling its final encoder is scored with

    @property
    def label(self) -> str:
        return start_label(self.chain, self.start)


@dataclass(frozen=True)
class BaselineSpec:
    """An untrained row (`base`, `bm25`) evaluated on some tasks."""

    name: str
    model: str
    evals: tuple[str, ...]
    pooling: str | None = None  # None: the model's own (bm25 has none)


@dataclass
class Plan:
    units: list[UnitSpec] = field(default_factory=list)
    baselines: list[BaselineSpec] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (what, why)
    notes: list[str] = field(default_factory=list)  # things worth printing before work starts
    split: str = "test"  # the split the units and baselines evaluate


def task_split(spec: UnitSpec, task: Any) -> str:
    """The split ``task`` is evaluated on: the unit's, or test for a task without a dev split where dev was the
    default (``--labeled-sizes``: the paper scores Fig. 2 on the dev sets and TwitterPara, which has none, on
    test)."""
    if spec.split not in task.splits and spec.test_where_no_dev and "test" in task.splits:
        return "test"
    return spec.split
