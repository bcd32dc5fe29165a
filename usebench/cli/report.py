"""`bench report` (tables, plots and the published numbers from the results store) and `bench check`
(re-run the small CI subset and compare it with the committed reference results)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from usebench.paths import default_data_root, default_results_dir


def _csv_list(value: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in value.split(",") if p.strip())


@click.command("report")
@click.option("--results-dir", type=click.Path(path_type=Path), default=None,
              help="Results store to read (default: results/).")
@click.option("--table", "tables", default=None,
              help="Comma-separated tables (see --list), a group (thesis), or all (default: the tables this store "
                   "fills, fully or partly; one line names the others and why).")
@click.option("--format", "formats", default="md,tex,csv,html", show_default=True,
              help="Comma-separated output formats: md, tex, csv, html.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("reports"), show_default=True,
              help="Folder the report files are written to.")
@click.option("--split", default=None, help="Evaluation split (default: each table's own, test).")
@click.option("--reference-source", default=None,
              help="Compare with one published table only (e.g. denosent-table1; default: the table's list).")
@click.option("--split-configs", is_flag=True, help="One row per configuration instead of refusing to mix them.")
@click.option("--compare", "compare_", default=None, metavar="A,B",
              help="Paired comparison of method A vs method B per column: B - A with its interval and a paired "
                   "bootstrap test over items and seeds where both store per-item outcomes, else over seeds (wins, "
                   "paired t-test when n >= 3). `bench compare` compares any two rows or runs across tasks.")
@click.option("--spread", type=click.Choice(["ci", "std"]), default="ci", show_default=True,
              help="What a cell's ± shows: the half-width of its 95% bootstrap interval over items and seeds (where "
                   "the results store per-item outcomes; else the std) or the sample std over seeds.")
@click.option("--plots/--no-plots", default=True, show_default=True, help="Draw the plots (PNG + CSV).")
@click.option("--user-sample", "user_samples", multiple=True, metavar="NAME=SHA256|FILE",
              help="Your own sample of a corpus a published row names but that was never published (e.g. "
                   "thesis-openwebtext-1m, thesis-quora-titles-100k): runs whose corpus has this sha256 (or the text "
                   "sha256 of FILE) pair with the row, marked \"user's sample\". Repeatable.")
@click.option("--data-root", type=click.Path(path_type=Path), default=None,
              help="Data root whose `bench data` records hold the release identities a verified download recorded "
                   "(default: $BENCH_DATA, as bench run). Its files are never hashed to decide what a paper used: "
                   "the releases' identities are pinned in the package.")
@click.option("--list", "list_", is_flag=True, help="List the tables and figures, what each needs, and exit.")
def report(results_dir, tables, formats, out, split, reference_source, split_configs, compare_, spread, plots,
           user_samples, data_root, list_) -> None:
    """Regenerate the paper's tables from the results store only (nothing is re-run)."""
    if list_:
        from usebench.report.catalog import listing

        click.echo(listing())
        return
    from usebench.errors import BenchError
    from usebench.report.make import ReportOptions, make_report
    from usebench.report.render import grid_of, grid_of_comparison, to_markdown
    from usebench.report.selection import left_out_line, terminal_notes
    from usebench.stats.table_specs import TABLES
    from usebench.store import check_writable

    from usebench.report.catalog import TABLE_GROUPS

    names = tuple(TABLES.names()) if tables in (None, "all") else tuple(
        n for part in _csv_list(tables) for n in TABLE_GROUPS.get(part, (part,)))
    for name in names:
        TABLES.get(name)  # unknown names fail here with a did-you-mean hint
    pair = _csv_list(compare_) if compare_ else None
    if pair is not None and len(pair) != 2:
        raise BenchError(f"--compare takes two method names, A,B (got {compare_!r})")
    samples = tuple(user_sample(v) for v in user_samples)
    check_writable(out, "report folder", "--out")  # before reading the store, not after building every table
    order = [n for n in ("paper-table2", "sts-table", "specific-vs-sts") if n in names]
    opts = ReportOptions(results_dir=results_dir or default_results_dir(), out=out,
                         tables=tuple(order + [n for n in names if n not in order]), formats=_csv_list(formats),
                         split=split, reference_source=reference_source, split_configs=split_configs,
                         compare=pair, spread=spread, plots=plots, user_samples=samples,
                         data_root=data_root or default_data_root(), filled_only=tables is None)
    rep = make_report(opts)
    for s in rep.sections:
        click.echo(to_markdown(grid_of(terminal_notes(s.built) if opts.filled_only else s.built)))
        if s.comparison.rows:
            click.echo(to_markdown(grid_of_comparison(s.comparison)))
        for line in s.paired:
            click.echo(f"- {line}")
    for f in rep.files:
        if f.name == "pretraining-breakeven.md":
            click.echo(f.read_text(encoding="utf-8"))
    click.echo(f"wrote {len(rep.files)} files to {out} from {rep.n_results} result files")
    if rep.left_out:
        click.echo(left_out_line(rep.left_out))
    refused = dict.fromkeys(n for s in rep.sections for n in s.built.notes if n.startswith("Not averaged"))
    for note in refused:  # the cell is left empty in the table, whose notes say the same
        click.secho(f"warning: {note}", fg="yellow", err=True)
    if rep.partial:
        click.secho(f"warning: {len(rep.partial)} of them were evaluated with --allow-partial on data that is not the "
                    f"release (task.partial in the file): {', '.join(str(p) for p in rep.partial[:3])}"
                    + (" ..." if len(rep.partial) > 3 else ""), fg="yellow")


