"""Find the `bench ...` commands a Markdown text shows, and check each against the current CLI without running it.

A command is *concrete* when it could be pasted into a shell (`bench eval --model minilm --tasks useb`): click
parses it exactly as `bench` would (types, choices, required options, unknown options), with file-existence
checks off, and the names it passes (tasks, methods, chains, tables, presets, settings, `--set` keys) must be
registered. A command is a *synopsis* when it shows a form (`[--split test|dev]`, `--model PATH`, `...`,
alternatives with ` | `): then every sub-command it names must exist and every `--option` it names must be an
option of that sub-command.
"""
from __future__ import annotations

import contextlib
import importlib
import pathlib
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

import click

FENCE = re.compile(r"^(`{3,}|~{3,})([\w+-]*)[^\n]*\n(.*?)^\1\s*$", re.S | re.M)
SHELL_LANGS = {"", "bash", "sh", "shell", "console", "text", "zsh"}
INLINE = re.compile(r"(?<!`)`(bench [^`\n]+)`(?!`)")
ENV = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)+")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(?:[:=][A-Z][A-Z0-9_]*)?$")  # PATH, N, DIR, METHOD.KEY=VALUE...


@dataclass(frozen=True)
class Shown:
    """One command as a page shows it."""

    where: str  # "README.md:123" or a docs page
    text: str
    inline: bool = False  # from a code span in prose: a mention (`bench run`), checked as a synopsis

    @property
    def tokens(self) -> list[str]:
        try:
            return shlex.split(self.text, comments=False)
        except ValueError:  # an unbalanced quote in a synopsis
            return self.text.split()

    @property
    def form(self) -> bool:
        """Shows a form rather than a command: placeholders, optional parts, alternatives, ``...``."""
        if any(m in self.text for m in ("...", "…")) or " | " in self.text:
            return True
        return any(t.startswith("[") or t.endswith("]") or "|" in t and not t.startswith("'")
                   or PLACEHOLDER.match(t) or re.search(r"<\w[\w-]*>", t) for t in self.tokens[1:])

    @property
    def synopsis(self) -> bool:
        """Checked for its sub-commands and option names only."""
        return self.inline or self.form

    @property
    def mention(self) -> bool:
        """A real but possibly partial command in prose (`bench run --tasks quora`): its names are checked too."""
        return self.inline and not self.form


def _strip_comment(line: str) -> str:
    """Drop a trailing `# comment` that is outside quotes."""
    quote = None
    for i, ch in enumerate(line):
        if ch in "'\"" and quote in (None, ch):
            quote = None if quote else ch
        elif ch == "#" and quote is None and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line


def _logical_lines(block: str) -> Iterator[tuple[int, str]]:
    """(offset of first line, line) with backslash continuations joined, heredoc bodies skipped."""
    lines, i, heredoc = block.splitlines(), 0, None
    while i < len(lines):
        start, line = i, _strip_comment(lines[i])
        if heredoc:
            heredoc = None if lines[i].strip() == heredoc else heredoc
            i += 1
            continue
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + _strip_comment(lines[i]).strip()
        if m := re.search(r"<<-?\s*'?\"?(\w+)", line):
            heredoc = m.group(1)
        yield start, line.strip()
        i += 1


def _commands_in_line(line: str) -> Iterator[str]:
    """`bench ...` commands of one shell line (after `&&`, `;`, `$ ` prompts and `VAR=value` prefixes)."""
    for part in re.split(r"&&|;|\|\|", line):
        part = ENV.sub("", part.strip().removeprefix("$ ").strip())
        if part.startswith("bench ") or part == "bench":
            yield " ".join(part.split())


def shown_commands(text: str, name: str) -> list[Shown]:
    """Every `bench` command in fenced shell blocks and inline code spans of a Markdown text."""
    out = []
    for m in FENCE.finditer(text):
        if m.group(2).lower() not in SHELL_LANGS:
            continue
        first = text[: m.start(3)].count("\n") + 1
        for offset, line in _logical_lines(m.group(3)):
            out += [Shown(f"{name}:{first + offset}", c) for c in _commands_in_line(line)]
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for m in INLINE.finditer(prose):
        out.append(Shown(f"{name}:{prose[: m.start()].count(chr(10)) + 1}", " ".join(m.group(1).split()), inline=True))
    return out


# --- the CLI side ------------------------------------------------------------------------------------------------

def resolve(tokens: list[str]) -> tuple[list[str], click.Command, list[str]]:
    """(command path, the command it names, the remaining tokens): sub-commands are taken while they exist."""
    from usebench.cli.main import main

    cmd, path, rest = main, ["bench"], tokens[1:]
    while isinstance(cmd, click.Group) and rest and rest[0] in cmd.commands:
        cmd, path, rest = cmd.commands[rest[0]], [*path, rest[0]], rest[1:]
    return path, cmd, rest


@contextlib.contextmanager
def no_existence_checks(cmd: click.Command) -> Iterator[None]:
    """A shown `--corpus wiki.txt` names a file of the reader's, not of this checkout: parse without checking.
    Both kinds of check are switched off: `click.Path(exists=True)` and a callback that asks `Path.is_file`
    (`bench run --corpus`, which also takes a named corpus such as `allnli`)."""
    saved = [(p.type, p.type.exists) for p in cmd.params if isinstance(p.type, click.Path) and p.type.exists]
    is_file = pathlib.Path.is_file
    try:
        for t, _ in saved:
            t.exists = False
        pathlib.Path.is_file = lambda self: True  # type: ignore[method-assign]
        yield
    finally:
        pathlib.Path.is_file = is_file  # type: ignore[method-assign]
        for t, exists in saved:
            t.exists = exists


def parse_concrete(shown: Shown) -> dict:
    """click's own parsing of a command; returns the parameters it would be called with. A mention in prose
    (``inline``) is parsed leniently (missing required options allowed; its option names are checked as a
    synopsis's are)."""
    path, cmd, rest = resolve(shown.tokens)
    if isinstance(cmd, click.Group):
        if shown.inline:
            return {}
        raise AssertionError(f"{shown.where}: `{shown.text}` names the group `{' '.join(path)}`, no command of it")
    with no_existence_checks(cmd):
        ctx = cmd.make_context(" ".join(path), rest, resilient_parsing=shown.inline)
    return dict(ctx.params)


def option_names(cmd: click.Command) -> set[str]:
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}


def check_synopsis(shown: Shown) -> list[str]:
    """Problems of a synopsis: unknown sub-commands (after ` | ` alternatives too) and unknown options."""
    problems, tokens = [], shown.tokens
    segments, current = [], []
    for t in tokens:
        if t == "|":
            segments.append(current)
            current = []
        else:
            current.append(t)
    segments.append(current)
    path, cmd, rest = resolve(segments[0])
    for seg in segments[1:]:  # `bench data download X | import PATH`: an alternative of the same group
        if seg and seg[0] == "bench":
            problems += check_synopsis(Shown(shown.where, " ".join(seg)))
            continue
        parent = resolve(path[:-1] + seg[:1])[1] if len(path) > 1 else cmd
        if seg and not (isinstance(parent, click.Command) and parent.name == seg[0]):
            problems.append(f"`{' '.join(path[:-1] + seg[:1])}` is not a command")
    for t in rest:
        for name in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", t.split("=", 1)[0]):
            if name not in option_names(cmd):
                problems.append(f"`{' '.join(path)}` has no option {name}")
    return problems


def importable(name: str) -> bool:
    """Whether a dotted name a page shows (``usebench.train.plugin.Method.pooling_writer``) exists: the longest
    importable module, then attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False
