"""What each release *is*, by content: the identities ``usebench/data/releases.json`` pins, and those that ``bench
data download/import`` records when it verifies a release against a checksum the package pins.

A published number was computed on a release. Whether a result of ours was too is decided by comparing what the
result read (``task.data_sha256``, the training corpus' text sha256) with the release's identity as the *package*
knows it, never by hashing whatever a data root holds when a report is built: a CI subset, a user's trimmed copy, a
corrupted file or the test fixtures there would otherwise become "the release" (issue 38).

Two sources, in this order:

1. **Pinned** in ``releases.json``, computed from the real files (``scripts/pin_releases.py``).
2. **Recorded with a verification**: where the files were not at hand when the package was written, ``bench data
   download/import`` computes the identity right after checking the components' archives or files against
   checksums ``sources.json`` pins, and stores it in ``<data-root>/.usebench-checksums.json`` (``identities``). A
   record counts only if every component it was computed from was verified against such a pin ("pinned"); a
   component recorded on first use proves nothing about the release and is ignored, with the reason said.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from usebench.errors import ConfigError

RELEASES = Path(__file__).parent / "releases.json"
PINNED = "pinned"  # a component's verification against a checksum sources.json pins (ChecksumStore "verified")


@dataclass(frozen=True)
class Releases:
    """``releases.json``: ``evaluation[task][split]`` and ``training[name]`` entries (see its ``about``)."""

    evaluation: dict[str, dict[str, dict[str, Any]]]
    training: dict[str, dict[str, Any]]


@lru_cache(maxsize=1)
def load_releases(path: Path = RELEASES) -> Releases:
    """The pinned identities; a malformed file is an error naming it."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path}: cannot read the release identities ({e})") from None
    if not isinstance(raw.get("evaluation"), dict) or not isinstance(raw.get("training"), dict):
        raise ConfigError(f'{path}: expected {{"evaluation": {{task: {{split: entry}}}}, "training": {{name: entry}}}}')
    return Releases(raw["evaluation"], raw["training"])


@dataclass(frozen=True)
class Identity:
    """A release's identity: ``sha256`` (None: not known here, ``why`` says so), where it is known from, and other
    forms of the same release ``bench data`` produces (``also``: sha256 -> what differs), accepted with a note."""

    sha256: str | None
    how: str
    why: str = ""
    also: dict[str, str] = field(default_factory=dict)

    def accepts(self, sha: str | None) -> bool:
        return sha is not None and (sha == self.sha256 or sha in self.also)


def evaluation_identity(task: str, split: str, data_root: Path | None) -> Identity:
    """The identity of ``task``'s ``split`` in its release (pinned, else recorded by a verified ``bench data``)."""
    entry = load_releases().evaluation.get(task, {}).get(split)
    if entry is None:
        return Identity(None, "", f"usebench/data/releases.json has no release identity for {task} ({split})")
    if entry.get("sha256"):
        also = {a["sha256"]: a["what"] for a in entry.get("also", [])}
        return Identity(entry["sha256"], "pinned in usebench/data/releases.json", "", also)
    return _recorded("evaluation", f"{task}/{split}", entry.get("components", []), data_root)


def training_identity(name: str, data_root: Path | None) -> Identity:
    """The identity of a training corpus: ``name`` is a task (its own unlabeled sentences) or ``dataset/component``."""
    entry = load_releases().training.get(name)
    if entry is None:
        return Identity(None, "", f"usebench/data/releases.json has no release identity for the corpus {name}")
    if entry.get("sha256"):
        return Identity(entry["sha256"], "pinned in usebench/data/releases.json")
    return _recorded("training", name, entry.get("components", []), data_root)


def _recorded(kind: str, key: str, components: list[str], data_root: Path | None) -> Identity:
    """An identity ``bench data`` recorded in the data root when it verified ``components`` against pinned checksums."""
    from usebench.data.sources import ChecksumStore, load_manifest

    names = ", ".join(components) or "its components"
    unpinned = [c for c in components if not load_manifest().component(c).has_pins]
    if data_root is None:
        return Identity(None, "", f"not pinned in usebench/data/releases.json, and no data root was given to read a "
                                  f"verified download's record from ({names})")
    store = ChecksumStore(Path(data_root))
    rec = store.identities().get(kind, {}).get(key)
    where = f"{store.path}"
    if rec is None:
        why = (f"not pinned in usebench/data/releases.json, and {where} records none"
               + (f": sources.json pins no checksum of {', '.join(unpinned)}, so no download can verify it is the "
                  "release" if unpinned else f" (`bench data download` or `import` of {names} records it)"))
        return Identity(None, "", why)
    unverified = [c for c in rec.get("components", []) if (store.get(c) or {}).get("verified") != PINNED]
    if unverified:
        return Identity(None, "", f"{where} records one, but {', '.join(unverified)} was recorded on first use, not "
                                  "verified against a checksum sources.json pins")
    return Identity(str(rec["sha256"]), f"recorded in {where} by `bench data` ({rec.get('recorded_at', '?')}), "
                                        f"after verifying {names} against pinned checksums")
