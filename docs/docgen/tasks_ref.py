"""The task reference, from ``usebench.registry.TASKS``, ``tasks.GROUPS`` and ``usebench/data/sources.json``:
every registered task with its group, family, protocol, metrics, splits, files, the counts its release publishes
and where its data comes from."""
from __future__ import annotations

from typing import Any

from docgen.common import Generated, cell, docstring_of, module_path, note, prose, slug, table, text_cell

PAGE = "reference/tasks.md"


class SizeProbe:
    """Stands in for a loaded split when only the *published* numbers of ``Task.release_counts`` are wanted.

    ``release_counts(split, data)`` pairs each number the release publishes with the size of ``data``; the
    docs need the first half only, without the data. Every size asked of a probe is 0 and every part of it is
    another probe, so the adapter's own code says which files it checks and against which published numbers.
    """

    def __len__(self) -> int:
        return 0

    def __getitem__(self, key: Any) -> SizeProbe:
        return SizeProbe()

    def __getattr__(self, name: str) -> SizeProbe:
        if name.startswith("__"):
            raise AttributeError(name)
        return SizeProbe()

    def __iter__(self):
        return iter(())

    def __add__(self, other: Any) -> int:
        return 0

    __radd__ = __add__


def adapter_module(task: Any) -> str:
    """The ``tasks.*`` module that defines the task's protocol (STS tasks are classes built at import time)."""
    for cls in type(task).__mro__:
        if cls.__module__.startswith("tasks."):
            return cls.__module__
    return type(task).__module__


def published_counts(task: Any, split: str) -> list[Any]:
    """The release counts the adapter checks for ``split`` (``usebench.tasks.release.Count``; ``found`` is meaningless)."""
    counts = task.release_counts(split, SizeProbe())
    # A probe is never the same object twice, so a wrapper that adds its dev split's counts unless dev is the
    # evaluated split (bm25+<task>) lists them twice for dev: keep each file's count once.
    return list({(c.file, c.what, c.expected): c for c in counts}.values())


def data_sources(dataset: str) -> list[str]:
    """Lines describing where ``bench data download <dataset>`` fetches from (``usebench/data/sources.json``)."""
    from usebench.data.sources import load_manifest

    manifest = load_manifest()
    lines = [f"`bench data download {dataset}`: {prose(manifest.descriptions.get(dataset, ''))}"]
    for comp in manifest.datasets.get(dataset, ()):
        origin = f"<{comp.url}>" if comp.url else f"derived from `{comp.derive['from']}`" if comp.derive else "—"
        pin = "checksum pinned" if comp.has_pins else "checksum recorded on first download"
        lines.append(f"`{comp.id}` → `{comp.dest}/`: {prose(comp.description)} ({origin}; {pin})")
    return lines


def summary_table(names: list[str], tasks: Any) -> str:
    rows = []
    for name in names:
        t = tasks.get(name)
        rows.append([f"[`{name}`](#task-{slug(name)})", cell(t.group), cell(t.family), cell(",".join(t.splits)),
                     cell(t.main_metric), cell(t.dataset)])
    return table(["task", "group", "family", "splits", "main metric", "`bench data download`"], rows)


def counts_table(task: Any) -> str:
    rows = []
    for split in task.splits:
        for c in published_counts(task, split):
            rows.append([cell(split), cell(c.file), text_cell(f"{c.expected:,} {c.what}"), text_cell(c.source)])
    if not rows:
        return "No published counts are checked for this task (its files are still hashed into every result).\n"
    return table(["split", "file (under the data root)", "published", "source"], rows)


def task_section(name: str, task: Any) -> str:
    module = adapter_module(task)
    files = [f"- `{split}`: " + ", ".join(f"`{f}`" for f in task.files(split)) for split in task.splits]
    train = ", ".join(f"`{f}`" for f in task.train_files()) or "none (train with `--corpus FILE`)"
    parts = [
        f"## `{name}` {{#task-{slug(name)}}}\n",
        f"{prose(task.description)}\n" if task.description else "",
        table(["group", "family", "version", "splits", "main metric", "metrics"],
              [[cell(task.group), cell(task.family), cell(task.version), cell(", ".join(task.splits)),
                cell(task.main_metric), text_cell(", ".join(f"`{m}`" for m in task.metric_names))]]),
        f"\nProtocol: [{module_path(module)}](#protocol-{slug(module)}).\n",
        "\n**Files read**, under the data root:\n\n" + "\n".join(files) + "\n",
        f"\n**Unlabeled training corpus** (`bench run --tasks {name}`): {train}\n",
        "\n**Counts the release publishes**, checked before anything is encoded:\n\n" + counts_table(task),
        "\n**Data**: " + "\n\n".join(data_sources(task.dataset)) + "\n",
    ]
    return "\n".join(p for p in parts if p)


def protocol_sections(modules: list[str]) -> str:
    import importlib

    out = ["## Protocols, from the adapters' module docstrings\n"]
    for module in modules:
        text = docstring_of(importlib.import_module(module))
        out.append(f"### `{module_path(module)}` {{#protocol-{slug(module)}}}\n\n{text}\n")
    return "\n".join(out)


def groups_section() -> str:
    from usebench.tasks import GROUPS

    rows = [[cell(g), text_cell(", ".join(f"`{m}`" for m in members))] for g, members in GROUPS.items()]
    return ("## Groups\n\n`--tasks` expands these names.\n\n" + table(["group", "tasks"], rows)
            + "\n`mteb:<TaskName>` names any MTEB re-ranking, retrieval, pair-classification, classification or "
              "STS task (the `mteb` extra); those are resolved at lookup and not listed here.\n")


def generate() -> Generated:
    """The task reference page and its entry count (one per registered task)."""
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.registry import TASKS

    names = TASKS.names()
    modules = sorted({adapter_module(TASKS.get(n)) for n in names})
    text = "\n".join([
        "# Task reference\n",
        note("Every task in `usebench.registry.TASKS`, as `bench tasks` lists them, with the details the "
             "adapters hold.", "tasks_ref.py"),
        summary_table(names, TASKS),
        groups_section(),
        *(task_section(n, TASKS.get(n)) for n in names),
        protocol_sections(modules),
    ])
    n_counts = sum(len(published_counts(TASKS.get(n), s)) for n in names for s in TASKS.get(n).splits)
    return Generated({PAGE: text}, {"tasks": len(names), "task release counts": n_counts,
                                    "task protocol modules": len(modules)})
