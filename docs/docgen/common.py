"""Markdown helpers shared by the generators, and the record of what a generator produced."""
from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERATED_NOTE = ("!!! info \"Generated page\"\n    {what} This page is written by `docs/docgen/{module}` at every docs "
                  "build; do not edit it, change the code it reads.\n")


@dataclass
class Generated:
    """Pages (path under docs/ -> Markdown text or file bytes) and the number of reference entries in them."""

    files: dict[str, str | bytes] = field(default_factory=dict)
    entries: dict[str, int] = field(default_factory=dict)

    def merge(self, other: Generated) -> Generated:
        self.files.update(other.files)
        self.entries.update(other.entries)
        return self


def note(what: str, module: str) -> str:
    """The banner at the top of a generated page."""
    return GENERATED_NOTE.format(what=what, module=module)


def cell(value: object) -> str:
    """A value as a Markdown table cell: code-formatted, pipes escaped, never empty."""
    text = "" if value is None else str(value)
    text = text.replace("|", "\\|").replace("\n", " ")
    return f"`{text}`" if text else "—"


def text_cell(text: str) -> str:
    """Prose in a table cell (pipes escaped, one line)."""
    return prose(text or "—").replace("|", "\\|").replace("\n", " ")


_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|obj|exc):`~?([^`]+)`")
_CODE = re.compile(r"(``.+?``|`[^`\n]+`)", re.S)


def prose(text: str) -> str:
    """Docstring or comment text as Markdown: reST roles become code, and outside code spans the characters
    Markdown would read as markup (``<tag>``, ``*``, ``_``, ``[...]``) are escaped, so the text reads as written."""
    text = _ROLE.sub(lambda m: f"`{m.group(1)}`", text)
    parts = _CODE.split(text)
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        parts[i] = (parts[i].replace("\\", "\\\\").replace("<", "&lt;").replace(">", "&gt;")
                    .replace("*", "\\*").replace("_", "\\_").replace("[", "\\[").replace("]", "\\]"))
    return "".join(parts)


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table; cells are used as given (format them with :func:`cell` / :func:`text_cell`)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def docstring_of(obj: object) -> str:
    """``obj``'s docstring as Markdown prose (see :func:`prose`; reST double backticks read as code)."""
    return prose(inspect.cleandoc(inspect.getdoc(obj) or ""))


def source_link(path: str) -> str:
    """A repository path in code font (the docs do not assume where the repository is hosted)."""
    return f"`{path}`"


def module_path(module_name: str) -> str:
    """``usebench.tasks.sts`` -> ``usebench/tasks/sts.py`` (or the package's ``__init__.py``)."""
    base = ROOT / Path(*module_name.split("."))
    return str((base / "__init__.py" if base.is_dir() else base.with_suffix(".py")).relative_to(ROOT))


def slug(name: str) -> str:
    """A heading id for ``name`` (``bm25+askubuntu`` -> ``bm25-askubuntu``), set explicitly with ``{#id}`` so links
    never depend on how the toc extension would spell it."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
