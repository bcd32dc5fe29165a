"""Reference pages for the command line (from the click commands themselves), for what `bench report` can
build (``usebench.report.catalog``, the table specs and the published tables in ``paper_reference.json``) and
for the data manifest (``usebench/data/sources.json``)."""
from __future__ import annotations

import inspect
import json
import click

from docgen.common import ROOT, Generated, cell, note, prose, slug, table, text_cell

CLI_PAGE, REPORTS_PAGE, DATA_PAGE = "reference/cli.md", "reference/reports.md", "reference/data.md"


def walk(group: click.Group, prefix: tuple[str, ...] = ("bench",)) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every leaf command under ``group`` with its full name, in the order the group lists them."""
    out = []
    for name in group.list_commands(click.Context(group)):
        cmd = group.get_command(click.Context(group), name)
        if cmd is None or cmd.hidden:
            continue
        if isinstance(cmd, click.Group):
            out += walk(cmd, (*prefix, name))
        else:
            out.append(((*prefix, name), cmd))
    return out


def default_of(param: click.Parameter, ctx: click.Context) -> str:
    """The default as `--help` would describe it; none for flags off and for unset values."""
    value = param.get_default(ctx, call=False)
    if callable(value):
        return "(computed at run time)"
    if value is None or value is False or value == () or type(value).__name__ == "Sentinel":
        return "—"
    return cell(value)


def param_row(param: click.Parameter, ctx: click.Context) -> list[str]:
    names = ", ".join(f"`{o}`" for o in (*param.opts, *param.secondary_opts))
    if isinstance(param, click.Argument):
        names = f"`{param.human_readable_name}` (argument{', repeatable' if param.nargs == -1 else ''})"
    kind = param.type.name if not isinstance(param.type, click.Choice) else " | ".join(map(str, param.type.choices))
    if getattr(param, "is_flag", False):
        kind = "flag"
    return [names, cell(kind), default_of(param, ctx), text_cell(getattr(param, "help", None) or "")]


def command_section(path: tuple[str, ...], cmd: click.Command) -> str:
    ctx = click.Context(cmd, info_name=" ".join(path))
    rows = [param_row(p, ctx) for p in cmd.get_params(ctx) if "--help" not in p.opts]
    return "\n".join([
        f"## `{' '.join(path)}` {{#{slug(' '.join(path[1:]))}}}\n",
        prose(inspect.cleandoc(cmd.help or "").replace("\b\n", "")) + "\n",
        f"```text\n{cmd.get_usage(ctx)}\n```\n",
        table(["option", "type", "default", "what"], rows) if rows else "",
    ])


def cli_page() -> tuple[str, int]:
    from usebench.cli.main import main

    commands = walk(main)
    text = "\n".join([
        "# Command-line reference\n",
        note("Every `bench` command and option, read from the click commands (what `--help` prints).",
             "catalog_ref.py"),
        *(command_section(p, c) for p, c in commands),
    ])
    return text, len(commands)


def reports_page() -> tuple[str, int, int]:
    from usebench.report.catalog import artifacts
    from usebench.stats.table_specs import COLUMNS, TABLES

    arts = artifacts()
    rows = [[cell(a.name), cell(a.kind), text_cell(a.what), text_cell(a.needs), cell(a.files)] for a in arts]
    specs = []
    for name in TABLES.names():
        spec = TABLES.get(name)
        cols = ", ".join(f"`{COLUMNS[c].task or 'mean'}:{COLUMNS[c].metric or '+'.join(COLUMNS[c].mean_of)}`"
                         if c in COLUMNS else f"`{c}`" for c in spec.columns)
        refs = ", ".join(f"[`{r}`](#{slug('published ' + r)})" for r in spec.references) or "none"
        specs.append(f"### `{name}` {{#{slug('table ' + name)}}}\n\n{prose(spec.title)}. Split `{spec.split}`. "
                     f"Compared with: {refs}.\n\nColumns (task:metric): {cols}\n")
    published = published_tables()
    return "\n".join([
        "# Report reference\n",
        note("What `bench report --list` prints, the table specs of `usebench/stats/table_specs.py`, and the "
             "published tables typed into `usebench/report/paper_reference.json`.", "catalog_ref.py"),
        "## Tables and figures (`bench report --list`)\n", table(["name", "kind", "what", "needs", "writes"], rows),
        "\n## Table specs\n", *specs,
        "\n## Published tables (`paper_reference.json`)\n", published[0],
    ]), len(arts), published[1]


def published_tables() -> tuple[str, int]:
    """A section per published table: its paper, table number, metric and how many rows were typed in."""
    raw = json.loads((ROOT / "usebench/report/paper_reference.json").read_text(encoding="utf-8"))
    sources, out = raw.get("sources", {}), []
    for name, entry in raw.get("tables", {}).items():
        paper = sources.get(entry.get("source"), {})
        out.append(f"### `{name}` {{#{slug('published ' + name)}}}\n\n{entry.get('table', '')} of "
                   f"{prose(paper.get('citation', entry.get('source', '')))}\n\n"
                   f"Metric: {prose(entry.get('metric', ''))}. {len(entry.get('rows', []))} published rows.\n")
    return "\n".join(out), len(out)


def data_page() -> tuple[str, int]:
    from usebench.data.sources import load_manifest

    manifest = load_manifest()
    out, n = [], 0
    for dataset, comps in manifest.datasets.items():
        tasks = sorted(t for t, d in manifest.tasks.items() if d == dataset)
        out.append(f"## `{dataset}` {{#data-{slug(dataset)}}}\n\n{prose(manifest.descriptions.get(dataset, ''))}\n\n"
                   f"`bench data download {dataset}`" + (f"; tasks: {', '.join(f'`{t}`' for t in tasks)}" if tasks else "")
                   + "\n")
        rows = []
        for c in comps:
            n += 1
            origin = c.url or (f"derived from `{c.derive['from']}`" if c.derive else "")
            pins = "pinned" if c.has_pins else "recorded on first download"
            rows.append([cell(c.id), text_cell(c.description), cell(origin) if c.url else text_cell(origin),
                         cell(c.dest), str(len(c.paths())), pins])
        out.append(table(["component", "what", "from", "placed in", "files", "checksum"], rows))
    return "\n".join(["# Data reference\n",
                      note("Every dataset and component of `usebench/data/sources.json`, what `bench data "
                           "download`, `import` and `verify` work from.", "catalog_ref.py"), *out]), n


def generate() -> Generated:
    cli, n_cmds = cli_page()
    reports, n_arts, n_pub = reports_page()
    data, n_comps = data_page()
    return Generated({CLI_PAGE: cli, REPORTS_PAGE: reports, DATA_PAGE: data},
                     {"commands": n_cmds, "report artifacts": n_arts, "published tables": n_pub,
                      "data components": n_comps})
