"""Is the data on disk the release a task was published on? Counts and checksums, checked before scoring.

A truncated or edited evaluation file still parses (a file cut at a line boundary is a valid shorter file),
and gives a score over fewer pairs that looks like any other: the worst kind of wrong number. So every task
declares the counts its release publishes (STS-benchmark test: 1379 scored pairs; Twitter URL test: 10120
labelled pairs, ...; see each adapter's ``release_counts``), and the engine compares them with what was loaded.
Where ``bench data`` pinned or recorded a file's sha256 (``usebench/data/sources.json``,
``<data-root>/.usebench-checksums.json``), the file must still have it. A mismatch is an error naming the file,
what was expected and what was found; ``--allow-partial`` evaluates anyway and the result records it.

A data root that is deliberately not a release (the test fixtures in ``tests/assets``, a hand-made subset) may
say so in ``<data-root>/usebench-counts.json``: ``{"release": "<name>", "counts": {"<file>": <n>, ...}}``. Its
counts replace the published ones for the files it lists, and every result records which basis was used.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.errors import BenchError, ReleaseMismatchError

COUNTS_FILE = "usebench-counts.json"


@dataclass(frozen=True)
class Count:
    """One number the release publishes for one file (relative to the data root), and what was loaded."""

    file: str
    what: str  # "scored pairs", "lines", "forums", ...
    found: int
    expected: int
    source: str  # where the expected number comes from


@dataclass(frozen=True)
class DeclaredCounts:
    """The counts a data root declares for itself in ``usebench-counts.json``."""

    path: Path
    release: str
    counts: dict[str, int]


def declared_counts(data_root: str | Path) -> DeclaredCounts | None:
    """``<data-root>/usebench-counts.json``, or None when the data root has none."""
    path = Path(data_root) / COUNTS_FILE
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BenchError(f"{path}: not valid JSON ({e})") from None
    counts = raw.get("counts") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(raw.get("release"), str) or not isinstance(counts, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()):
        raise BenchError(f'{path}: expected {{"release": "<name>", "counts": {{"<file under the data root>": '
                         "<count>, ...}}")
    return DeclaredCounts(path, raw["release"], dict(counts))


def pinned_or_recorded(data_root: str | Path) -> dict[str, tuple[str, str]]:
    """sha256 per file (relative to the data root) that ``bench data`` pinned or recorded, with where from."""
    from usebench.data.sources import ChecksumStore, load_manifest

    out: dict[str, tuple[str, str]] = {}
    store = ChecksumStore(Path(data_root))
    if store.path.is_file():
        for cid, rec in store.components().items():
            when = rec.get("recorded_at", "?")
            for rel, sha in (rec.get("files") or {}).items():
                out[rel] = (sha, f"recorded in {store.path.name} by `bench data` ({cid}, {when})")
    for component in load_manifest().all_components():
        for rel, sha in component.pinned().items():
            out[rel] = (sha, f"pinned in usebench/data/sources.json ({component.id})")
    return out


def check_release(task: Any, counts: list[Count], file_sha256: dict[str, str], data_root: str | Path,
                  allow_partial: bool) -> dict[str, Any]:
    """Compare ``counts`` (and the files' sha256) with the release; the result record's ``release`` block.

    A mismatch raises :class:`ReleaseMismatchError` unless ``allow_partial``, when it is listed under
    ``partial`` in the returned block instead.
    """
    declared = declared_counts(data_root)
    basis = f"{COUNTS_FILE} ({declared.release})" if declared else "published"
    problems, table = [], {}
    for c in counts:
        expected, source = c.expected, c.source
        if declared and c.file in declared.counts:
            expected, source = declared.counts[c.file], f"{declared.path}"
        table[c.file] = {"what": c.what, "expected": expected, "found": c.found}
        if c.found != expected:
            problems.append(f"{Path(data_root) / c.file}: expected {expected} {c.what} ({source}), found {c.found}")
    known = pinned_or_recorded(data_root)
    checked = 0
    for rel, sha in file_sha256.items():
        if rel in known:
            checked += 1
            want, source = known[rel]
            if sha != want.lower():
                problems.append(f"{Path(data_root) / rel}: expected sha256 {want[:12]}... ({source}), "
                                f"found {sha[:12]}...")
    if problems and not allow_partial:
        more = f" (and {len(problems) - 1} more: {'; '.join(problems[1:3])})" if len(problems) > 1 else ""
        raise ReleaseMismatchError(
            f"{problems[0]}{more}. The file is truncated or is not the release {task.name} was published on: "
            f"fetch it again with `bench data download {task.dataset}`, or pass --allow-partial to evaluate it "
            "as it is (the result records that it is partial)")
    return {"basis": basis, "counts": table, "checksums_verified": checked, "partial": problems}
