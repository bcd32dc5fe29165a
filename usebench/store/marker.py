"""What a store is: the marker at its root, which tells a store nested in another from a run directory, and a
committed store (``results/reference``, ``results/laptop``) from one a command may write into by default."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from usebench.errors import BenchError
from usebench.store.files import check_writable, read_json, write_json_atomic

STORE_MARKER = ".usebench-store.json"  # at a store's root: {"usebench_store": 1, "committed": bool, "about": ...}
STORE_FORMAT = 1


def store_marker(root: str | Path) -> dict[str, Any] | None:
    """The marker at ``root`` (None: ``root`` holds none, or one that is not a usebench store's)."""
    marker = read_json(Path(root) / STORE_MARKER)
    return marker if isinstance(marker, dict) and marker.get("usebench_store") == STORE_FORMAT else None


def nested_stores(root: str | Path) -> frozenset[str]:
    """The folders directly under ``root`` that are stores of their own (they hold a marker): never a run
    directory of ``root``, never read as its results."""
    root = Path(root)
    if not root.is_dir():
        return frozenset()
    return frozenset(p.name for p in root.iterdir() if p.is_dir() and (p / STORE_MARKER).is_file())


def committed_store(path: str | Path) -> Path | None:
    """The committed store that ``path`` is, or lies in (its marker says ``committed``), else None."""
    here = Path(path).resolve()
    for folder in (here, *here.parents):
        marker = store_marker(folder)
        if marker is not None and marker.get("committed") is True:
            return folder
    return None


def check_store_target(results_dir: str | Path, named: bool, command: str) -> Path:
    """Before ``command`` writes into ``results_dir``: a committed store (or a folder inside one) is refused unless the
    user named it (``--results-dir``). Nothing is written. Returns ``results_dir``."""
    results_dir = Path(results_dir)
    committed = committed_store(results_dir)
    if committed is not None and not named:
        about = (store_marker(committed) or {}).get("about", "")
        raise BenchError(
            f"{results_dir} is in the committed store {committed}" + (f" ({about})" if about else "") + f": {command} "
            "does not write into it by default; write your results elsewhere (--results-dir DIR), or name the store "
            "itself with --results-dir to write into it on purpose")
    return results_dir


def mark_store(results_dir: str | Path) -> None:
    """Give a store without a marker an uncommitted one, so a store nested in another is told apart from a run
    directory by content (a folder inside a committed store is that store's: it gets none)."""
    results_dir = Path(results_dir)
    if store_marker(results_dir) is None and committed_store(results_dir) is None:
        write_json_atomic(results_dir / STORE_MARKER, {"usebench_store": STORE_FORMAT, "committed": False,
                                                       "about": "a results store written by usebench"})


def claim_store(results_dir: str | Path, named: bool, command: str) -> Path:
    """:func:`check_store_target`, then the folder checked writable (an error naming ``--results-dir``) and marked
    (:func:`mark_store`): for a command whose options are all checked and which writes next. Returns it."""
    check_store_target(results_dir, named, command)
    check_writable(results_dir, "results directory", "--results-dir")
    mark_store(results_dir)
    return Path(results_dir)
