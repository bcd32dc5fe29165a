"""`bench reproduce PAPER`: a paper's tables from one command. The paper's recipe
(``usebench/recipes/<paper>.toml``) lists each table's `bench run` runs and `bench eval` jobs; they are planned
as `bench run` plans them (a unit two tables need trains once), run on the chosen launcher, and the tables are
written by the report, with the rows made and not made said per table."""
from __future__ import annotations

from pathlib import Path

import click

from usebench.cli.dry_run import plan_out
from usebench.cli.launching import print_failures
from usebench.cli.help_sections import SectionedCommand
from usebench.cli.run import SEEDS_HELP, GridArgs, grid_options, grid_sections, launch_prelude

from usebench.reproduce.recipes import PAPERS  # the packaged recipes (a light module: no torch, no plan)


HELP = f"""Train, evaluate and write every table of PAPER's recipe ({", ".join(PAPERS)}), or of a recipe file of
    your own (RECIPE.toml, in the packaged recipes' format: docs/reports.md), loaded as strictly.

    Exit status: 0 when every table was written with every row the recipe can make here (rows that can never be
    made, e.g. USE-large, are named and do not count); 1 otherwise, with the list; 2 on a usage error."""


@click.command("reproduce", cls=SectionedCommand, help=HELP, sections=grid_sections(
    ("table_spec", "method_spec", "seeds", "preset", "labeled_sizes", "corpus_sizes", "glove", "inputs",
     "allow_merged_runs", "out", "formats"), plan=("verbose",)))
@click.argument("paper", metavar="PAPER|RECIPE.toml")
@click.option("--tables", "table_spec", default=None, metavar="T,...",
              help="Only these tables of the recipe (ids as `--dry-run` lists them: table2, table10, ...).")
@click.option("--methods", "method_spec", default=None, metavar="M,...",
              help="Only the runs and rows of these methods (base, bm25, wordvec for the untrained rows): a smoke "
                   "check. Rows of other methods are listed as not selected.")
@click.option("--seeds", default=None, metavar="N|S,S,...",
              help=f"Seeds of every run (default: the recipe's): {SEEDS_HELP}.")
@click.option("--preset", default=None, help="Preset of every run (default: each run's, as the paper trained).")
@click.option("--labeled-sizes", default=None, metavar="N,N,...",
              help="Replace the recipe's labeled-set sizes (Table 10, Fig. 2), e.g. for a check on small data.")
@click.option("--corpus-sizes", default=None, metavar="N,N,...",
              help="Replace the recipe's corpus sizes (Fig. 3, the thesis' 100k), e.g. for a check on small data.")
@click.option("--glove", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="GloVe vectors for the Avg. GloVe row (glove.6B.300d.txt).")
@click.option("--input", "inputs", multiple=True, metavar="NAME=PATH",
              help="Any other input of the recipe (a corpus file `bench data` does not fetch), by its name.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("reports"), show_default=True,
              help="Folder the tables are written to.")
@click.option("--format", "formats", default="md,tex,csv,html", show_default=True,
              help="Comma-separated output formats: md, tex, csv, html.")
@click.option("--allow-merged-runs", is_flag=True,
              help="Let --set/--preset/--model/--corpus-sizes/--labeled-sizes merge runs the recipe lists as "
                   "distinct into one unit (a smoke check); without it such options are refused, naming the runs.")
@click.option("--dry-run", is_flag=True, help="Print the whole plan (a summary per table, chain and setting; units "
              "with --units; stages trained and reused, inputs present and missing, and one estimate of the work that "
              "remains on the device it will run on); train nothing.")
@click.option("-v", "--verbose", is_flag=True, help="With --dry-run: also the whole plan's cost under every cost "
              "model (this device's matmul rate, GPU-hours on an H200 and at the docs' A100 floor, the recipe's "
              "measured units on all cores).")
