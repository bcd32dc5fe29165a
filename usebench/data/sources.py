"""The data manifest (``usebench/data/sources.json``) and the store of recorded checksums.

A dataset (``useb``, ``sts``, ``quora``: the ``dataset`` attribute of tasks) is a list of components. A
component is one archive from a canonical URL of which one path (``member``) becomes ``dest`` in the data root,
or (``derive``) a folder or file computed from another component (SentEval's tokenised STS; DenoSent's paraphrase
pairs as ``sentence<TAB>paraphrase`` lines). ``dest`` appears in one
rename, so if it exists it is complete. Checksums are pinned in ``usebench/data/sources.json`` where the
authors publish one; otherwise they are recorded on first download or import in
``<data-root>/.usebench-checksums.json`` (trust on first use) and checked from then on.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from usebench.data.download import file_digests
from usebench.errors import BenchError, ConfigError
from usebench.store import mkstemp_shared

MANIFEST = Path(__file__).parent / "sources.json"
STORE_NAME = ".usebench-checksums.json"
ALL = "all"
_COMPONENT_KEYS = {"id", "description", "url", "member", "dest", "files", "archive_sha256", "archive_md5", "derive"}
_DERIVE_KINDS = {"senteval-sts": {"from", "kind", "subsets", "prefix"}, "senteval-stsb": {"from", "kind", "files"},
                 "paraphrase-tsv": {"from", "kind", "columns"}}


@dataclass(frozen=True)
class Component:
    """One placeable unit of a dataset (see the module docstring)."""

    id: str
    dataset: str
    dest: str
    description: str = ""
    url: str | None = None
    member: str | None = None
    files: Mapping[str, str | None] = field(default_factory=dict)  # path under dest -> pinned sha256 or None
    archive_sha256: str | None = None
    archive_md5: str | None = None
    derive: Mapping[str, Any] | None = None

    @property
    def archive_name(self) -> str:
        """The archive's file name (the last part of its URL)."""
        return PurePosixPath(self.url or "").name

    def paths(self) -> list[str]:
        """Expected files, relative to the data root (a single-file component: ``dest`` itself)."""
        return [f"{self.dest}/{f}" for f in self.files] if self.files else [self.dest]

    def pinned(self) -> dict[str, str]:
        """Pinned sha256 per file (relative to the data root)."""
        return {f"{self.dest}/{f}": h.lower() for f, h in self.files.items() if h}

    @property
    def plain(self) -> bool:
        """The URL is the file itself (no archive): it is placed as fetched, checked by ``archive_sha256``."""
        from usebench.data.download import archive_format

        try:
            archive_format(self.archive_name)
            return False
        except BenchError:
            return bool(self.url)

    @property
    def has_pins(self) -> bool:
        return bool(self.archive_sha256 or self.archive_md5 or self.pinned())


@dataclass(frozen=True)
class Manifest:
    """Datasets in order, each with its components in the order they are fetched."""

    datasets: Mapping[str, tuple[Component, ...]]
    descriptions: Mapping[str, str]
    tasks: Mapping[str, str] = field(default_factory=dict)  # task name -> the dataset holding its files

    def component(self, cid: str) -> Component:
        for comps in self.datasets.values():
            for c in comps:
                if c.id == cid:
                    return c
        raise BenchError(f"unknown data component {cid!r} (known: {', '.join(self.component_ids())})")

    def component_ids(self) -> list[str]:
        return [c.id for comps in self.datasets.values() for c in comps]

    def all_components(self) -> list[Component]:
        return [c for comps in self.datasets.values() for c in comps]


def _parse_component(raw: Mapping[str, Any], dataset: str, where: str) -> Component:
    unknown = set(raw) - _COMPONENT_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)} (known: {sorted(_COMPONENT_KEYS)})")
    for key in ("id", "dest"):
        if not isinstance(raw.get(key), str):
            raise ConfigError(f"{where}: expected a string {key!r}")
    derive = raw.get("derive")
    if derive is None and not (raw.get("url") and raw.get("member")):
        raise ConfigError(f"{where}: a component needs 'url' and 'member', or 'derive'")
    url_name = PurePosixPath(str(raw.get("url") or "")).name
    if raw.get("url") and not url_name.lower().endswith((".zip", ".tar.gz", ".tgz", ".gz")) \
            and raw.get("member") != url_name:
        raise ConfigError(f"{where}: a URL that is not an archive is the file itself; its 'member' must be "
                          f"its name, {url_name!r}")
    if derive is not None:
        keys = _DERIVE_KINDS.get(derive.get("kind"))
        if keys is None or set(derive) != keys:
            kinds = json.dumps({k: sorted(v) for k, v in _DERIVE_KINDS.items()})
            raise ConfigError(f"{where}: 'derive' must be one of {kinds}")
    return Component(id=raw["id"], dataset=dataset, dest=raw["dest"], description=raw.get("description", ""),
                     url=raw.get("url"), member=raw.get("member"), files=dict(raw.get("files") or {}),
                     archive_sha256=raw.get("archive_sha256"), archive_md5=raw.get("archive_md5"), derive=derive)


