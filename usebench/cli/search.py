"""`bench config-search`: the TSDAE paper's configuration search (App. A, Tables 5-7) as `bench run` steps."""
from __future__ import annotations

from pathlib import Path

import click

from usebench.cli.options import DATA_ROOT, RESULTS_DIR


@click.command("config-search")
@click.option("--steps", default="noise,ratio,pooling,tying", show_default=True,
              help="Greedy steps to run, in the paper's order: noise (Table 5), ratio (Table 6), pooling (Table 7), "
                   "tying (the text's 79.15).")
@click.option("--choose", type=click.Choice(["paper", "greedy"]), default="paper", show_default=True,
              help="Each later step fixes the earlier winners: the paper's (delete, 0.6, CLS) or the best stored.")
@click.option("--seeds", type=click.IntRange(min=1), default=5, show_default=True, help="App. A: 5 seeds.")
@click.option("--preset", default="app-a", show_default=True,
              help="app-a: bert-base-uncased, 30K steps, STSb dev every 1.5K; smoke: MiniLM, a CPU check (with "
                   "--set dev_task=stsb --set dev_every=N: smoke does not select on STSb dev).")
@click.option("--model", default=None, help="Base model (overrides the preset's).")
@click.option("--corpus", "corpus", default="allnli", show_default=True,
              help="allnli (SNLI+MultiNLI sentences of the data root, the paper's) or a one-sentence-per-line file.")
@click.option("--max-steps", type=click.IntRange(min=1), default=None, help="Cap the optimizer steps.")
@click.option("--set", "extra", multiple=True, metavar="KEY=VALUE", help="Further TSDAE config overrides.")
@click.option("--device", default=None, help="cpu | cuda (default: cuda when available).")
@click.option("--dry-run", is_flag=True, help="Print each step's settings and `bench run` command; train nothing.")
@DATA_ROOT
@RESULTS_DIR
def config_search(steps, choose, seeds, preset, model, corpus, max_steps, extra, device, dry_run, data_root,
                  results_dir) -> None:
    """Train TSDAE on NLI sentences for each setting of the App. A search and score it on STSb dev (best of the
    dev evaluations); `bench report --table tsdae-app-a` puts the means beside Tables 5-7."""
    from usebench.paths import default_data_root, default_results_dir
    from usebench.registry import METHODS
    from usebench.report import search_runs
    from usebench.reproduce import config_search as cs
    from usebench.plan.specs import RunOptions
    from usebench.run.grid import run_benchmark
    from usebench.store import claim_store

    from usebench import methods  # noqa: F401

    named = results_dir is not None
    data_root, results_dir = Path(data_root or default_data_root()), Path(results_dir or default_results_dir())
    corpus_arg = Path(corpus) if corpus == cs.CORPUS else Path(corpus).resolve()
    if corpus != cs.CORPUS and not corpus_arg.is_file():
        raise click.BadParameter(f"{corpus!r} is neither allnli nor a file", param_hint="--corpus")
    cfg = METHODS.get(search_runs.METHOD).config(preset, [*extra, *([f"model={model}"] if model else [])])
    if not cfg.dev_every or cfg.dev_task != search_runs.TASK:
        raise click.BadParameter(f"preset {preset!r} does not select on STSb dev (App. A's protocol); add "
                                 "--set dev_task=stsb --set dev_every=N", param_hint="--preset")
    label = cs.CORPUS if corpus == cs.CORPUS else f"file:{corpus_arg.name}"
    run = {"model": cfg.model, "max_steps": max_steps or cfg.max_steps, "corpus": label}

    def train_step(step, settings) -> None:
        click.echo(f"step {step.name} ({step.table}): {len(settings)} setting(s) x {seeds} seed(s)")
        for setting in settings:
            sets = (*extra, *cs.overrides(setting))
            cmd = (f"bench run --methods tsdae --tasks stsb --split dev --corpus {corpus} --preset {preset} "
                   f"--seeds {seeds}" + (f" --model {model}" if model else "")
                   + (f" --max-steps {max_steps}" if max_steps else "") + "".join(f" --set {s}" for s in sets))
            click.echo(f"  {setting}\n    {cmd}")
            if dry_run:
                continue
            claim_store(results_dir, named, "bench config-search")  # a committed store only when named
            opts = RunOptions(methods=(search_runs.METHOD,), tasks=search_runs.TASK, seeds=seeds, preset=preset,
                              model=model, corpus=(corpus_arg,), max_steps=max_steps, overrides=sets,
                              split=search_runs.SPLIT, device=device)
            run_benchmark(opts, data_root, results_dir)

    if dry_run and choose == "greedy":
        click.echo("greedy: later steps depend on the stored results of earlier ones; shown with the paper's winners")
        choose = "paper"
    fixed = cs.search([s.strip() for s in steps.split(",") if s.strip()], choose, train_step, results_dir, run)
    click.echo(f"fixed after the search: {fixed}; tables: bench report --table tsdae-app-a")
