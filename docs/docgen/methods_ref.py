"""The method reference, from ``usebench.registry.METHODS``: every trainer a user can name, with its
description, citation, module docstring, and every preset resolved field by field (what ``bench methods
--preset P`` prints), beside the class default and the source comment written next to that default."""
from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import io
import re
import textwrap
import tokenize
from typing import Any

from docgen.common import Generated, cell, docstring_of, module_path, note, prose, slug, table, text_cell

INDEX = "reference/methods/index.md"


def method_names() -> list[str]:
    """Every registered method, in the order the reference lists them."""
    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench.registry import METHODS

    return METHODS.names()


def page_of(name: str) -> str:
    return f"reference/methods/{slug(name)}.md"


def _comments(src: str) -> dict[int, str]:
    """Line number -> the comment on that line."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string.lstrip("#").strip()
    return out


def _class_field_comments(klass: type) -> dict[str, str]:
    """Field -> the comment beside its default in ``klass``'s own source (same line, else the lines above)."""
    try:
        src = textwrap.dedent(inspect.getsource(klass))
    except (OSError, TypeError):
        return {}
    comments, lines = _comments(src), src.splitlines()
    out = {}
    for node in ast.parse(src).body[0].body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        same = [comments[i] for i in range(node.lineno, node.end_lineno + 1) if i in comments]
        above, i = [], node.lineno - 1
        while i >= 1 and lines[i - 1].strip().startswith("#"):
            above.insert(0, comments[i])
            i -= 1
        if same or above:
            out[node.target.id] = " ".join(above + same)
    return out


def field_sources(config_cls: type) -> dict[str, tuple[str, str]]:
    """Field -> (class that last set its default, the comment written there), walking the config's bases."""
    out: dict[str, tuple[str, str]] = {}
    for klass in reversed(config_cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        comments = _class_field_comments(klass)
        for name in klass.__dict__.get("__annotations__", {}):
            out[name] = (klass.__name__, comments.get(name, out.get(name, ("", ""))[1]))
    return out


def resolved(method: Any) -> dict[str, dict[str, Any]]:
    """``"default"`` and every preset -> field values of the config it builds (``eval_pooling`` first)."""
    out = {}
    for label, cfg in [("default", method.Config()), *((p, method.config(p)) for p in method.presets)]:
        out[label] = {"eval_pooling": method.eval_pooling(cfg), **dataclasses.asdict(cfg)}
    return out


def value_cell(value: Any) -> str:
    """A config value as Python writes it (``None`` shown, tuples as tuples)."""
    return cell(repr(value) if value is None or isinstance(value, str) and not value else value)


def preset_matrix(method: Any) -> str:
    """Fields that some preset (or the method itself) sets, then every other field in a collapsed block."""
    values = resolved(method)
    labels = list(values)
    sources = field_sources(method.Config)
    header = ["field", "class default", *(f"`{p}`" for p in labels[1:]), "source (comment beside the default)"]
    shown, rest = [], []
    for name in values["default"]:
        default = values["default"][name]
        cells = [value_cell(values[p][name]) if p == "default" or values[p][name] == default
                 else f"**{value_cell(values[p][name])}**" for p in labels]
        where, why = sources.get(name, ("", "the plugin's `eval_pooling` (what the export declares)"))
        row = [cell(name), *cells, text_cell(f"{why} ({where})" if where and why else why or where)]
        own = where not in ("", "TrainConfig") or name == "eval_pooling"
        (shown if own or any(values[p][name] != default for p in labels) else rest).append(row)
    block = table(header, rest).replace("\n", "\n    ")
    return (table(header, shown) + f'\n??? note "The other {len(rest)} fields (the shared defaults of '
            f'`TrainConfig`, which no preset of this method changes)"\n\n    {block}\n')


def citation_block(citation: str) -> str:
    """The citation in a code block; a one-line BibTeX entry gets one field per line."""
    if not citation:
        return "No citation declared.\n"
    if citation.lstrip().startswith("@"):
        entry = re.sub(r"^(@\w+\{[^,]+),\s*", r"\1,\n  ", citation.strip())  # the key on the first line
        entry = re.sub(r"\},\s*", "},\n  ", entry)  # one field per line
        entry = re.sub(r"\}\}$", "}\n}", entry)  # the closing brace on its own line
        return f"```bibtex\n{entry}\n```\n"
    return f"```text\n{citation}\n```\n"


def method_page(name: str, method: Any) -> str:
    module = type(method).__module__
    notes = [f"- `{p}`: {text_cell(n)}" for p, n in method.preset_notes.items()]
    parts = [
        "---\nhide:\n  - toc\n---\n",  # the preset table needs the width
        f"# `{name}`\n",
        note(f"From `{module_path(module)}` (`{type(method).__name__}` in `METHODS`).", "methods_ref.py"),
        f"{prose(method.description)}\n",
        table(["default preset", "trains on", "presets", "a later chain stage may start from it"],
              [[cell(method.default_preset), cell(method.data_kind), text_cell(", ".join(f"`{p}`" for p in method.presets)),
                "yes" if method.continuable else "no"]]),
        f"\nRun it: `bench run --methods {name} --tasks twitterpara --preset smoke`; show a preset resolved: "
        f"`bench methods --preset paper`; change a value: `--set {name}.<field>=<value>`.\n",
        "## Citation\n", citation_block(method.citation),
        "## Presets resolved\n",
        "Each column is the config the preset builds (`bench methods --preset P`); **bold** marks a value that "
        "differs from the class default. Listed: the fields this method declares or a preset sets.\n",
        preset_matrix(method),
        "\n## Preset notes\n",
        ("\n".join(notes) if notes else "No preset departs from its source.") + "\n",
        f"\n## How it works (`{module_path(module)}`)\n",
        docstring_of(importlib.import_module(module)) + "\n",
    ]
    return "\n".join(parts)


def index_page(names: list[str], methods: Any) -> str:
    rows = [[f"[`{n}`]({slug(n)}.md)", text_cell(methods.get(n).description), cell(methods.get(n).data_kind),
             text_cell(", ".join(f"`{p}`" for p in methods.get(n).presets))] for n in names]
    return "\n".join([
        "# Method reference\n",
        note("Every method in `usebench.registry.METHODS`, as `bench methods` lists them.", "methods_ref.py"),
        table(["method", "description", "trains on", "presets"], rows),
    ])


def generate() -> Generated:
    """The method index, one page per method, and the entry counts (methods, presets, preset values)."""
    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench.registry import METHODS

    names = METHODS.names()
    files: dict[str, str | bytes] = {INDEX: index_page(names, METHODS)}
    n_presets = n_values = 0
    for n in names:
        m = METHODS.get(n)
        files[page_of(n)] = method_page(n, m)
        n_presets += len(m.presets)
        n_values += sum(len(v) for p, v in resolved(m).items() if p != "default")
    return Generated(files, {"methods": len(names), "method presets": n_presets, "resolved preset values": n_values})
