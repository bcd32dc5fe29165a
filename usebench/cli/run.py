"""`bench run`: train methods on each task's unlabeled corpus, evaluate, print the seed-averaged table; and what
the two grid commands (`bench run`, `bench reproduce`) share: their options (:func:`grid_options`, which hands the
command one :class:`GridArgs`) and the launch prelude (:func:`launch_prelude`: checks, paths, launcher)."""
from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from usebench.cli.dry_run import PLAN_OUT, UNITS
from usebench.cli.help_sections import SectionedCommand
from usebench.cli.launching import LAUNCH_OPTIONS, LAUNCH_KEYS, print_failures
from usebench.cli.options import DATA_ROOT, DETERMINISTIC, FAST_PATH, LOG_TO, RESULTS_DIR, STEP_TIMES, WIDE

if TYPE_CHECKING:
    from usebench.run.grid import RunOutcome


SEEDS_HELP = ("N: seeds 0..N-1; S,S,...: these seeds (1,7,42); one seed S: 'S,' (42,); 0: seed 0 alone (no run "
              "has zero seeds, so 0 is a seed)")
EVAL_BATCH = 64  # texts per evaluation batch unless --eval-batch-size says otherwise

_GRID_OPTIONS = (
    click.option("--model", default=None, help="Base model (overrides the preset's; alias minilm works offline)."),
    click.option("--max-steps", type=click.IntRange(min=1), default=None, help="Cap the optimizer steps."),
    click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                 help="Config override (typed, checked); METHOD.KEY=VALUE applies to one method only."),
    click.option("--device", default=None, help="cpu | cuda | cuda:1 (default: cuda when available)."),
    click.option("--eval-batch-size", "batch_size", type=int, default=None, callback=lambda c, p, v: _positive(p, v),
                 help=f"Texts per batch when evaluating (default {EVAL_BATCH})."),
    click.option("--batch-size", "old_batch_size", type=int, default=None, callback=lambda c, p, v: _old_batch(p, v),
                 hidden=True,  # said when used; the help names the two batches apart
                 help="Deprecated spelling of --eval-batch-size: the evaluation batch, not the training one."),
    click.option("--train-batch-size", type=int, default=None, callback=lambda c, p, v: _positive(p, v),
                 help="Examples per optimizer step of every trained stage (as --set batch_size=N; --set "
                      "METHOD.batch_size=N for one method; default: each preset's)."),
    click.option("--strict", is_flag=True, help="Missing data is an error instead of a skip."),
    click.option("--force", is_flag=True, help="Re-train and re-evaluate units that already finished (every stored "
                 "result of a retrained unit is dropped: the run names them)."),
    click.option("--nli-sts-model", default=None, metavar="PATH|HF_ID",
                 help="Start the NLI+STSb→target chains (nli-sts>METHOD, --setting adapt-nli-first/all) from this "
                      "published checkpoint (e.g. kwang2049/SBERT-base-nli-stsb-v2, TSDAE paper Table 8) instead of "
                      "training the NLI and STSb stages; recorded in the run id and results."),
    PLAN_OUT, UNITS, STEP_TIMES, DETERMINISTIC, FAST_PATH, LOG_TO, *LAUNCH_OPTIONS, DATA_ROOT, RESULTS_DIR, WIDE,
)


