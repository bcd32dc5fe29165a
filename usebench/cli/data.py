"""`bench data download | import | verify | status`: get the datasets into the data root, and check them."""
from __future__ import annotations

import os
from pathlib import Path

import click

from usebench.cli.options import DATA_ROOT
from usebench.errors import BenchError
from usebench.paths import default_data_root

_RETRUST = click.option("--retrust", is_flag=True,
                        help="Accept files that differ from the checksums recorded earlier, and record the new ones.")


def _manager(data_root: Path | None, mirror: str | None = None, progress: bool = True):
    from usebench.data.manager import DataManager

    return DataManager(data_root or default_data_root(), mirror=mirror, progress=progress)


def _report(outcomes) -> None:
    colours = {"failed": "red", "present": "white", "derived": "cyan"}
    for o in outcomes:
        detail = f"  {o.detail}" if o.detail else ""
        click.secho(f"{o.action:>10}  {o.component:<15}{detail}", fg=colours.get(o.action, "green"))
    failed = [o.component for o in outcomes if o.action == "failed"]
    if failed:
        raise BenchError(f"{len(failed)} component(s) failed: {', '.join(failed)} (nothing partial was left behind)")


@click.group("data")
def data() -> None:
    """Download, import and check the datasets in the data root."""


@data.command("download")
@click.argument("datasets", nargs=-1)
@DATA_ROOT
@click.option("--mirror", default=lambda: os.environ.get("BENCH_DATA_MIRROR"),
              help="Fetch the archives, under their own file names, from this URL or folder instead "
                   "(default: $BENCH_DATA_MIRROR).")
@click.option("--force", is_flag=True, help="Download again even what is present (replaced atomically).")
@_RETRUST
@click.option("--progress/--no-progress", default=True, show_default=True)
def download_cmd(datasets, data_root, mirror, force, retrust, progress) -> None:
    """Fetch DATASETS (useb, sts, quora, beir-cqadupstack, nli, twitter-url, pit2015, denosent, all, or a task name;
    default: all)
    from their canonical URLs.

    Each archive is checked (sha256/md5 where the manifest pins one, else against the checksums recorded on
    the first download), extracted in a temporary folder inside the data root and renamed into place.
    """
    manager = _manager(data_root, mirror, progress)
    click.echo(f"data root: {manager.root}")
    outcomes = manager.download(datasets, force=force, retrust=retrust)
    _record_identities(manager.root)
    _report(outcomes)


@data.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@DATA_ROOT
@click.option("--as", "as_id", default=None, metavar="COMPONENT",
              help="The component PATHS hold (see `bench data status`), when it cannot be told from the name.")
@click.option("--force", is_flag=True, help="Replace components that are already present.")
@_RETRUST
@click.option("--allow-incomplete", is_flag=True, help="Import a component that lacks some expected files.")
def import_cmd(paths, data_root, as_id, force, retrust, allow_incomplete) -> None:
    """Place local archives (as downloaded) or folders (a component's folder, or a whole data root)."""
    manager = _manager(data_root)
    click.echo(f"data root: {manager.root}")
    outcomes = manager.import_paths(paths, as_id=as_id, force=force, retrust=retrust, allow_incomplete=allow_incomplete)
    _record_identities(manager.root)
    _report(outcomes)


def _record_identities(root: Path) -> None:
    """The release identities the package does not pin, from components verified against pinned checksums
    (usebench/plan/release_ids.py): what lets a report pair a result with a published number."""
    from usebench.plan.release_ids import record_release_identities

    for line in record_release_identities(root):
        click.echo(f"  {line}")


@data.command("verify")
@click.argument("datasets", nargs=-1)
@DATA_ROOT
@click.option("--record", is_flag=True, help="Record the checksums of files that have none yet (trust on first use).")
@click.option("--verbose", "-v", is_flag=True, help="List every file, not only problems.")
def verify_cmd(datasets, data_root, record, verbose) -> None:
    """Check present components: expected files there, sha256 as pinned or as recorded (default: all)."""
    manager = _manager(data_root)
    findings = manager.verify(datasets, record=record)
    colours = {"ok": "green", "mismatch": "red", "missing": "red", "unverified": "yellow", "absent": "white"}
    for f in findings:
        if verbose or f.state in ("mismatch", "missing"):
            basis = f" ({f.basis})" if f.basis != "none" else ""
            click.secho(f"{f.state:>10}  {f.path}{basis}  {f.detail}".rstrip(), fg=colours[f.state])
    counts = {s: sum(f.state == s for f in findings) for s in colours}
    click.echo(f"{counts['ok']} ok, {counts['unverified']} without a checksum"
               f"{' (recorded now)' if record and counts['unverified'] else ''}, {counts['missing']} missing, "
               f"{counts['mismatch']} mismatched; {counts['absent']} component(s) not present")
    if counts["unverified"] and not record:
        click.echo("files without a pinned or recorded checksum: `bench data verify --record` records them")
    if counts["missing"] or counts["mismatch"]:
        raise BenchError(f"verification failed in {manager.root}")


@data.command("status")
@DATA_ROOT
def status_cmd(data_root) -> None:
    """What is present per dataset component and per task, and where each checksum comes from."""
    from rich.console import Console
    from rich.table import Table

    from usebench.data.manager import DataManager
    from usebench.tasks import task_files

    manager = DataManager(data_root or default_data_root(), tasks=task_files())
    comps, tasks, stale = manager.status()
    console = Console()
    console.print(f"data root: {manager.root}")
    table = Table(title="components (bench data download <dataset>)")
    for col in ("component", "path", "state", "checksums"):
        table.add_column(col)
    styles = {"present": "green", "incomplete": "yellow", "absent": "dim"}
    for i, s in enumerate(comps):
        if i == 0 or s.component.dataset != comps[i - 1].component.dataset:
            table.add_section() if i else None
            table.add_row(f"[bold]{s.component.dataset}", "", "", "")
        state = f"{s.state}: {len(s.missing)} missing" if s.missing else s.state
        table.add_row("  " + s.component.id, s.component.dest, f"[{styles[s.state]}]{state}",
                      s.checksums if s.state != "absent" else "")
    console.print(table)
    for s in comps:
        if s.missing:
            console.print(f"[yellow]{s.component.id}[/yellow] lacks {', '.join(s.missing[:3])}"
                          + (f" and {len(s.missing) - 3} more" if len(s.missing) > 3 else ""))
    if any(s.state != "absent" and s.checksums == "none" for s in comps):
        console.print("checksums 'none': neither pinned nor recorded yet; `bench data verify --record` records them")
    _print_tasks(console, tasks)
    if stale:
        console.print(f"[yellow]{len(stale)} temporary leftover(s) of an interrupted run (safe to delete): "
                      + ", ".join(p.name for p in stale))


def _print_tasks(console, tasks) -> None:
    from rich.table import Table

    table = Table(title="tasks")
    for col in ("task", "dataset", "splits", "training corpus", "first missing file"):
        table.add_column(col)
    for t in tasks:
        if t.error:
            table.add_row(t.task, t.dataset, "[red]error", "", t.error)
            continue
        splits = " ".join(f"[green]{s} ✓[/green]" if ok else f"[dim]{s} ✗[/dim]" for s, ok in t.splits.items())
        train = "-" if t.train is None else "[green]yes" if t.train else "[dim]no"
        fix = f"{t.first_missing}  (bench data download {t.dataset})" if t.first_missing else ""
        table.add_row(t.task, t.dataset, splits, train, fix)
    console.print(table)