def load_manifest(path: Path = MANIFEST) -> Manifest:
    """Parse and check ``sources.json``: unknown keys and duplicate ids are errors naming the entry."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path}: cannot read the data manifest ({e})") from None
    datasets: dict[str, tuple[Component, ...]] = {}
    seen: set[str] = set()
    for name, ds in raw.get("datasets", {}).items():
        comps = []
        for i, c in enumerate(ds.get("components", [])):
            comp = _parse_component(c, name, f"{path}: datasets.{name}.components[{i}]")
            if comp.id in seen:
                raise ConfigError(f"{path}: component id {comp.id!r} appears twice")
            seen.add(comp.id)
            comps.append(comp)
        datasets[name] = tuple(comps)
    tasks = {t: name for name, d in raw.get("datasets", {}).items() for t in d.get("tasks", [])}
    manifest = Manifest(datasets, {n: d.get("description", "") for n, d in raw.get("datasets", {}).items()}, tasks)
    for c in manifest.all_components():
        if c.derive and c.derive["from"] not in seen:
            raise ConfigError(f"{path}: component {c.id!r} derives from unknown {c.derive['from']!r}")
    return manifest


def resolve_datasets(names: list[str] | tuple[str, ...], manifest: Manifest) -> list[str]:
    """Dataset names in manifest order: ``all``, dataset names, or task names (the dataset whose ``tasks``
    lists them; a wrapper task ``bm25+<task>`` needs the data of ``<task>``)."""
    wanted: set[str] = set()
    for name in names or (ALL,):
        if name == ALL:
            wanted.update(manifest.datasets)
        elif name in manifest.datasets:
            wanted.add(name)
        else:
            wanted.add(_dataset_of_task(name, manifest))
    return [d for d in manifest.datasets if d in wanted]


def _dataset_of_task(name: str, manifest: Manifest) -> str:
    import difflib

    choices = [ALL, *manifest.datasets]
    inner = name.rsplit("+", 1)[-1]
    if inner in manifest.tasks:
        return manifest.tasks[inner]
    close = difflib.get_close_matches(name, choices, n=2, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise BenchError(f"unknown dataset {name!r}{hint} (known: {', '.join(choices)}, or a task name)")


class ChecksumStore:
    """Checksums recorded on first download/import (trust on first use), one JSON file in the data root."""

    def __init__(self, root: Path):
        self.path = root / STORE_NAME
        self._data: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            if self.path.is_file():
                try:
                    self._data = json.loads(self.path.read_text(encoding="utf-8"))
                except json.JSONDecodeError as e:
                    raise BenchError(f"{self.path}: not valid JSON ({e}); delete it to record checksums anew") from None
            else:
                self._data = {"schema_version": 1, "components": {}}
        return self._data

    def components(self) -> dict[str, dict[str, Any]]:
        """Every component's record (see :meth:`get`), by component id."""
        return dict(self._load()["components"])

    def get(self, cid: str) -> dict[str, Any] | None:
        """The record of a component: how, source, recorded_at, archive digests (or None), files."""
        return self._load()["components"].get(cid)

    def record(self, cid: str, how: str, source: str, files: Mapping[str, str],
               archive: Mapping[str, str] | None = None, verified: str | None = None) -> None:
        """Store (replace) a component's checksums and write the file atomically. ``verified``: "pinned" when the
        component was checked against checksums sources.json pins (or derived from one that was), "first use"
        otherwise; only a pinned verification makes the release identities recorded from it count
        (:mod:`usebench.data.releases`)."""
        data = self._load()
        data["components"][cid] = {
            "how": how, "source": source, "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "archive": dict(archive) if archive else None, "files": dict(sorted(files.items())),
            "verified": verified or "first use",
        }
        self._write(data)

    def identities(self) -> dict[str, dict[str, Any]]:
        """Release identities recorded with a verification: ``{"evaluation": {"task/split": entry}, "training":
        {name: entry}}``, each entry ``{"sha256", "components", "recorded_at"}``."""
        return dict(self._load().get("identities") or {})

    def record_identity(self, kind: str, key: str, sha256: str, components: list[str]) -> None:
        """Store the identity of ``key`` (``task/split`` or a corpus name) computed from ``components``."""
        data = self._load()
        data.setdefault("identities", {}).setdefault(kind, {})[key] = {
            "sha256": sha256, "components": list(components),
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds")}
        self._write(data)

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = mkstemp_shared(self.path.parent, prefix=".usebench-tmp-checksums-", suffix="")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
            fh.write("\n")
        os.replace(tmp, self.path)


def tree_sha256(item: Path, rel_root: str) -> dict[str, str]:
    """sha256 of every file under ``item`` (or of ``item`` itself), keyed by ``rel_root``/relative path."""
    if item.is_file():
        return {rel_root: file_digests(item).sha256}
    return {f"{rel_root}/{p.relative_to(item).as_posix()}": file_digests(p).sha256
            for p in sorted(item.rglob("*")) if p.is_file()}
