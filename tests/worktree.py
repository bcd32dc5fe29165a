"""The suite's hygiene check: tests write only under their tmp paths, so a run leaves no new untracked file in the
working tree (an sentence-transformers trainer once wrote ``checkpoints/model/eval/…`` into the current folder, and
the files were committed)."""
from __future__ import annotations

import subprocess
from pathlib import Path


def untracked(root: Path) -> set[str] | None:
    """The untracked, not ignored files under ``root`` (paths relative to the checkout's top), or None when ``root``
    is not in a git checkout or git is absent (an sdist, a wheel's tests)."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "-z", "--", "."], cwd=root,
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    # -z entries are "XY path", NUL-terminated; a rename carries its source as one more entry, never "??"
    return {entry[3:] for entry in out.stdout.split("\0") if entry.startswith("?? ")}


def left_behind(before: set[str] | None, after: set[str] | None) -> list[str]:
    """The files untracked after the run that were not before it, sorted (none when either side is unknown)."""
    if before is None or after is None:
        return []
    return sorted(after - before)