@grid_options
def reproduce(paper, table_spec, method_spec, seeds, preset, labeled_sizes, corpus_sizes, glove, inputs, out,
              formats, allow_merged_runs, dry_run, verbose, grid: GridArgs) -> None:
    """`bench reproduce` (its help, :data:`HELP`, lists the packaged recipes)."""
    from usebench.cli.run import parse_seeds
    from usebench.reproduce.status import load_checked_recipe
    from usebench.reproduce.build import Given, build_plan

    launch = launch_prelude(grid, here=not dry_run)  # a dry run may plan for a cluster's GPUs on a login node
    recipe = load_checked_recipe(_recipe_argument(paper))
    given = Given(preset=preset, model=launch.model, seeds=parse_seeds(seeds) if seeds else None,
                  max_steps=grid.max_steps, overrides=launch.overrides, device=grid.device,
                  batch_size=grid.batch_size, nli_sts_model=grid.nli_sts_model,
                  methods=frozenset(_csv(method_spec)) if method_spec else None,
                  inputs=_inputs(inputs, glove), force=grid.force, strict=grid.strict,
                  allow_merged_runs=allow_merged_runs, labeled_sizes=_sizes(labeled_sizes, "--labeled-sizes"),
                  corpus_sizes=_sizes(corpus_sizes, "--corpus-sizes"), results_dir=launch.results_dir)
    rp = build_plan(recipe, _csv(table_spec) if table_spec else None, given, launch.data_root)
    for line in rp.merged:  # --allow-merged-runs: said before anything trains, and in the dry run
        click.secho(f"merged by the options (one unit, one number in their rows): {line}", fg="yellow", err=True)
    if dry_run:
        rows = print_reproduce_plan(rp, launch.results_dir, grid.device, measure=launch.options.launcher == "local",
                                    step_times=grid.step_times, list_units=grid.list_units,
                                    data_root=launch.data_root, launcher=launch.options.launcher, verbose=verbose)
        plan_out(grid.plan_out_path, rows)
        refused = [r for r in rp.runs if r.error]
        if refused:  # a plan that passes --dry-run must not fail on configuration later
            click.secho(f"{len(refused)} run(s) cannot be planned here (see CANNOT PLAN above)", fg="red", err=True)
            raise SystemExit(1)
        return
    launch.claim_store(f"bench reproduce {rp.recipe.paper}")  # a committed store only when named (--results-dir)
    _run_all(rp, given, launch.data_root, launch.results_dir, launch.execute, launch.options.launcher)
    _report(rp, given, launch.results_dir, out, tuple(_csv(formats)))


