"""`bench tasks` and `bench methods`: what is registered, with groups, metrics, presets and defaults."""
from __future__ import annotations

import click


@click.command("tasks")
def tasks_cmd() -> None:
    """List registered tasks, their groups, splits and main metrics."""
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from rich.table import Table

    from usebench.cli.options import print_wide

    from usebench.registry import TASKS
    from usebench.tasks import GROUPS

    table = Table(title="tasks")
    for col in ("task", "group", "family", "splits", "main metric", "metrics", "data"):
        table.add_column(col)
    for name in TASKS.names():
        t = TASKS.get(name)
        table.add_row(name, t.group, t.family, ",".join(t.splits), t.main_metric, ", ".join(t.metric_names),
                      f"bench data download {t.dataset}")
    print_wide(table)
    for group, members in GROUPS.items():
        click.echo(f"group {group}: {', '.join(members)}")
    click.echo("and mteb:<TaskName> for any MTEB re-ranking, retrieval, pair-classification, classification or "
               "STS task (the `mteb` extra: pip install -e '.[mteb]')")


@click.command("methods")
@click.option("--all", "all_fields", is_flag=True, help="Show every config field's default, not just the key ones.")
@click.option("--preset", default=None, help="Show this preset's resolved values (e.g. paper) instead of the defaults.")
def methods_cmd(all_fields: bool, preset: str | None) -> None:
    """List registered training methods with their presets and defaults (change them with --set key=value)."""
    from usebench import methods  # noqa: F401
    from usebench.train.plugin import describe_method
    from usebench.registry import METHODS

    if not len(METHODS):
        click.echo("no methods registered yet")
    for name in METHODS.names():
        click.echo("\n".join(describe_method(METHODS.get(name), all_fields, preset)))
