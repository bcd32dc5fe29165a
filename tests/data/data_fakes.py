"""Tiny stand-ins for the canonical archives, built from the manifest so every component can be fetched from a
``file://`` mirror in tests."""
from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from dataclasses import replace
from pathlib import Path

from usebench.data.manager import DataManager
from usebench.data.sources import Component, Manifest, load_manifest

STS_LINE = "It's Mr. Smith's car.\tThe car (a Ford) is red..."
STSB_LINE = "main-captions\tMSRvid\t2012test\t0001\t5.000\tA man plays a flute.\tA man's flute.\tsrc1\tsrc2"


def fake_parquet(rows: list[tuple[str, str]], columns: tuple[str, str] = ("sent0", "sent1")) -> bytes:
    """A parquet file of two string columns (DenoSent's released layout); a stub where pyarrow is absent."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return b"PAR1 (pyarrow is not installed: no real parquet)\n"
    sink = io.BytesIO()
    pq.write_table(pa.table({columns[0]: [a for a, _ in rows], columns[1]: [b for _, b in rows]}), sink)
    return sink.getvalue()


def member_files(c: Component, tag: str = "") -> dict[str, bytes]:
    """The files a fake archive holds under its member, each with small but well-formed content."""
    if c.archive_name.endswith(".parquet"):
        return {"": fake_parquet([(f"a sentence {tag}", f"a paraphrase {tag}"), ("Tab\there", "line\nbreak")])}
    names = list(c.files) or [""]
    out = {}
    for name in names:
        if "STS.input" in name or "STS2016.input" in name:
            text = STS_LINE + "\n" + "no tab here\n"
        elif name.endswith(".csv"):
            text = STSB_LINE + "\n"
        else:
            text = f"{c.id} {name} {tag}\n"
        out[name] = text.encode()
    if c.files:
        out["README"] = b"not an expected file\n"
    return out


def write_archive(path: Path, members: dict[str, bytes]) -> Path:
    """A zip, tar.gz or gz (by the file name) holding ``members`` (archive path -> bytes); a gz holds the one
    member whose name is the file's name without ``.gz``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz") and not path.name.endswith(".tar.gz"):
        path.write_bytes(gzip.compress(members[path.name[: -len(".gz")]]))
    elif path.name.endswith(".zip"):
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in members.items():
                zf.writestr(name, data)
    else:
        with tarfile.open(path, "w:gz") as tf:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return path


def build_mirror(folder: Path, manifest: Manifest, tag: str = "") -> Path:
    """One fake archive per downloadable component, named as in its URL, in ``folder``."""
    for c in manifest.all_components():
        if c.plain:  # the URL is the file itself
            (folder / c.archive_name).write_bytes(member_files(c, tag)[""])
        elif c.url:
            files = member_files(c, tag)
            members = {f"{c.member}/{n}" if n else c.member: data for n, data in files.items()}
            members[f"unrelated-{c.id}.txt"] = b"other files in the archive are ignored\n"
            write_archive(folder / c.archive_name, members)
    return folder


def unpinned(manifest: Manifest) -> Manifest:
    """The manifest without its published checksums (the fakes cannot match them)."""
    datasets = {name: tuple(replace(c, archive_md5=None, archive_sha256=None) for c in comps)
                for name, comps in manifest.datasets.items()}
    return replace(manifest, datasets=datasets)


MANIFEST = load_manifest()


def manager(root: Path, mirror: Path, manifest: Manifest | None = None) -> DataManager:
    """A data manager on ``root`` that downloads from the fake ``mirror`` (checksums unpinned)."""
    return DataManager(root, manifest or unpinned(MANIFEST), mirror=str(mirror), progress=False)


def looks_empty(root: Path) -> bool:
    """Nothing a user (or status) could take for data: no temporaries, no component paths."""
    comps, _, stale = DataManager(root, MANIFEST).status()
    return not stale and all(s.state == "absent" for s in comps)