def grid_sections(what: tuple[str, ...], training: tuple[str, ...] = (), evaluation: tuple[str, ...] = (),
                  plan: tuple[str, ...] = ()) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The help's sections of a grid command: its own options (``what`` first, the others added to the shared
    sections) and the grid options both commands take (usebench/cli/help_sections.py)."""
    launcher = ("launcher", "max_parallel", "retries", "cpus_per_unit", "gpus_per_unit", "ray_address",
                "launcher_config")
    return (("What to run", (*what, "model", "nli_sts_model")),
            ("Training", (*training, "max_steps", "overrides", "train_batch_size", "device", "deterministic",
                          "fast_path", "log_to", "force")),
            ("Evaluation", (*evaluation, "batch_size", "old_batch_size", "strict")),
            ("Plan (--dry-run)", (*plan, "dry_run", "list_units", "plan_out_path", "step_times")),
            ("Launcher", launcher),
            ("SLURM (--launcher slurm)", tuple(k for k in LAUNCH_KEYS if k.startswith("slurm_"))),
            ("Store and data", ("data_root", "results_dir")))


@dataclass(frozen=True)
class GridArgs:
    """The options both grid commands take, as given (paths made absolute and defaults filled by
    :func:`launch_prelude`)."""

    model: str | None
    max_steps: int | None
    overrides: tuple[str, ...]
    device: str | None
    batch_size: int  # the evaluation batch (--eval-batch-size); the training batch is in overrides
    strict: bool
    force: bool
    nli_sts_model: str | None
    plan_out_path: Path | None
    list_units: bool
    step_times: Path | None
    launcher_config: Path | None
    data_root: Path | None
    results_dir: Path | None
    launch: dict[str, Any]  # LAUNCH_KEYS


def grid_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add the grid commands' shared options to a click command, which receives them as one ``grid`` argument
    (a :class:`GridArgs`) beside its own."""
    names = [fl.name for fl in fields(GridArgs) if fl.name != "launch"]

    @functools.wraps(f)
    def command(**kwargs: Any) -> Any:
        shared = {name: kwargs.pop(name) for name in names}
        shared["batch_size"], shared["overrides"] = batch_sizes(shared["batch_size"], kwargs.pop("old_batch_size"),
                                                                kwargs.pop("train_batch_size"),
                                                                tuple(shared["overrides"]))
        grid = GridArgs(**shared, launch={k: kwargs.pop(k) for k in LAUNCH_KEYS})
        return f(grid=grid, **kwargs)

    for option in reversed(_GRID_OPTIONS):
        command = option(command)
    return command


def _positive(param: click.Parameter, value: int | None) -> int | None:
    """A batch size is checked as the user spelled it: 0 or -4 would evaluate to NaN, or train nothing, later."""
    from usebench.eval.encoder import check_positive

    check_positive(value, param.opts[0])
    return value


def _old_batch(param: click.Parameter, value: int | None) -> int | None:
    if value is not None:
        _positive(param, value)
        click.secho("warning: --batch-size is deprecated: it is the evaluation batch, now --eval-batch-size (the "
                    "training batch is --train-batch-size)", fg="yellow", err=True)
    return value


