"""Facts a plan derives from large data files, kept between processes: a corpus' distinct-sentence count and hash,
AllNLI's triplet count, how many lines a config keeps. With them a dry run of the TSDAE paper's grid need not parse
AllNLI or a million Wikipedia sentences again (issue 37); the first plan on a machine computes them.

Each fact names what it was computed from. A *file* fact records the files read while computing it (every reader
of :mod:`usebench.data.memo`, with path, size and modification time) and is recomputed when any of them differs; a
*content* fact is keyed by the sha256 of the data it reads, so it never goes stale. The whole cache is tied to the
code that computed it: a digest of usebench's source, Python's and numpy's versions (a different install starts an
empty cache). A file rewritten in place with the same size and modification time is not noticed, as make and git's
index do not notice it; the plan would then show the old facts, and the unit that trains re-reads its data and
refuses a hash other than the planned one.

Only planning uses it (inside :func:`usebench.data.memo.planning`; written when the session ends): training and
evaluation always read their data. ``$BENCH_DIGESTS`` names the file (default ``~/.cache/usebench/digests.json``);
``BENCH_DIGESTS=off`` turns it off.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from usebench.data.memo import file_stamp, in_session, on_session_end, recording
from usebench.store import read_json

DIGESTS_ENV = "BENCH_DIGESTS"
SCHEMA = 1
MAX_ENTRIES = 20_000  # the newest are kept: a store holds a few thousand for every paper's grid
_store: dict[str, Any] | None = None  # the loaded entries of this session
_dirty = False


def digest_file() -> Path | None:
    """Where the digests live, None when turned off."""
    value = os.environ.get(DIGESTS_ENV, "").strip()
    if value.lower() in ("off", "0", "false", "no"):
        return None
    return Path(value).expanduser() if value else Path.home() / ".cache" / "usebench" / "digests.json"


def fact(kind: str, params: Any, compute: Callable[[], Any], *, content: bool = False) -> Any:
    """``compute()`` (JSON-able), as computed once for ``kind`` and ``params`` while what it read is unchanged. A
    ``content`` fact's ``params`` name the data by its hash (nothing to re-check). Outside a planning session, or
    with the cache off, it is computed every time. The value is returned as JSON gives it back (lists, not tuples),
    computed or not, so a plan is the same either way."""
    path = digest_file()
    if path is None or not in_session():
        return json.loads(json.dumps(compute()))
    store = _entries(path)
    key = fact_key(kind, params)
    entry = store.get(key)
    if entry is not None and (content or _fresh(entry["files"])):
        _note_reads(entry["files"])
        return entry["value"]
    with recording() as files:
        value = json.loads(json.dumps(compute()))
    if content or files:  # a file fact that read nothing names no dependency: not kept
        global _dirty
        store[key] = {"files": sorted({tuple(f) for f in files}) if not content else [], "value": value,
                      "t": time.time()}
        _dirty = True
    return value


def fact_key(kind: str, params: Any) -> str:
    """The store's key of a fact: its kind and a hash of its parameters (configs make long keys)."""
    return kind + ":" + hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _fresh(files: list[list[Any]]) -> bool:
    return bool(files) and all(file_stamp(f[0]) == tuple(f) for f in files)


def _note_reads(files: list[list[Any]]) -> None:
    """A fact served from the store still counts its files as read, for a fact that is being computed around it."""
    from usebench.data import memo

    for recorder in memo._recorders:
        recorder.extend(tuple(f) for f in files)


def _entries(path: Path) -> dict[str, Any]:
    """This session's entries: loaded from ``path`` on first use (empty if absent, unreadable or another code's)."""
    global _store
    if _store is None:
        _store = _read(path)
        on_session_end(_flush)
    return _store


def _read(path: Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("code") != code_digest():
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def _flush() -> None:
    """Write this session's new facts (merged with what another process wrote meanwhile), then forget them."""
    global _store, _dirty
    path, store, dirty = digest_file(), _store, _dirty
    _store, _dirty = None, False
    if path is None or store is None or not dirty:
        return
    merged = {**_read(path), **store}
    if len(merged) > MAX_ENTRIES:
        merged = dict(sorted(merged.items(), key=lambda kv: kv[1].get("t", 0))[-MAX_ENTRIES:])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".digests-", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"schema": SCHEMA, "code": code_digest(), "entries": merged}, fh)
        os.replace(tmp, path)
    except OSError:  # a read-only home: the next plan computes the facts again, nothing else changes
        pass


@lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 of usebench's source files, with Python's, its Unicode database's and numpy's versions: what decides
    how a fact is computed (str.strip's whitespace, numpy's permutations)."""
    import numpy

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(f"{sys.version_info[:2]} {unicodedata.unidata_version} {numpy.__version__}".encode())
    for source in sorted(root.rglob("*.py")):
        h.update(source.relative_to(root).as_posix().encode() + b"\0" + source.read_bytes())
    return h.hexdigest()
