"""Files in the store written whole or not at all, and read back without a crash on a half-written one.

Every writer renames a complete temporary file into place (:func:`write_json_atomic`, :func:`write_bytes_atomic`),
with the mode an ordinary ``open()`` would give, so a shared store stays readable by the group the umask lets in;
:func:`read_json` is for the files a reader may do without.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from usebench.errors import BenchError

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask (Linux: read from /proc, which does not change it; elsewhere set and restored)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def mkstemp_shared(dir: str | Path, prefix: str = "", suffix: str = ".tmp") -> tuple[int, str]:
    """``tempfile.mkstemp`` whose file gets the mode an ordinary ``open()`` would give (0666 minus the umask).

    mkstemp creates files 0600 whatever the umask; renamed into a shared results directory, data root or
    embedding cache such a file would be unreadable by the group that the umask means to let in.
    """
    fd, tmp = tempfile.mkstemp(dir=dir, prefix=prefix, suffix=suffix)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
    except BaseException:
        os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise
    return fd, tmp


def honour_umask(root: str | Path) -> None:
    """Give every file under ``root`` the mode an ordinary ``open()`` would (0666 minus the umask), folders
    0777 minus it: libraries that write through private temp files (safetensors weights are written 0600)
    would otherwise keep a shared checkpoint unreadable by the group."""
    mask = current_umask()
    root = Path(root)
    for p in [root, *root.rglob("*")]:
        if p.is_symlink():
            continue
        p.chmod((0o777 if p.is_dir() else 0o666) & ~mask)


def check_writable(directory: str | Path, what: str, option: str) -> Path:
    """Fail now, before any expensive work, if files cannot be written in ``directory``. Nothing is left
    behind: a folder that does not exist yet is not created, its nearest existing parent is tried instead.

    The error names the folder, the reason and the option that chooses another one.
    """
    directory = Path(directory)
    probe = directory
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        reason = f"{probe} is not a folder"
    else:
        try:  # a real write: permission bits, read-only mounts, quotas and root's exceptions all show here
            fd, tmp = tempfile.mkstemp(dir=probe, prefix=".usebench-write-test-")
            os.close(fd)
            os.unlink(tmp)
            return directory
        except OSError as e:
            reason = f"cannot write in {probe}: {e.strerror or e}"
    raise BenchError(f"{what} {directory} is not writable ({reason}); choose another with {option}")


def write_json_atomic(path: str | Path, payload: Any) -> Path:
    """Write JSON to a temp file in the same folder, fsync, then rename: readers never see half a file.
    The file gets the umask's mode (see :func:`mkstemp_shared`)."""
    text = json.dumps(payload, indent=2, sort_keys=True, default=_json_default)  # as stored_form reads it
    return write_bytes_atomic(path, (text + "\n").encode("utf-8"))


def stored_form(payload: Any) -> Any:
    """``payload`` as :func:`write_json_atomic` stores it and reading the file back would give it (keys sorted,
    numpy values and paths as JSON), without the write and the read: for a caller that keeps what it stored."""
    return json.loads(json.dumps(payload, sort_keys=True, default=_json_default))


def read_json(path: str | Path, default: Any = None) -> Any:
    """The JSON in ``path``, or ``default`` when there is none to read: the file is missing or unreadable, empty,
    not UTF-8, or half-written (a writer that is not :func:`write_json_atomic`, or one killed mid-write).

    For the files a reader may do without (usage, manifests, markers, caches, card indexes): the caller decides
    what a missing record means; a file whose absence is an error is read where its error can name it."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return default


def read_json_lines(path: str | Path) -> list[Any]:
    """The JSON lines of ``path`` (a stage's ``log.jsonl``): [] when there is no file; a last line that a killed
    writer left half-written is skipped, as the log's appender resumes after it. A bad line before the last is a
    corrupt log and is named with its line number."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError as e:
            if number == len(lines):
                break  # the line a killed writer was appending
            raise ValueError(f"{path}:{number}: not a JSON line ({e})") from None
    return out


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def write_bytes_atomic(path: str | Path, payload: bytes) -> Path:
    """Write bytes to a temp file in the same folder, fsync, then rename (see :func:`write_json_atomic`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = mkstemp_shared(path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
