"""Fetch, verify, extract and place: the mechanics behind ``bench data``.

Everything is staged inside the data root under hidden ``.usebench-tmp-*`` names and renamed into place only
when complete, so an interrupted download, a wrong checksum or a bad archive never leaves anything that looks
like data (``bench data status`` lists stale temporaries; they are safe to delete).
"""
from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from usebench.errors import BenchError

TMP_PREFIX = ".usebench-tmp-"
CHUNK = 1 << 20
ArchiveFormat = Literal["zip", "tar.gz", "gz"]


class ChecksumError(BenchError):
    """A file or archive does not have the checksum it must have."""


class UnsafeArchiveError(BenchError):
    """An archive member would land outside the extraction folder (zip-slip), or is a link or device."""


@dataclass(frozen=True)
class Digests:
    """The checksums of one file (hex)."""

    sha256: str
    md5: str
    size: int


def file_digests(path: Path) -> Digests:
    """sha256 and md5 of a file, read in 1 MiB chunks."""
    sha, md5, size = hashlib.sha256(), hashlib.md5(usedforsecurity=False), 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            sha.update(chunk)
            md5.update(chunk)
            size += len(chunk)
    return Digests(sha.hexdigest(), md5.hexdigest(), size)


def check_digests(what: str, got: Digests, sha256: str | None, md5: str | None, origin: str) -> None:
    """Raise :class:`ChecksumError` if ``got`` differs from an expected sha256 or md5 (None: not checked)."""
    for name, want, have in (("sha256", sha256, got.sha256), ("md5", md5, got.md5)):
        if want and want.lower() != have:
            raise ChecksumError(f"{what}: {name} is {have}, expected {want} ({origin})")


@contextmanager
def staging(root: Path, label: str) -> Iterator[Path]:
    """A fresh hidden folder inside ``root`` (same file system, so renames out of it are atomic);
    removed on exit, whatever happens."""
    root.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{label}-", dir=root))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def stale_temporaries(root: Path) -> list[Path]:
    """Leftovers of a killed run (a normal failure cleans up after itself)."""
    return sorted(root.glob(f"{TMP_PREFIX}*")) if root.is_dir() else []


def _progress(total: int | None, label: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=label, leave=False,
                disable=not enabled or not sys.stderr.isatty())


def fetch(url: str, target: Path, progress: bool = True, timeout: float = 60.0) -> tuple[Path, Digests]:
    """Stream ``url`` (http, https or file) to the file ``target``, hashing as it goes.

    ``target`` lies in a :func:`staging` folder the caller owns; on any error the partial file is deleted here too.
    """
    name = PurePosixPath(urllib.parse.urlparse(url).path).name or target.name
    sha, md5, size = hashlib.sha256(), hashlib.md5(usedforsecurity=False), 0
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "usebench"})
        with urllib.request.urlopen(request, timeout=timeout) as response, target.open("wb") as out:
            length = response.headers.get("Content-Length")
            with _progress(int(length) if length else None, name, progress) as bar:
                for chunk in iter(lambda: response.read(CHUNK), b""):
                    out.write(chunk)
                    sha.update(chunk)
                    md5.update(chunk)
                    size += len(chunk)
                    bar.update(len(chunk))
        if length and int(length) != size:
            raise BenchError(f"{url}: the download stopped after {size} of {length} bytes")
    except BaseException as e:
        target.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise BenchError(f"could not download {url}: {e}") from e
        raise
    return target, Digests(sha.hexdigest(), md5.hexdigest(), size)


def archive_format(name: str) -> ArchiveFormat:
    """``zip``, ``tar.gz`` or ``gz`` (one gzip-compressed file, e.g. ``AllNLI.tsv.gz``) from a file name."""
    lower = name.lower()
    if lower.endswith(".zip"):
        return "zip"
    if lower.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    if lower.endswith(".gz"):
        return "gz"
    raise BenchError(f"{name}: not an archive this tool reads (expected .zip, .tar.gz, .tgz or .gz)")


def _safe_relative(member: str, archive: Path) -> PurePosixPath | None:
    """The member's path, or an error when it is absolute or climbs out; None for entries to skip."""
    path = PurePosixPath(member.replace("\\", "/"))
    if path.is_absolute() or (path.parts and path.parts[0].endswith(":")) or ".." in path.parts:
        raise UnsafeArchiveError(f"{archive}: member {member!r} would be written outside the extraction folder")
    return path if path.parts and path.parts != (".",) else None


def extract(archive: Path, into: Path) -> None:
    """Unpack a zip or tar.gz into the empty folder ``into``, refusing zip-slip paths, links and devices."""
    fmt = archive_format(archive.name)
    try:
        if fmt == "zip":
            _extract_zip(archive, into)
        elif fmt == "gz":  # one compressed file: it becomes the file named without ".gz"
            with gzip.open(archive, "rb") as src, (into / archive.name[: -len(".gz")]).open("wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
        else:
            _extract_tar(archive, into)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, gzip.BadGzipFile) as e:
        raise BenchError(f"{archive}: not a readable {fmt} archive ({e})") from None


def _extract_zip(archive: Path, into: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            rel = _safe_relative(info.filename, archive)
            mode = info.external_attr >> 16
            if rel is None:
                continue
            if (mode & 0o170000) == 0o120000:  # a symlink stored by Info-ZIP
                raise UnsafeArchiveError(f"{archive}: member {info.filename!r} is a symbolic link")
            dest = into.joinpath(*rel.parts)
            if info.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, dest.open("wb") as out:
                shutil.copyfileobj(src, out, CHUNK)


def _extract_tar(archive: Path, into: Path) -> None:
    with tarfile.open(archive, "r:gz") as tf:
        for member in tf:
            rel = _safe_relative(member.name, archive)
            if rel is None:
                continue
            if not (member.isfile() or member.isdir()):
                raise UnsafeArchiveError(f"{archive}: member {member.name!r} is a link or a special file")
            dest = into.joinpath(*rel.parts)
            if member.isdir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            src = tf.extractfile(member)
            if src is None:
                raise BenchError(f"{archive}: member {member.name!r} has no data")
            with src, dest.open("wb") as out:
                shutil.copyfileobj(src, out, CHUNK)


def place(staged: Path, dest: Path, replace: bool = False) -> None:
    """Rename ``staged`` (a file or folder) to ``dest`` in one step. An existing ``dest`` is an error unless
    ``replace``; then it is first renamed aside, so ``dest`` is at every moment either the old or the new."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not (dest.exists() or dest.is_symlink()):
        os.rename(staged, dest)
        return
    if not replace:
        raise BenchError(f"{dest} already exists (use --force to replace it)")
    aside = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}old-", dir=dest.parent)) / dest.name
    os.rename(dest, aside)
    try:
        os.rename(staged, dest)
    except BaseException:
        os.rename(aside, dest)
        raise
    finally:
        shutil.rmtree(aside.parent, ignore_errors=True)


def copy_into(src: Path, dest: Path) -> None:
    """Copy a local file or folder to ``dest`` (a path inside a staging folder); links are refused."""
    if src.is_symlink():
        raise UnsafeArchiveError(f"{src} is a symbolic link; give the real file or folder")
    if src.is_dir():
        shutil.copytree(src, dest, symlinks=True)
        links = [p for p in dest.rglob("*") if p.is_symlink()]
        if links:
            raise UnsafeArchiveError(f"{src}: contains the symbolic link {links[0].relative_to(dest)}")
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
