"""Runs a recipe lists as distinct that the command line's options would merge into one unit.

A recipe's runs differ in what their rows stand for: the thesis' batch-size study is three SimCSE runs that differ
only in ``batch_size``. A global ``--set batch_size=8`` (or ``--preset``, ``--model``, ``--corpus-sizes``,
``--labeled-sizes``) overwrites that difference: the three runs become one run id, train once, and the table shows
one number in three rows while the dry run prints "1 unit(s)" per run. ``bench reproduce`` refuses such options
before anything is planned, naming the runs they merge, unless ``--allow-merged-runs`` says it is a smoke check.

The check needs no data: two runs' units can only share a run id when the runs share a chain, a seed and a target
task, and then their identity is what this module compares, each chain stage's config overrides read in the order
the planner applies them (``key=value`` to every method, ``method.key=value`` to one, the later item winning).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from usebench.plan.specs import RunOptions


@dataclass(frozen=True)
class RecipeRun:
    """One run of a recipe's table as planned: its options as the recipe gives them and with the command line's on
    top (``bare`` and ``given``: :func:`usebench.reproduce.build.run_options` of each)."""

    table: str
    index: int  # its place in the table's run list (1-based, as the dry run counts them)
    command: str
    bare: RunOptions
    given: RunOptions


def _stage_overrides(method: str, items: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The ``--set`` items that reach ``method``, as the last value of each key."""
    out: dict[str, str] = {}
    for item in items:
        key, _, value = item.partition("=")
        key = key.strip()
        target, dot, rest = key.partition(".")
        if dot and target != method:
            continue
        out[rest if dot else key] = value.strip()
    return tuple(sorted(out.items()))


def _identity(opts: RunOptions, chain: str) -> tuple[Any, ...]:
    """What decides the run ids of ``chain``'s units in a run with ``opts``, apart from seed and task."""
    stages = tuple((m, _stage_overrides(m.strip(), opts.overrides)) for m in chain.split(">"))
    return (chain, opts.setting, opts.preset, opts.model, tuple(map(str, opts.corpus)), opts.corpus_size,
            tuple(opts.labeled_sizes), opts.nli_sts_model, opts.eval_pooling, stages)


def _seeds(opts: RunOptions) -> set[int]:
    return set(opts.seed_list or range(opts.seeds))


def _tasks(opts: RunOptions) -> set[str]:
    return {t.strip() for t in opts.tasks.split(",") if t.strip()}


def _parts(command: str) -> list[str]:
    """``bench run --methods a --set k=v`` -> ``["--methods a", "--set k=v"]``."""
    parts: list[str] = []
    for token in command.split()[2:]:
        if token.startswith("--") or not parts:
            parts.append(token)
        else:
            parts[-1] += f" {token}"
    return parts


def _where(group: list[RecipeRun]) -> str:
    """``tables5.11-5.13 runs 1-3`` / ``table2 run 4, table10 run 2``."""
    tables = list(dict.fromkeys(r.table for r in group))
    out = []
    for table in tables:
        idx = [r.index for r in group if r.table == table]
        span = f"{idx[0]}-{idx[-1]}" if len(idx) > 2 and idx == list(range(idx[0], idx[-1] + 1)) \
            else ", ".join(map(str, idx))
        out.append(f"{table} run{'s' if len(idx) > 1 else ''} {span}")
    return ", ".join(out)


def _group_line(group: list[RecipeRun], chains: list[str]) -> str:
    """``tables5.11-5.13 runs 1-3 become one simcse unit; the recipe tells them apart by --set batch_size=32 | ...``."""
    parts = [_parts(r.command) for r in group]
    common = set.intersection(*(set(p) for p in parts))
    differ = [" ".join(x for x in p if x not in common) or "(as the recipe gives it)" for p in parts]
    what = f"one {chains[0]} unit" if len(chains) == 1 else f"one unit each of {', '.join(chains)}"
    return f"{_where(group)} become {what}; the recipe tells them apart by {' | '.join(differ)}"


def merged_runs(runs: list[RecipeRun], trained: set[str]) -> list[str]:
    """One line per group of runs whose units the options merge: distinct as the recipe gives them, one run id
    with the options. ``trained``: the method names (a chain's parts); baseline rows (``base``) have no config
    and are never compared."""
    groups: dict[tuple[Any, ...], list[RecipeRun]] = {}
    for run in runs:
        for chain in run.given.methods:
            if all(part.strip() in trained for part in chain.split(">")):
                groups.setdefault(_identity(run.given, chain), []).append(run)
    merged: dict[tuple[int, ...], tuple[list[RecipeRun], list[str]]] = {}
    for key, group in groups.items():
        chain = key[0]
        distinct = list({_identity(r.bare, chain): r for r in group}.values())
        # only runs that could share a unit (a seed and a target task in common) yet differ as the recipe gives them
        if len(distinct) < 2 or not any(_seeds(a.given) & _seeds(b.given) and _tasks(a.given) & _tasks(b.given)
                                         for i, a in enumerate(distinct) for b in distinct[i + 1:]):
            continue
        members, chains = merged.setdefault(tuple(id(r) for r in distinct), (distinct, []))
        chains.append(chain)
    return [_group_line(members, chains) for members, chains in merged.values()]


def merge_refusal(lines: list[str], option_text: str) -> str:
    """The error text: the options, the runs they merge (the first few), and the way out."""
    shown = lines[:3] + ([f"... and {len(lines) - 3} more"] if len(lines) > 3 else [])
    return (f"{option_text} would merge runs the recipe lists as distinct (their rows would show one number): "
            + "; ".join(shown) + ". Leave the option out, choose tables with --tables, or pass --allow-merged-runs "
            "for a smoke check (the plan then names the merged runs)")
