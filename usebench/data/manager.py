"""The data manager behind ``bench data``: download, import, verify and status over one data root.

Each component of the manifest (:mod:`usebench.data.sources`) is acquired in a staging folder inside the data
root (fetch -> checksum -> extract -> expected files -> rename into place), so ``dest`` either does not exist
or is complete. Derived components (SentEval's tokenised STS) are computed the same way from their source.
Nothing here runs during ``bench eval``/``run``: tasks raise MissingDataError naming ``bench data download``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from usebench.data import paraphrases, senteval
from usebench.data.releases import PINNED
from usebench.data.sources import ChecksumStore, Component, Manifest, load_manifest, resolve_datasets, tree_sha256
from usebench.data.download import (ChecksumError, Digests, archive_format, check_digests, copy_into, extract, fetch,
                                file_digests, place, stale_temporaries, staging)
from usebench.errors import BenchError
from usebench.store import honour_umask

Action = Literal["downloaded", "imported", "derived", "present", "failed"]
State = Literal["ok", "mismatch", "missing", "unverified", "absent"]
FIRST_USE = "first use"  # a component recorded without a pinned checksum to check it against


@dataclass(frozen=True)
class Outcome:
    """What happened to one component."""

    component: str
    action: Action
    detail: str = ""


@dataclass(frozen=True)
class Finding:
    """One verified (or unverifiable) file; ``basis`` says where the expected checksum comes from."""

    component: str
    path: str
    state: State
    basis: Literal["pinned", "recorded", "none"] = "none"
    detail: str = ""


@dataclass(frozen=True)
class ComponentStatus:
    """Presence and checksum provenance of one component (nothing is hashed)."""

    component: Component
    state: Literal["present", "incomplete", "absent"]
    missing: tuple[str, ...]
    checksums: str


@dataclass(frozen=True)
class TaskFiles:
    """What the data manager needs to know of a task to report its readiness (built by the caller from the
    task registry: the data layer sits below the task adapters and does not import them)."""

    task: str
    dataset: str
    files: Mapping[str, Sequence[str]]  # split -> files relative to the data root
    train_files: Sequence[str] = ()
    error: str | None = None  # the adapter failed to say (reported, never hides the rest of the status)


@dataclass(frozen=True)
class TaskStatus:
    """Whether a registered task's files are in the data root, per split, and its training corpus."""

    task: str
    dataset: str
    splits: Mapping[str, bool]
    first_missing: str | None
    train: bool | None  # None: the task has no training corpus
    error: str | None = None


