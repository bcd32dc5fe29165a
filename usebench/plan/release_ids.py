"""Release identities recorded with a verification: after `bench data download/import`, the identity of every task
split and training corpus that ``usebench/data/releases.json`` does not pin, computed from components that were just
(or earlier) verified against checksums ``sources.json`` pins (:mod:`usebench.data.releases`).

Each file the identity reads must still have the sha256 its component's verification recorded: a file edited since
is no part of a verified release, and nothing is recorded from it.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from usebench.data.releases import PINNED, load_releases
from usebench.data.sources import ChecksumStore
from usebench.errors import BenchError


def record_release_identities(data_root: Path) -> list[str]:
    """Record what can be recorded; returns one line per identity recorded (or refused, with the reason)."""
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.data.download import file_digests
    from usebench.registry import TASKS

    store = ChecksumStore(Path(data_root))
    releases = load_releases()
    said: list[str] = []
    for task, splits in releases.evaluation.items():
        for split, entry in splits.items():
            files = TASKS.get(task).files(split) if task in TASKS.names() else []
            if entry.get("sha256") or not _verified(store, entry.get("components", []), data_root, files):
                continue
            sha, per_file = TASKS.get(task).data_digests(data_root, split)
            said += _record(store, "evaluation", f"{task}/{split}", sha, entry["components"], per_file)
    for name, entry in releases.training.items():
        files = _corpus_files(name, data_root)
        if entry.get("sha256") or not files or not _verified(store, entry.get("components", []), data_root, files):
            continue
        per_file = {f: file_digests(Path(data_root) / f).sha256 for f in files}
        said += _record(store, "training", name, _corpus_sha256(name, data_root), entry["components"], per_file)
    return said


def _verified(store: ChecksumStore, components: list[str], data_root: Path, files: Iterable[str]) -> bool:
    """Every component was verified against pinned checksums and every file the identity reads is present."""
    return bool(components) and all((store.get(c) or {}).get("verified") == PINNED for c in components) and all(
        (Path(data_root) / f).is_file() for f in files)


def _record(store: ChecksumStore, kind: str, key: str, sha: str, components: list[str],
            per_file: dict[str, str]) -> list[str]:
    """Store ``key``'s identity unless a file changed since its component's verification."""
    recorded = {f: h for c in components for f, h in ((store.get(c) or {}).get("files") or {}).items()}
    changed = [f for f, h in per_file.items() if f in recorded and recorded[f] != h]
    if changed:
        return [f"release identity of {key} not recorded: {changed[0]} changed since {', '.join(components)} was "
                "verified"]
    if (store.identities().get(kind, {}).get(key) or {}).get("sha256") == sha:
        return []
    store.record_identity(kind, key, sha, components)
    return [f"release identity of {key} recorded ({sha[:12]}…, from {', '.join(components)} verified against "
            "pinned checksums)"]


def _corpus_files(name: str, data_root: Path) -> list[str]:
    """The files a training corpus is read from: a task's unlabeled sentences, or a sources.json component's file."""
    from usebench.data.sources import load_manifest
    from usebench.registry import TASKS

    if name in TASKS.names():
        found = [f for f in TASKS.get(name).train_files() if (Path(data_root) / f).is_file()]
        return found[:1]  # the first present is the one read (Task.train_corpus)
    dataset, _, component = name.partition("/")
    try:
        return [load_manifest().component(component).dest]
    except BenchError:
        return []


def _corpus_sha256(name: str, data_root: Path) -> str:
    """The text sha256 `bench run` records for this corpus (usebench.plan.corpus.load_corpus)."""
    from usebench.registry import TASKS
    from usebench.plan.corpus import load_corpus

    if name in TASKS.names():
        return load_corpus(name, [], None, Path(data_root)).sha256
    return load_corpus(None, [str(Path(data_root) / _corpus_files(name, data_root)[0])], None, Path(data_root)).sha256
