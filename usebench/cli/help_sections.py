"""``--help`` with the options in named sections (training, evaluation, launcher, SLURM, ...): click lists a command's
options in one block and has no groups of its own, and `bench run` has ~40 options. A command opts in with
``@click.command(cls=SectionedCommand, sections=...)``; an option no section names is listed under "Other options",
so a new option is never hidden from the help."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

Sections = Sequence[tuple[str, Sequence[str]]]  # (title, the options' parameter names in the order shown)


class SectionedCommand(click.Command):
    """A click command whose help lists its options section by section."""

    def __init__(self, *args: Any, sections: Sections = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sections = tuple((title, tuple(names)) for title, names in sections)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                records[param.name] = record
        shown: set[str] = set()
        for title, names in self.sections:
            rows = [records[n] for n in names if n in records and n not in shown]
            shown.update(names)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [record for name, record in records.items() if name not in shown]
        if rest:
            with formatter.section("Other options"):
                formatter.write_dl(rest)