class DataManager:
    """Operations on the data root ``root``. ``mirror`` (a URL or folder holding the archives under their own
    names) and ``urls`` (component id -> URL) redirect downloads, e.g. to ``file://`` archives in tests."""

    def __init__(self, root: Path, manifest: Manifest | None = None, mirror: str | None = None,
                 urls: Mapping[str, str] | None = None, progress: bool = True,
                 tasks: Sequence[TaskFiles] = ()):
        self.root = Path(root).expanduser()
        self.tasks = tuple(tasks)  # for `status`: which registered tasks have their files
        self.manifest = manifest or load_manifest()
        self.mirror = mirror
        self.urls = dict(urls or {})
        self.progress = progress
        self.store = ChecksumStore(self.root)

    # --- download ----------------------------------------------------------------------------------------
    def url_for(self, c: Component) -> str:
        """The URL a component is fetched from: an override, else the mirror, else the manifest's."""
        if c.id in self.urls:
            return self.urls[c.id]
        if self.mirror:
            base = self.mirror if "://" in self.mirror else Path(self.mirror).expanduser().resolve().as_uri()
            return f"{base.rstrip('/')}/{c.archive_name}"
        if not c.url:
            raise BenchError(f"component {c.id!r} has no URL")
        return c.url

    def download(self, names: Sequence[str] = (), force: bool = False, retrust: bool = False) -> list[Outcome]:
        """Fetch the datasets (``all``, dataset or task names); components already present are kept unless
        ``force``. A failure is reported in its Outcome and the other components still run."""
        outcomes = []
        for ds in resolve_datasets(list(names), self.manifest):
            for c in self.manifest.datasets[ds]:
                outcomes.append(self._guarded(c, lambda c=c: self._download_one(c, force, retrust)))
        return outcomes

    def _guarded(self, c: Component, step: Callable[[], Outcome]) -> Outcome:
        try:
            return step()
        except (BenchError, OSError) as e:
            return Outcome(c.id, "failed", str(e))

    def _download_one(self, c: Component, force: bool, retrust: bool) -> Outcome:
        exists = (self.root / c.dest).exists()
        incomplete = exists and any(not (self.root / p).is_file() for p in c.paths())
        if exists and not (force or incomplete):
            return Outcome(c.id, "present")
        note = " (replaced an incomplete copy)" if incomplete and not force else ""
        if c.derive:
            outcome = self._derive(c, replace=True)
            return Outcome(c.id, outcome.action, outcome.detail + note)
        url = self.url_for(c)
        self._acquire_archive(c, lambda tmp: fetch(url, tmp / c.archive_name, self.progress), "download", url,
                              True, retrust)
        return Outcome(c.id, "downloaded", url + note)

    def _acquire_archive(self, c: Component, obtain: Callable[[Path], tuple[Path, Digests]], how: str, source: str,
                         force: bool, retrust: bool, allow_incomplete: bool = False) -> None:
        with staging(self.root, c.id) as tmp:
            archive, digests = obtain(tmp)
            check_digests(f"{c.archive_name} ({c.id})", digests, c.archive_sha256, c.archive_md5,
                          "pinned in the manifest")
            unpacked = tmp / "unpacked"
            unpacked.mkdir()
            if c.plain:  # the fetched file is the data itself
                archive.rename(unpacked / (c.member or archive.name))
            else:
                extract(archive, unpacked)
                archive.unlink()
            item = unpacked / (c.member or "")
            if not c.member or not item.exists():
                found = ", ".join(sorted(p.name for p in unpacked.iterdir())) or "nothing"
                raise BenchError(f"{source}: expected {c.member!r} at the top of the archive, found: {found}")
            archive_info = {"name": archive.name, "sha256": digests.sha256, "md5": digests.md5}
            self._install(c, item, how, source, force, retrust, allow_incomplete, archive_info)

    def _install(self, c: Component, item: Path, how: str, source: str, force: bool, retrust: bool,
                 allow_incomplete: bool, archive: Mapping[str, str] | None = None) -> None:
        """Check ``item`` (a staged copy of ``dest``) and rename it into place; record its checksums."""
        missing = [p for p in c.paths() if not _staged(c, item, p).is_file()]
        if missing and not allow_incomplete:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise BenchError(f"{source}: lacks {missing[0]}{more}, which a complete {c.id} has")
        if c.derive and c.derive["kind"] == "paraphrase-tsv":
            paraphrases.check_tsv(item, source)  # an imported copy must have the layout DenoSent reads
        digests = tree_sha256(item, c.dest)
        for rel, want in c.pinned().items():
            if rel in digests and digests[rel] != want:
                raise ChecksumError(f"{source}: {rel} has sha256 {digests[rel]}, expected {want} "
                                    "(pinned in the manifest)")
        self._check_record(c, digests, source, retrust)
        honour_umask(item)  # archives and copied folders may carry 0600/0700 modes; a data root is often shared
        place(item, self.root / c.dest, replace=force)
        self.store.record(c.id, how, source, digests, archive, self._verification(c, archive))

    def _verification(self, c: Component, archive: Mapping[str, str] | None) -> str:
        """"pinned" when what was just installed was checked against checksums sources.json pins (its archive's, or
        every file's), or derived from a component that was; "first use" otherwise (usebench.data.releases)."""
        if c.derive:
            source = self.store.get(c.derive["from"]) or {}
            return PINNED if source.get("verified") == PINNED else FIRST_USE
        if archive is not None and (c.archive_sha256 or c.archive_md5):  # check_digests compared it with the pin
            return PINNED
        pinned = c.pinned()
        return PINNED if pinned and all(p in pinned for p in c.paths()) else FIRST_USE

    def _check_record(self, c: Component, digests: Mapping[str, str], source: str, retrust: bool) -> None:
        """A component fetched again must match the checksums recorded the first time (trust on first use)."""
        rec = self.store.get(c.id)
        if rec is None or retrust or rec.get("how") == "derived":
            return
        changed = [p for p, h in rec["files"].items() if p in digests and digests[p] != h]
        if changed:
            raise ChecksumError(
                f"{source}: {changed[0]} differs from the copy recorded on {rec['recorded_at']} ({rec['how']} from "
                f"{rec['source']}); if the change is expected, pass --retrust to record the new checksums")

    def _derive(self, c: Component, replace: bool) -> Outcome:
        derive = c.derive or {}
        src = self.manifest.component(derive["from"])
        src_dir = self.root / src.dest
        if not src_dir.exists():
            raise BenchError(f"{c.id} is computed from {src.id}, which is not in {self.root}")
        detail = f"from {src.dest}"
        with staging(self.root, c.id) as tmp:
            out = tmp / Path(c.dest).name
            if derive["kind"] == "senteval-sts":
                senteval.senteval_sts_dir(src_dir, out, derive["subsets"], derive["prefix"])
            elif derive["kind"] == "paraphrase-tsv":
                kept, dropped = paraphrases.write_tsv(src_dir, out, derive["columns"])
                detail += f": {kept:,} pairs" + (f" ({dropped:,} with an empty side dropped)" if dropped else "")
            else:
                senteval.senteval_stsb_dir(src_dir, out, derive["files"])
            self._install(c, out, "derived", f"{src.id} via usebench.data.{_DERIVERS[derive['kind']]}", replace,
                          True, False)
        return Outcome(c.id, "derived", detail)

    # --- import ------------------------------------------------------------------------------------------
    def import_paths(self, paths: Sequence[Path], as_id: str | None = None, force: bool = False,
                     retrust: bool = False, allow_incomplete: bool = False) -> list[Outcome]:
        """Place local archives or folders (a component's archive or folder, or a whole data root), then
        compute the derived components they make possible. Present components are kept unless ``force``."""
        outcomes: list[Outcome] = []
        touched: set[str] = set()
        for path in map(Path, paths):
            if not path.exists():
                raise BenchError(f"{path} does not exist")
            for c, item, is_archive in self._identify(path, as_id):
                touched.add(c.dataset)
                outcomes.append(self._guarded(c, lambda c=c, item=item, a=is_archive: self._import_one(
                    c, item, a, force, retrust, allow_incomplete)))
        return outcomes + self._derive_after_import(touched, outcomes)

    def _derive_after_import(self, datasets: set[str], outcomes: list[Outcome]) -> list[Outcome]:
        """Compute derived components that are missing, or whose source was just replaced."""
        done = {o.component for o in outcomes}
        imported = {o.component for o in outcomes if o.action == "imported"}
        out = []
        for c in (c for ds in datasets for c in self.manifest.datasets[ds] if c.derive and c.id not in done):
            src = self.manifest.component(c.derive["from"])
            missing = not (self.root / c.dest).exists()
            if (self.root / src.dest).exists() and (missing or src.id in imported):
                out.append(self._guarded(c, lambda c=c: self._derive(c, replace=True)))
        return out

    def _import_one(self, c: Component, item: Path, is_archive: bool, force: bool, retrust: bool,
                    allow_incomplete: bool) -> Outcome:
        if (self.root / c.dest).exists() and not force:
            return Outcome(c.id, "present", f"kept; {item} not imported (use --force to replace)")
        if is_archive:
            def obtain(tmp: Path) -> tuple[Path, Digests]:
                copy_into(item, tmp / item.name)
                return tmp / item.name, file_digests(tmp / item.name)

            self._acquire_archive(c, obtain, "import", str(item.resolve()), force, retrust, allow_incomplete)
        else:
            with staging(self.root, c.id) as tmp:
                staged = tmp / Path(c.dest).name
                copy_into(item, staged)
                self._install(c, staged, "import", str(item.resolve()), force, retrust, allow_incomplete)
        return Outcome(c.id, "imported", str(item))

    def _identify(self, path: Path, as_id: str | None) -> list[tuple[Component, Path, bool]]:
        """Which component(s) a local path holds: (component, path to place, is it an archive)."""
        comps = self.manifest.all_components()
        if as_id is not None:
            c = self.manifest.component(as_id)
            if path.is_dir() and c.member and path.name != c.member and (path / c.member).exists():
                path = path / c.member  # the folder an archive was unpacked in
            return [(c, path, path.is_file() and _is_archive(path) and not c.derive)]
        if path.is_file():
            hits = [(c, path, True) for c in comps if c.url and c.archive_name == path.name]
            hits += [(c, path, False) for c in comps if not c.files and Path(c.dest).name == path.name]
            several_ok = False
        else:  # a data root, a folder an archive was unpacked in, or one component's folder
            hits = [(c, path / c.dest, False) for c in comps if (path / c.dest).exists()]
            # a folder named as a component's member counts only when it holds that component's files (USEB's
            # data-eval/cqadupstack is not BEIR's cqadupstack/)
            hits = hits or [(c, path / c.member, False) for c in comps if c.member and (path / c.member).exists()
                            and (not c.files or any((path / c.member / f).exists() for f in c.files))]
            several_ok = bool(hits)
            hits = hits or [(c, path, False) for c in comps if path.name in (c.member, Path(c.dest).name)]
        if not hits or (len(hits) > 1 and not several_ok):
            what = f"it could be any of {', '.join(c.id for c, _, _ in hits)}" if hits else "it matches no component"
            raise BenchError(f"cannot tell which dataset {path} holds ({what}); pass --as with one of: "
                             f"{', '.join(self.manifest.component_ids())}")
        return hits

    # --- verify and status -------------------------------------------------------------------------------
    def verify(self, names: Sequence[str] = (), record: bool = False) -> list[Finding]:
        """Hash the expected and recorded files of every present component of the datasets; with ``record``,
        record the checksums of files that have neither a pinned nor a recorded one."""
        findings: list[Finding] = []
        for ds in resolve_datasets(list(names), self.manifest):
            for c in self.manifest.datasets[ds]:
                findings += self._verify_one(c, record)
        return findings

    def _verify_one(self, c: Component, record: bool) -> list[Finding]:
        if not (self.root / c.dest).exists():
            return [Finding(c.id, c.dest, "absent")]
        rec = self.store.get(c.id)
        recorded = dict(rec["files"]) if rec else {}
        pinned = c.pinned()
        out, new = [], {}
        for rel in dict.fromkeys([*c.paths(), *recorded]):
            path = self.root / rel
            if not path.is_file():
                basis = "pinned" if rel in pinned else "recorded" if rel in recorded else "none"
                out.append(Finding(c.id, rel, "missing", basis))
                continue
            basis, want = ("pinned", pinned[rel]) if rel in pinned else ("recorded", recorded.get(rel))
            have = file_digests(path).sha256
            if want is None:
                new[rel] = have
                out.append(Finding(c.id, rel, "unverified", "none", "recorded now" if record else ""))
            else:
                out.append(Finding(c.id, rel, "ok" if have == want else "mismatch", basis,
                                   "" if have == want else f"sha256 {have}, expected {want}"))
        if record and new:
            self.store.record(c.id, rec["how"] if rec else "verify --record", rec["source"] if rec else
                              str(self.root / c.dest), {**recorded, **new}, rec.get("archive") if rec else None,
                              rec.get("verified") if rec else None)
        return out

    def status(self) -> tuple[list[ComponentStatus], list[TaskStatus], list[Path]]:
        """Components (presence, checksum provenance), registered tasks, and stale temporaries. No hashing."""
        comps = []
        for c in self.manifest.all_components():
            exists = (self.root / c.dest).exists()
            missing = tuple(p for p in c.paths() if not (self.root / p).is_file()) if exists else ()
            state = "absent" if not exists else "incomplete" if missing else "present"
            comps.append(ComponentStatus(c, state, missing, self._provenance(c)))
        return comps, task_status(self.root, self.tasks), stale_temporaries(self.root)

    def _provenance(self, c: Component) -> str:
        parts = ["pinned"] if c.has_pins else []
        rec = self.store.get(c.id)
        if rec:
            parts.append(f"recorded {rec['recorded_at'][:10]} ({rec['how']})")
        return ", ".join(parts) or "none"


_DERIVERS = {"senteval-sts": "senteval", "senteval-stsb": "senteval", "paraphrase-tsv": "paraphrases"}


def _staged(c: Component, item: Path, rel: str) -> Path:
    """Where the expected file ``rel`` (relative to the data root) is inside ``item``, a staged ``dest``."""
    return item / Path(rel).relative_to(c.dest) if c.files else item


def _is_archive(path: Path) -> bool:
    try:
        archive_format(path.name)
        return True
    except BenchError:
        return False


def task_status(root: Path, tasks: Sequence[TaskFiles]) -> list[TaskStatus]:
    """Per task: which splits have all their files, and whether its training corpus is there."""
    out = []
    for t in tasks:
        if t.error:
            out.append(TaskStatus(t.task, t.dataset, {}, None, None, t.error))
            continue
        missing = [f for fs in t.files.values() for f in fs if not (root / f).is_file()]
        ready = {s: all((root / f).is_file() for f in fs) for s, fs in t.files.items()}
        train = any((root / f).is_file() for f in t.train_files) if t.train_files else None
        out.append(TaskStatus(t.task, t.dataset, ready, missing[0] if missing else None, train))
    return out
