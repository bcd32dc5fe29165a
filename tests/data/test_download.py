"""Fetch / extract / place mechanics: checksums, zip-slip and link refusal, atomic replacement."""
from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile

import pytest

from usebench.data.download import (ChecksumError, UnsafeArchiveError, check_digests, extract, fetch, file_digests,
                                place, stale_temporaries, staging)
from usebench.errors import BenchError
from tests.data.data_fakes import write_archive


def test_fetch_file_url_streams_and_hashes(tmp_path):
    src = tmp_path / "blob.bin"
    payload = bytes(range(256)) * 5000
    src.write_bytes(payload)
    (tmp_path / "into").mkdir()
    path, dig = fetch(src.as_uri(), tmp_path / "into" / "x.bin", progress=False)
    assert path.read_bytes() == payload
    assert dig.sha256 == hashlib.sha256(payload).hexdigest() and dig.md5 == hashlib.md5(payload).hexdigest()
    assert dig.size == len(payload) == file_digests(path).size


def test_fetch_missing_url_is_a_clean_error(tmp_path):
    (tmp_path / "into").mkdir()
    with pytest.raises(BenchError, match="could not download"):
        fetch((tmp_path / "nope.zip").as_uri(), tmp_path / "into" / "nope.zip", progress=False)
    assert not list((tmp_path / "into").iterdir())


def test_check_digests_names_the_expected_and_actual_value(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    dig = file_digests(tmp_path / "f")
    check_digests("f", dig, hashlib.sha256(b"abc").hexdigest().upper(), None, "pinned")  # case-insensitive
    with pytest.raises(ChecksumError, match=f"md5 is {hashlib.md5(b'abc').hexdigest()}, expected 00"):
        check_digests("f", dig, None, "00", "pinned")


@pytest.mark.parametrize("name", ["../up.txt", "a/../../up.txt", "/abs.txt", "C:/win.txt"])
def test_zip_slip_members_are_refused(tmp_path, name):
    archive = write_archive(tmp_path / "a.zip", {"ok/x.txt": b"x", name: b"evil"})
    (tmp_path / "out").mkdir()
    with pytest.raises(UnsafeArchiveError, match="outside the extraction folder"):
        extract(archive, tmp_path / "out")
    assert not (tmp_path / "up.txt").exists() and not (tmp_path / "abs.txt").exists()


def test_tar_links_are_refused(tmp_path):
    archive = tmp_path / "a.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        link = tarfile.TarInfo("pkg/passwd")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(link)
    (tmp_path / "out").mkdir()
    with pytest.raises(UnsafeArchiveError, match="link"):
        extract(archive, tmp_path / "out")


def test_zip_symlink_entries_are_refused(tmp_path):
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo("pkg/link")
        info.external_attr = (0o120777 << 16)
        zf.writestr(info, "/etc/passwd")
    (tmp_path / "out").mkdir()
    with pytest.raises(UnsafeArchiveError, match="symbolic link"):
        extract(archive, tmp_path / "out")


def test_extract_tar_gz_and_zip(tmp_path):
    members = {"top/a.txt": b"a", "top/sub/b.txt": b"b"}
    for name in ("x.zip", "x.tar.gz"):
        out = tmp_path / name.replace(".", "_")
        out.mkdir()
        extract(write_archive(tmp_path / name, members), out)
        assert (out / "top/a.txt").read_bytes() == b"a" and (out / "top/sub/b.txt").read_bytes() == b"b"
    (tmp_path / "gz").mkdir()  # one gzip-compressed file (AllNLI.tsv.gz) becomes that file
    extract(write_archive(tmp_path / "AllNLI.tsv.gz", {"AllNLI.tsv": b"split\tlabel\n"}), tmp_path / "gz")
    assert (tmp_path / "gz" / "AllNLI.tsv").read_bytes() == b"split\tlabel\n"
    (tmp_path / "bad.tsv.gz").write_bytes(b"not gzip")
    with pytest.raises(BenchError, match="not a readable gz"):
        extract(tmp_path / "bad.tsv.gz", tmp_path / "gz")


def test_corrupt_or_unknown_archives_are_clean_errors(tmp_path):
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    (tmp_path / "out").mkdir()
    with pytest.raises(BenchError, match="not a readable zip"):
        extract(tmp_path / "bad.zip", tmp_path / "out")
    with pytest.raises(BenchError, match=r"expected .zip, .tar.gz, .tgz or .gz"):
        extract(tmp_path / "data.rar", tmp_path / "out")
    truncated = io.BytesIO()
    with tarfile.open(fileobj=truncated, mode="w:gz") as tf:
        info = tarfile.TarInfo("a.txt")
        info.size = 4
        tf.addfile(info, io.BytesIO(b"abcd"))
    (tmp_path / "cut.tgz").write_bytes(truncated.getvalue()[:30])
    with pytest.raises(BenchError, match="not a readable tar.gz"):
        extract(tmp_path / "cut.tgz", tmp_path / "out")


def test_place_is_atomic_and_refuses_to_overwrite_without_replace(tmp_path):
    dest = tmp_path / "root" / "ds"
    with staging(tmp_path / "root", "t") as tmp:
        (tmp / "ds").mkdir()
        (tmp / "ds" / "f").write_text("new")
        place(tmp / "ds", dest)
    assert (dest / "f").read_text() == "new"
    with staging(tmp_path / "root", "t") as tmp:
        (tmp / "ds").mkdir()
        (tmp / "ds" / "g").write_text("newer")
        with pytest.raises(BenchError, match="already exists"):
            place(tmp / "ds", dest)
        place(tmp / "ds", dest, replace=True)
    assert sorted(p.name for p in dest.iterdir()) == ["g"]
    assert not stale_temporaries(tmp_path / "root")


def test_staging_is_removed_on_error(tmp_path):
    with pytest.raises(RuntimeError), staging(tmp_path, "x") as tmp:
        (tmp / "partial").write_text("half")
        raise RuntimeError("boom")
    assert not stale_temporaries(tmp_path)