def batch_sizes(eval_batch: int | None, old: int | None, train: int | None,
                overrides: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
    """(evaluation batch, overrides): ``--eval-batch-size`` or its old spelling ``--batch-size`` (both: the same value
    or an error), and ``--train-batch-size N`` as ``batch_size=N`` before the ``--set`` items (a ``METHOD.batch_size``
    item then wins for its method; a plain ``batch_size=`` beside it is an error: which one was meant?)."""
    from usebench.errors import ConfigError

    if eval_batch is not None and old is not None and eval_batch != old:
        raise ConfigError(f"--eval-batch-size {eval_batch} and --batch-size {old}: give one (--batch-size is the old "
                          "spelling of --eval-batch-size)")
    if train is not None:
        plain = [o for o in overrides if o.partition("=")[0].strip() == "batch_size"]
        if plain:
            raise ConfigError(f"--train-batch-size {train} and --set {plain[0]}: give one")
        overrides = (f"batch_size={train}", *overrides)
    return (eval_batch if eval_batch is not None else old if old is not None else EVAL_BATCH), overrides


@dataclass(frozen=True)
class Launch:
    """What the prelude settled: the model and overrides with local paths made absolute, the data root and results
    store, the launcher's options and its ``execute`` (None where this machine was not checked)."""

    model: str | None
    overrides: tuple[str, ...]
    data_root: Path
    results_dir: Path
    options: Any  # usebench.launch.LaunchOptions
    execute: Any = None
    named_store: bool = False  # --results-dir given: a committed store named so may be written into

    def claim_store(self, command: str) -> Path:
        """The results store, checked before ``command`` writes into it (:func:`usebench.store.claim_store`)."""
        from usebench.store import claim_store

        return claim_store(self.results_dir, self.named_store, command)


def launch_prelude(grid: GridArgs, here: bool) -> Launch:
    """Everything checked before planning: the batch size, --plan-out's format, the device (this machine's when
    ``here``: the local launcher runs the units; a cluster's GPUs otherwise), torchrun against a launcher, and the
    launcher itself (``here``: a missing extra fails now, before planning)."""
    from usebench.eval.encoder import check_positive, pick_device
    from usebench.launch import check_device, launch_options, make_launcher
    from usebench.paths import default_data_root, default_results_dir
    from usebench.plan.plan_rows import check_plan_out

    check_positive(grid.batch_size, "--eval-batch-size")  # before any training: 0 or -4 would evaluate to NaN after
    check_plan_out(grid.plan_out_path)
    model, overrides = absolute_paths(grid.model, grid.overrides)  # a worker elsewhere reads `./ckpt` as a hub id
    lopts = launch_options(grid.launch, grid.launcher_config)
    if here and lopts.launcher == "local":
        pick_device(grid.device)  # this machine runs the units: `--device cuda` without CUDA is a one-line error
    check_device(grid.device, lopts)  # Ray / SLURM: the cluster's GPUs, not the driver's, decide
    _check_torchrun(lopts.launcher)
    return Launch(model, overrides, Path(grid.data_root or default_data_root()),
                  Path(grid.results_dir or default_results_dir()), lopts, make_launcher(lopts) if here else None,
                  named_store=grid.results_dir is not None)


def _check_torchrun(launcher: str) -> None:
    from usebench.errors import ConfigError

    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and launcher != "local":
        raise ConfigError(f"--launcher {launcher} under torchrun: torchrun runs one unit on several GPUs; "
                          "launchers run many units on one GPU each (use one or the other)")


@click.command("run", cls=SectionedCommand, sections=grid_sections(
    ("method_spec", "task_spec", "eval_tasks", "seeds", "preset", "setting", "labeled_sizes"),
    training=("corpus", "corpus_size"), evaluation=("split", "reevaluate")))
@click.option("--methods", "method_spec", required=True,
              help="Comma-separated methods (see `bench methods`) or chains of them (tsdae>nli-sts: each stage "
                   "starts from the previous one's checkpoint), plus the untrained baselines base and bm25.")
@click.option("--tasks", "task_spec", required=True, help="Tasks or groups whose corpora are trained on and "
              "which are evaluated (e.g. useb, twitterpara).")
@click.option("--eval-tasks", default=None, help="Extra tasks to evaluate each trained model on (e.g. stsb).")
@click.option("--seeds", default="1", show_default=True, metavar="N|S,S,...",
              help=f"Seeds per unit: {SEEDS_HELP}.")
@click.option("--preset", default=None, help="paper | official | smoke (default: each method's default, paper).")
@click.option("--corpus", "corpus", multiple=True, callback=lambda ctx, param, value: _corpus_args(value),
              help="Train on this file (one sentence per line) instead of the task corpus; repeat to concatenate. "
                   "allnli: the SNLI+MultiNLI sentences of the data root without labels (TSDAE paper App. A).")
@click.option("--corpus-size", type=click.IntRange(min=1), default=None,
              help="Train on a fixed subsample of N sentences of the corpus (the paper's Fig. 3: 128 ... 65536).")
@click.option("--split", default=None, type=click.Choice(["test", "dev"]),
              help="Evaluation split (default: test; dev with --labeled-sizes, as the paper's Fig. 2, a task "
                   "without a dev split then on test).")
@click.option("--reevaluate", default=None, metavar="TASK,TASK",
              help="Score these tasks again for units that already finished, from their checkpoints, into the same "
                   "run directories (nothing is retrained); units not trained yet train as usual.")
@click.option("--setting", default=None, help="Expand the methods into the TSDAE paper's setups: unsupervised | "
              "adapt-nli-first | adapt-target-first | supervised | all.")
@click.option("--labeled-sizes", default=None, metavar="N,N,...",
              help="Pre-training (paper Fig. 2): each method then the task's supervised stage on nested labeled "
                   "subsets of these sizes, plus the supervised stage alone.")
@click.option("--eval-pooling", default=None, metavar="POOLING",
              help="Score the units' final encoders with this pooling (cls | mean | max | first_last_avg | last2avg) "
                   "instead of their method's own: another row of the same training, whose stages are shared with "
                   "the plain units (trained once).")
@click.option("--dry-run", is_flag=True, help="Build and check every unit, print the plan (a summary per chain and "
              "setting: units, stages trained, reused and done, steps, cost; each unit with --units), train nothing.")
@grid_options
def run(method_spec, task_spec, eval_tasks, seeds, preset, corpus, corpus_size, split, reevaluate, setting,
        labeled_sizes, eval_pooling, dry_run, grid: GridArgs) -> None:
    """Train each method (or chain) on each task's data, evaluate, and print mean ± std over seeds.

    Exit status: 0 when every unit finished, 1 when some unit failed (each is listed with its log) or nothing
    was trained or evaluated, 2 on a usage or configuration error."""
    from usebench.cli.grid_steps import nothing_done, plan_grid, run_planned, unfinished
    from usebench.errors import NothingDoneError
    from usebench.plan.specs import RunOptions

    seeds, seed_list = parse_seeds(seeds)
    launch = launch_prelude(grid, here=True)  # the local launcher runs the units here: checked in a dry run too
    opts = RunOptions(methods=tuple(m.strip() for m in method_spec.split(",") if m.strip()), tasks=task_spec,
                      eval_tasks=eval_tasks, seeds=seeds, seed_list=seed_list, preset=preset, model=launch.model,
                      corpus=tuple(corpus), corpus_size=corpus_size, max_steps=grid.max_steps,
                      overrides=launch.overrides, split=split, force=grid.force, strict=grid.strict,
                      device=grid.device, batch_size=grid.batch_size, setting=setting,
                      labeled_sizes=_sizes(labeled_sizes), nli_sts_model=grid.nli_sts_model,
                      reevaluate=_task_list(reevaluate), eval_pooling=eval_pooling)
    plan = plan_grid(opts, launch, grid.step_times)  # every unit built and checked before anything trains
    if dry_run:
        from usebench.cli.dry_run import plan_out, print_plan
        from usebench.plan.plan_rows import plan_view

        if not plan.units and not plan.baselines:  # every unit skipped: no empty tables, and never exit 0
            reasons = "; ".join(f"{w}: {r}" for w, r in dict.fromkeys(plan.skipped)) or "no unit or baseline"
            raise NothingDoneError(f"nothing to plan: every unit was skipped ({reasons})")

        view = plan_view(plan, launch.results_dir, data_root=launch.data_root)  # the run's own rule: a missing result
        print_plan(view, grid.list_units)
        plan_out(grid.plan_out_path, view.rows)
        return
    outcome = run_planned(plan, opts, launch)
    if int(os.environ.get("RANK", "0")) != 0:  # torchrun: one table, from rank 0
        return
    print_run_table(outcome)
    failed = unfinished(outcome)
    if failed:  # a unit left to another process is not done: never exit 0 with it
        print_failures(failed, launch.results_dir)
        raise SystemExit(1)
    error = nothing_done(outcome)
    if error is not None:
        raise error


def _task_list(value: str | None) -> tuple[str, ...]:
    """``--reevaluate``'s tasks, groups expanded (``sts`` = its seven tasks); unknown names fail here."""
    if not value:
        return ()
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.tasks import expand_tasks

    return tuple(expand_tasks(value))


PATH_KEYS = ("model", "decoder_model", "dev_corpus")  # config fields that may name a local file or directory


def absolute_paths(model: str | None, overrides: tuple[str, ...]) -> tuple[str | None, tuple[str, ...]]:
    """``--model`` and ``--set [METHOD.]model|decoder_model|dev_corpus=`` values that name an existing local path,
    made absolute: a Ray worker or SLURM job starts in another directory (or on another node) and would take a
    relative model path for a Hugging Face hub id, or not find a relative dev corpus."""
    def absolute(value: str) -> str:
        return str(Path(value).resolve()) if value and Path(value).exists() else value

    out = []
    for item in overrides:
        key, sep, value = item.partition("=")
        out.append(f"{key}={absolute(value)}" if sep and key.split(".")[-1].strip() in PATH_KEYS else item)
    return (absolute(model) if model else model), tuple(out)


def parse_seeds(spec: str) -> tuple[int, tuple[int, ...]]:
    """``--seeds``: ``"5"`` -> (5, ()) (seeds 0..4); ``"1,7,42"`` or ``"42,"`` -> (count, the listed seeds); ``"0"``
    -> (1, (0,)): a count of no seed means nothing, so a lone 0 is the seed 0 (as ``"0,"`` and ``"1"`` are)."""
    from usebench.errors import ConfigError

    try:
        if "," not in spec:
            if int(spec) == 0:
                return 1, (0,)
            if int(spec) < 1:
                raise ValueError
            return int(spec), ()
        listed = tuple(int(p) for p in spec.split(",") if p.strip())
        if any(s < 0 for s in listed):
            raise ValueError
    except ValueError:
        raise ConfigError(f"--seeds {spec!r}: expected {SEEDS_HELP}") from None
    if not listed:
        raise ConfigError(f"--seeds {spec!r}: no seed listed")
    return len(listed), listed


def _corpus_args(values: tuple[str, ...]) -> tuple[Path, ...]:
    """``--corpus`` values: existing files (resolved), or one named corpus of the data root (``allnli``)."""
    from usebench.data.nli_sentences import NAMED_CORPORA, is_named_corpus

    if any(is_named_corpus(v) for v in values):
        if len(values) > 1:
            raise click.BadParameter(f"a named corpus ({', '.join(NAMED_CORPORA)}) cannot be combined with others")
        return (Path(values[0]),)
    for v in values:
        if not Path(v).is_file():
            raise click.BadParameter(f"{v!r} is not a file (or a named corpus: {', '.join(NAMED_CORPORA)})")
    return tuple(Path(v).resolve() for v in values)


def _sizes(spec: str | None) -> tuple[int, ...]:
    from usebench.errors import ConfigError

    if not spec:
        return ()
    try:
        return tuple(int(p) for p in spec.split(",") if p.strip())
    except ValueError:
        raise ConfigError(f"--labeled-sizes {spec!r}: expected comma-separated integers, e.g. 1000,2000") from None


def print_run_table(outcome: RunOutcome) -> None:
    """Seed-averaged main scores (x100): mean ± std (n) per (method, corpus) row and evaluated task."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from usebench.stats.seeds import aggregate

    console = Console()
    for what, reason in dict.fromkeys(outcome.skipped):  # once per task, not once per method that skipped it
        console.print(f"[yellow]skipped {escape(what)}[/yellow]: {escape(reason)}")
    if outcome.units:
        trained = [n for u in outcome.units for n in u.training]
        console.print(f"{len(outcome.units)} unit(s): {trained.count('training')} stage(s) trained, "
                      f"{sum(n.startswith('resuming') for n in trained)} resumed, "
                      f"{sum(n.startswith('reusing') for n in trained)} reused, "
                      f"{sum(u.state == 'locked' for u in outcome.units)} held by another process")
    rows = list(dict.fromkeys(r for r, _ in outcome.cells))
    cols = list(dict.fromkeys(t for _, t in outcome.cells))
    table = Table(title="bench run: main score x100, mean ± std (n seeds)")
    table.add_column("method (train corpus)")
    for t in cols:
        main = outcome.cells[next(k for k in outcome.cells if k[1] == t)][0].record["main_metric"]
        table.add_column(escape(f"{t}\n{main}"), justify="right")
    for r in rows:
        cells = []
        for t in cols:
            results = outcome.cells.get((r, t))
            if not results:
                cells.append("-")
                continue
            stats = aggregate(results, results[0].record["main_metric"]).scaled(100)
            std = "—" if stats.n < 2 else f"{stats.std:.2f}"
            cells.append(f"{stats.mean:.2f} ± {std} ({stats.n})")
        table.add_row(escape(r), *cells)  # a row label is text: nli-sts[<model>]>tsdae holds brackets
    if rows:
        console.print(table)