def user_sample(value: str) -> tuple[str, str]:
    """``NAME=SHA256`` or ``NAME=FILE`` (the text sha256 a run computes for that file) -> (NAME, sha256); NAME must
    be an unpublished corpus that a published row names."""
    import re

    from usebench.errors import BenchError
    from usebench.report.reference import load_reference

    name, _, what = value.partition("=")
    known = sorted({str(r["settings"][k]["unpublished"]) for t in load_reference()["tables"].values()
                    for r in t["rows"] for k in ("train_data", "dev_data")
                    if isinstance(r.get("settings", {}).get(k), dict) and "unpublished" in r["settings"][k]})
    if name not in known:
        raise BenchError(f"--user-sample {value!r}: expected NAME=SHA256 or NAME=FILE with NAME one of the unpublished "
                         f"corpora the published rows name: {', '.join(known)}")
    if re.fullmatch(r"[0-9a-f]{64}", what):
        return name, what
    if Path(what).is_file():
        from usebench.plan.corpus import load_corpus

        return name, load_corpus(None, [what], None, Path(".")).sha256
    raise BenchError(f"--user-sample {value!r}: {what!r} is neither a sha256 (64 hex digits) nor a file")


@click.command("check")
@click.option("--against", type=click.Path(path_type=Path), default=Path("results/reference"), show_default=True,
              help="The committed reference results.")
@click.option("--subset", default="ci", show_default=True, help="Which subset to re-run (see usebench/reproduce/check.py).")
@click.option("--tol", type=float, default=0.5, show_default=True,
              help="Absolute tolerance per metric, in points (x100).")
@click.option("--data-root", type=click.Path(path_type=Path), default=None,
              help="Data root (default: $BENCH_DATA or ~/.cache/usebench/data).")
@click.option("--work-dir", type=click.Path(path_type=Path), default=None,
              help="Keep the fresh run here (default: a temporary folder, removed afterwards).")
@click.option("--fresh", type=click.Path(path_type=Path, exists=True), default=None,
              help="Compare an existing results store instead of re-running the subset.")
@click.option("--update", is_flag=True, help="Re-run the subset and write its results as the new reference.")
def check(against, subset, tol, data_root, work_dir, fresh, update) -> None:
    """Re-run the small CI subset and compare every metric with the reference; exit 1 on drift or a missing result."""
    from usebench.reproduce.check import SUBSETS, print_diffs, run_check, update_reference

    spec = SUBSETS.get(subset)
    data_root = data_root or default_data_root()
    if update:
        t0 = time.perf_counter()
        written = update_reference(spec, data_root, against, work_dir)
        click.echo(f"wrote {len(written)} reference results to {against} in {time.perf_counter() - t0:.1f} s")
        return
    outcome = run_check(spec, data_root, against, tol, work_dir=work_dir, fresh=fresh)
    print_diffs(outcome, tol)
    sys.exit(0 if outcome.ok else 1)