def _recipe_argument(value: str) -> str | Path:
    """A packaged paper's name, or the path of a recipe file (a name that is neither is a usage error, with the
    papers listed)."""
    if value in PAPERS:
        return value
    path = Path(value)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise click.BadParameter(f"{value}: no such recipe file", param_hint="PAPER|RECIPE.toml")
        if path.suffix != ".toml":
            raise click.BadParameter(f"{value}: a recipe file is TOML (RECIPE.toml)", param_hint="PAPER|RECIPE.toml")
        return path.resolve()
    import difflib

    close = difflib.get_close_matches(value, PAPERS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise click.BadParameter(f"{value!r} is not a paper ({', '.join(PAPERS)}) nor a recipe file (RECIPE.toml){hint}",
                             param_hint="PAPER|RECIPE.toml")


def _csv(spec: str) -> list[str]:
    return [p.strip() for p in spec.split(",") if p.strip()]


def _sizes(spec: str | None, flag: str) -> tuple[int, ...] | None:
    from usebench.errors import ConfigError

    if not spec:
        return None
    try:
        sizes = tuple(int(p) for p in _csv(spec))
    except ValueError:
        raise ConfigError(f"{flag} {spec!r}: expected comma-separated positive integers") from None
    if not sizes or min(sizes) < 1:
        raise ConfigError(f"{flag} {spec!r}: expected comma-separated positive integers")
    return sizes


def _inputs(items: tuple[str, ...], glove: Path | None) -> dict[str, str]:
    from usebench.errors import ConfigError

    out = {"glove": str(glove)} if glove else {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ConfigError(f"--input {item!r}: expected NAME=PATH")
        out[name.strip()] = value.strip()
    return out


def print_reproduce_plan(rp, results_dir: Path, device: str | None, measure: bool = True,
                         step_times: Path | None = None, list_units: bool = False,
                         data_root: Path | None = None, launcher: str = "local", verbose: bool = False) -> list:
    """`--dry-run`: each table's runs (planned, blocked with what provides the input, or left out), each split's
    merged plan as `bench run --dry-run` prints it (its summary per table, chain and setting), the inputs present and
    missing, and the cost (at the measured steps of ``step_times``, a doctor report, when given). Returns every
    split's rows (``--plan-out``)."""
    from usebench.cli.dry_run import print_plan
    from usebench.reproduce.dry_run_view import reproduce_view

    view = reproduce_view(rp, results_dir, device, measure, step_times, data_root, launcher, verbose)
    echo = click.echo
    echo(f"bench reproduce {rp.recipe.paper}: {len(rp.tables)} table(s) from {rp.recipe.path}")
    for t in view.tables:
        c, table = t.cost, t.table
        measured = f"; {c.measured_hours:,.1f} at the measured steps" if c.measured is not None else ""
        echo(f"\n{table.id}: {table.title}\n  writes: {', '.join(table.writes)}"
             + (f" (beside {table.reference})" if table.reference else "")
             + f"\n  {len(t.unit_ids)} unit(s) from {sum(bool(r.opts) for r in t.runs)} run(s): {c.stages:,} distinct "
             f"stage(s), {c.steps:,} optimizer steps in all"
             + (f" (about {c.gpu_floor_hours:,.1f} GPU-hours at the floor below{measured})" if verbose else ""))
        for r in t.runs:
            state = (f"left out: {r.excluded}" if r.excluded else f"BLOCKED: {r.blocked}" if r.blocked
                     else f"CANNOT PLAN: {r.error}" if r.error
                     else f"{len(r.run_ids)} unit(s)" if r.baseline is None else "eval")
            echo(f"  - {r.command}\n      {state}")
        for n in table.never:
            echo(f"  never here: {n.label}: {n.reason}")
    rows = []
    for split, split_view in view.splits.items():
        echo(f"\nsplit {split}:")
        print_plan(split_view, list_units, grouped_by="table")
        rows += split_view.rows
    echo(f"\nall tables: {view.units} distinct unit(s); stages: {view.usage}")
    if view.shared:
        echo(f"shared by several tables (planned and trained once): {view.shared} unit(s)")
    echo(view.cost_line())  # what remains, on the device it will run on: one estimate with its basis and range
    if verbose:  # the whole plan (done or not) under every cost model
        echo("whole plan, every cost model (-v): " + view.cost.text())
        if view.cpu_cost is not None:
            echo("whole plan on this CPU, the recipe's measured units (-v): " + view.cpu_cost)
    for line in view.inputs:
        echo(line)
    for what, why in rp.recipe.elsewhere:
        echo(f"not by bench reproduce: {what}: {why}")
    return rows


def _run_all(rp, given, data_root: Path, results_dir: Path, execute, launcher: str) -> None:
    """Every split's merged plan through `bench run`'s engine; a failed unit is listed and the tables are still
    written from what finished."""
    from usebench.reproduce.run_plans import run_plans
    from usebench.run.grid import Execution

    execution = Execution(device=given.device, batch_size=given.batch_size, strict=given.strict, force=given.force)
    failed = run_plans(rp, execution, data_root, results_dir, execute, launcher)
    if failed:
        print_failures(failed, results_dir)


def _report(rp, given, results_dir: Path, out: Path, formats: tuple[str, ...]) -> None:
    """Write the tables, print each table's rows made and not made, exit 1 unless every table is complete."""
    from usebench.reproduce.status import table_outcomes, write_tables

    failed = write_tables(rp.tables, results_dir, out, formats)
    outcomes = table_outcomes(rp.tables, rp.recipe.paper, results_dir, out, given.methods, failed)
    blocked = [r for r in rp.runs if r.blocked or r.error]
    for oc in outcomes:
        _print_outcome(oc)
    incomplete = [oc.entry.id for oc in outcomes if not oc.complete]
    for r in blocked:
        click.echo(f"not run ({r.table}): {r.command}: {r.blocked or r.error}", err=True)
    if incomplete or blocked:
        tables = sorted(set(incomplete) | {r.table for r in blocked})
        click.secho(f"incomplete: {', '.join(tables)}", fg="red", err=True)
        raise SystemExit(1)
    click.echo(f"every table written with every row the recipe can make here ({out})")


def _print_outcome(oc) -> None:
    made = [r for r in oc.rows if r.state == "made"]
    counted = [r for r in oc.rows if r.state != "never"]  # rows that can never be made here do not count (--help)
    click.echo(f"\n{oc.entry.id}: {oc.entry.title}\n  written: {', '.join(oc.written) or 'none'}; rows made: "
               f"{len(made)} of {len(counted)}" + (f" (and {len(oc.rows) - len(counted)} that can never be made "
                                                   "here)" if len(counted) < len(oc.rows) else ""))
    for name, why in oc.not_written:
        click.echo(f"  NOT WRITTEN {name}: {why}")
    for r in oc.rows:
        if r.state != "made":
            where = f"{r.block} · " if r.block else ""
            click.echo(f"  {r.state.upper() if r.state == 'not made' else r.state}: {r.report}: {where}{r.label}"
                       + (f": {r.reason}" if r.reason else ""))
