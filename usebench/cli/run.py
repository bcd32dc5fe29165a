"""`bench run`: train methods on each task's unlabeled corpus, evaluate, print the seed-averaged table."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from usebench.cli.launching import LAUNCH_KEYS, launch_options_decorator, print_failures
from usebench.cli.options import DATA_ROOT, DETERMINISTIC, FAST_PATH, LOG_TO, RESULTS_DIR, STEP_TIMES

if TYPE_CHECKING:
    from usebench.run.grid import RunOutcome


@click.command("run")
@click.option("--methods", "method_spec", required=True,
              help="Comma-separated methods (see `bench methods`) or chains of them (tsdae>nli-sts: each stage "
                   "starts from the previous one's checkpoint), plus the untrained baselines base and bm25.")
@click.option("--tasks", "task_spec", required=True, help="Tasks or groups whose corpora are trained on and "
              "which are evaluated (e.g. useb, twitterpara).")
@click.option("--eval-tasks", default=None, help="Extra tasks to evaluate each trained model on (e.g. stsb).")
@click.option("--seeds", default="1", show_default=True, metavar="N|S,S,...",
              help="Seeds 0..N-1 per unit, or a comma-separated list (the thesis: 1,7,42; one seed: '42,').")
@click.option("--preset", default=None, help="paper | official | smoke (default: each method's default, paper).")
@click.option("--model", default=None, help="Base model (overrides the preset's; alias minilm works offline).")
@click.option("--corpus", "corpus", multiple=True, callback=lambda ctx, param, value: _corpus_args(value),
              help="Train on this file (one sentence per line) instead of the task corpus; repeat to concatenate. "
                   "allnli: the SNLI+MultiNLI sentences of the data root without labels (TSDAE paper App. A).")
@click.option("--corpus-size", type=click.IntRange(min=1), default=None,
              help="Train on a fixed subsample of N sentences of the corpus (the paper's Fig. 3: 128 ... 65536).")
@click.option("--max-steps", type=click.IntRange(min=1), default=None, help="Cap the optimizer steps.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Config override (typed, checked); METHOD.KEY=VALUE applies to one method only.")
@click.option("--split", default=None, type=click.Choice(["test", "dev"]),
              help="Evaluation split (default: test; dev with --labeled-sizes, as the paper's Fig. 2, a task "
                   "without a dev split then on test).")
@click.option("--device", default=None, help="cpu | cuda | cuda:1 (default: cuda when available).")
@click.option("--batch-size", type=int, default=64, show_default=True, help="Evaluation batch size.")
@click.option("--strict", is_flag=True, help="Missing data is an error instead of a skip.")
@click.option("--force", is_flag=True, help="Re-train and re-evaluate units that already finished (every stored "
              "result of a retrained unit is dropped: the run names them).")
@click.option("--reevaluate", default=None, metavar="TASK,TASK",
              help="Score these tasks again for units that already finished, from their checkpoints, into the same "
                   "run directories (nothing is retrained); units not trained yet train as usual.")
@click.option("--setting", default=None, help="Expand the methods into the TSDAE paper's setups: unsupervised | "
              "adapt-nli-first | adapt-target-first | supervised | all.")
@click.option("--labeled-sizes", default=None, metavar="N,N,...",
              help="Pre-training (paper Fig. 2): each method then the task's supervised stage on nested labeled "
                   "subsets of these sizes, plus the supervised stage alone.")
@click.option("--nli-sts-model", default=None, metavar="PATH|HF_ID",
              help="Start the NLI+STSb→target chains (nli-sts>METHOD, --setting adapt-nli-first/all) from this "
                   "published checkpoint (e.g. kwang2049/SBERT-base-nli-stsb-v2, TSDAE paper Table 8) instead of "
                   "training the NLI and STSb stages; recorded in the run id and results.")
@click.option("--dry-run", is_flag=True, help="Build and check every unit, print the plan (each unit's stages: "
              "trained, or reused from where), train nothing.")
@STEP_TIMES
@DETERMINISTIC
@FAST_PATH
@LOG_TO
@launch_options_decorator
@DATA_ROOT
@RESULTS_DIR
def run(method_spec, task_spec, eval_tasks, seeds, preset, model, corpus, corpus_size, max_steps, overrides, split,
        device, batch_size, strict, force, reevaluate, setting, labeled_sizes, nli_sts_model, dry_run, data_root,
        results_dir, launcher_config, step_times=None, **launch) -> None:
    """Train each method (or chain) on each task's data, evaluate, and print mean ± std over seeds.

    Exit status: 0 when every unit finished, 1 when some unit failed (each is listed with its log) or nothing
    was trained or evaluated, 2 on a usage or configuration error."""
    from usebench.errors import NothingDoneError
    from usebench.eval.encoder import check_positive, pick_device
    from usebench.launch import check_device, launch_options, make_launcher
    from usebench.paths import default_data_root, default_results_dir
    from usebench.plan.specs import RunOptions
    from usebench.plan.planner import plan_run
    from usebench.run.grid import run_benchmark
    from usebench.run.manifest import write_manifest

    check_positive(batch_size, "--batch-size")  # before any training: 0 or -4 would evaluate to NaN afterwards
    seeds, seed_list = parse_seeds(seeds)
    model, overrides = absolute_paths(model, overrides)  # a worker elsewhere would read `./ckpt` as a hub id
    opts = RunOptions(methods=tuple(m.strip() for m in method_spec.split(",") if m.strip()), tasks=task_spec,
                      eval_tasks=eval_tasks, seeds=seeds, seed_list=seed_list, preset=preset, model=model, corpus=tuple(corpus),
                      corpus_size=corpus_size, max_steps=max_steps, overrides=tuple(overrides), split=split,
                      force=force, strict=strict, device=device, batch_size=batch_size, setting=setting,
                      labeled_sizes=_sizes(labeled_sizes), nli_sts_model=nli_sts_model,
                      reevaluate=_task_list(reevaluate))
    data_root, results_dir = Path(data_root or default_data_root()), Path(results_dir or default_results_dir())
    lopts = launch_options({k: launch[k] for k in LAUNCH_KEYS}, launcher_config)
    if lopts.launcher == "local":
        pick_device(device)  # this machine runs the units: `--device cuda` without CUDA is a one-line error
    check_device(device, lopts)  # Ray / SLURM: the cluster's GPUs, not the driver's, decide
    _check_torchrun(lopts.launcher)
    execute = make_launcher(lopts)  # a missing extra fails here, before planning
    plan = plan_run(opts, data_root)  # every unit built and checked before anything trains
    if opts.reevaluate:
        from usebench.run.reevaluate import check_reevaluate

        check_reevaluate(opts.reevaluate, plan.units, force)
    if preset is None:  # the default is the papers' full budget: say so, with its cost here (also in a dry run)
        from usebench.plan.cost import paper_preset_note
        from usebench.plan.step_times import step_times_from

        note = paper_preset_note(plan, device, lopts.launcher, step_times_from(step_times))
        if note:
            click.secho(note, fg="yellow", err=True)
    if dry_run:
        print_plan(plan, results_dir)
        return
    main_rank = int(os.environ.get("RANK", "0")) == 0
    if main_rank and plan.units:
        write_manifest(plan, results_dir, lopts.launcher)  # `bench status` shows units not started yet
    outcome = run_benchmark(opts, data_root, results_dir, execute=execute, plan=plan)
    if not main_rank:  # torchrun: one table, from rank 0
        return
    print_run_table(outcome)
    failed = [u for u in outcome.units if u.state in ("failed", "locked")]
    if failed:  # a unit left to another process is not done: never exit 0 with it
        print_failures(failed, results_dir)
        raise SystemExit(1)
    if not outcome.cells:
        reasons = "; ".join(f"{w}: {r}" for w, r in outcome.skipped) or "no unit or baseline produced a result"
        raise NothingDoneError(f"nothing was trained or evaluated ({reasons})")


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


def _check_torchrun(launcher: str) -> None:
    from usebench.errors import ConfigError

    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and launcher != "local":
        raise ConfigError(f"--launcher {launcher} under torchrun: torchrun runs one unit on several GPUs; "
                          "launchers run many units on one GPU each (use one or the other)")


def parse_seeds(spec: str) -> tuple[int, tuple[int, ...]]:
    """``--seeds``: ``"5"`` -> (5, ()) (seeds 0..4); ``"1,7,42"`` or ``"42,"`` -> (count, the listed seeds)."""
    from usebench.errors import ConfigError

    try:
        if "," not in spec:
            if int(spec) < 1:
                raise ValueError
            return int(spec), ()
        listed = tuple(int(p) for p in spec.split(",") if p.strip())
    except ValueError:
        raise ConfigError(f"--seeds {spec!r}: expected a count >= 1 or comma-separated seeds, e.g. 1,7,42") from None
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


def print_plan(plan, results_dir: Path) -> None:
    """`--dry-run`: every unit with its chain, data, seed, steps, poolings, what happens to each of its stages
    (trained, or reused from which unit or home) and what a run would do with it now; then the totals."""
    from rich.console import Console
    from rich.markup import escape

    from usebench.cli.wide_table import Column, print_table
    from usebench.run.stages import force_plan, stage_usage, usage_totals
    from usebench.run.status import unit_state

    console = Console(width=320)  # the plan is a wide table: read it in a log, or with less -S
    for note in plan.notes:
        console.print(note, markup=False, highlight=False)
    for what, why in plan.skipped:
        console.print(f"[yellow]skipped {escape(what)}[/yellow]: {escape(why)}")
    columns = [Column(c) for c in ("#", "run id", "chain", "setting", "trains on", "seed", "steps", "pooling",
                                   "stages", "evaluates", "now")]
    columns.append(Column("variant", max_width=36))  # "smoke + max_steps=2 ...", folded
    forced = force_plan([u for u in plan.units if u.force], results_dir)  # what --force would reset and keep
    for note in forced.notes():
        console.print(note, markup=False, highlight=False)
    if forced.reset:
        console.print(f"--force: starts over {len(forced.reset)} folder(s) this run owns: "
                      + ", ".join(forced.reset), markup=False, highlight=False)
    usage = stage_usage(plan.units, results_dir, forced.reset)
    number: dict[str, int] = {}
    for i, u in enumerate(plan.units, 1):
        number.setdefault(u.run_id, i)  # a stage is reused from the first unit that trains it
    rows = []
    for i, (u, uses) in enumerate(zip(plan.units, usage), 1):
        steps = " > ".join("?" if s.steps is None else str(s.steps) for s in u.stages)
        # cells are plain text, never markup: a chain label such as nli-sts[/models/sbert]>tsdae holds brackets
        rows.append((
            str(i), u.run_id, u.label,
            str(u.config.get("setting", "unsupervised")), "\n".join(str(s.data["label"]) for s in u.stages),
            str(u.seed), steps, " > ".join(s.pooling for s in u.stages), "\n".join(x.text(number) for x in uses),
            evaluated_splits(u), "forced" if u.run_id in forced.reset else unit_state(results_dir / u.run_id).state,
            u.variant or "-"))
    for b in plan.baselines:
        rows.append(("", f"{b.name} ({b.model})", b.name, "baselines", "-", "-", "-", b.pooling or "-", "-",
                     ",".join(b.evals), "-", "-"))
    # a 1,895-unit plan: laid out here as rich would (rich's own layout took half of the dry run)
    print_table(console, f"bench run --dry-run: {len(plan.units)} unit(s), {len(plan.baselines)} baseline(s)",
                columns, rows)
    console.print("stages: " + usage_totals(usage), markup=False, highlight=False)


def evaluated_splits(unit) -> str:
    """``twitterpara (test), askubuntu (dev)``: the split each task is read on, as the unit will read it (a task
    without a dev split is read on test where dev was only the default)."""
    from usebench.registry import TASKS
    from usebench.run.unit import task_split

    splits = [(t, task_split(unit, TASKS.get(t))) for t in unit.evals]
    if len({s for _, s in splits}) == 1:
        return f"{','.join(t for t, _ in splits)} ({splits[0][1]})"
    return ", ".join(f"{t} ({s})" for t, s in splits)


def print_run_table(outcome: RunOutcome) -> None:
    """Seed-averaged main scores (x100): mean ± std (n) per (method, corpus) row and evaluated task."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from usebench.scores.stats import aggregate

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
