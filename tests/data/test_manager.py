"""`bench data download`, `verify` and `status`: file:// mirrors, trust-on-first-use, failure cleanliness (imports:
test_manager_import.py; the manifest: test_sources.py)."""
from __future__ import annotations

import importlib.util
import json
import shutil
import urllib.request
from dataclasses import replace

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.data.download import stale_temporaries
from usebench.data.manager import DataManager
from usebench.data.sources import STORE_NAME, Manifest
from tests.data.data_fakes import MANIFEST, build_mirror, looks_empty, manager, member_files, unpinned, write_archive


def test_download_all_places_every_component_and_records_checksums(tmp_path, mirror):
    dm = manager(tmp_path / "root", mirror)
    outcomes = dm.download(["all"])
    actions = {o.component: o.action for o in outcomes}
    assert set(actions) == set(MANIFEST.component_ids())
    if importlib.util.find_spec("pyarrow") is None:  # base install: DenoSent's parquet cannot be converted
        (failed,) = [o for o in outcomes if o.action == "failed"]
        assert failed.component == "denosent-pairs" and "pip install pyarrow" in failed.detail
        actions.pop("denosent-pairs")
    assert all(a in ("downloaded", "derived") for a in actions.values()), outcomes
    assert actions["sts12-senteval"] == "derived"
    root = tmp_path / "root"
    for c in MANIFEST.all_components():
        for rel in c.paths() if c.id in actions else ():
            assert (root / rel).is_file(), rel
    # the member is what lands at dest; other archive entries are not copied
    assert not list(root.rglob("unrelated-*"))
    assert (root / "useb/data-eval/README").is_file()
    comps, _, stale = dm.status()
    comps = [s for s in comps if s.component.id in actions]
    assert not stale and {s.state for s in comps} == {"present"}
    assert all("recorded" in s.checksums for s in comps)
    store = json.loads((root / STORE_NAME).read_text())
    rec = store["components"]["useb-eval"]
    assert rec["how"] == "download" and rec["source"].startswith("file://") and rec["archive"]["sha256"]
    assert "useb/data-eval/askubuntu/dev.txt" in rec["files"]



def test_senteval_form_is_derived_from_the_release(tmp_path, mirror):
    root = tmp_path / "root"
    manager(root, mirror).download(["sts"])
    # hand-tokenised (Moses rules as in the module docstring of usebench.data.senteval), lowercased
    sts16 = (root / "sts/senteval/STS16-en-test/STS.input.headlines.txt").read_text()
    assert sts16 == ("it ' s mr. smith ' s car .\tthe car ( a ford ) is red ...\n"
                     "no tab here\tno tab here\n")
    assert (root / "sts/senteval/STS16-en-test/STS.gs.headlines.txt").is_file()
    assert not list((root / "sts/senteval/STS16-en-test").glob("STS2016.*"))
    assert (root / "sts/original/STS16-en-test/STS2016.input.headlines.txt").read_text().startswith("It's Mr.")
    stsb = (root / "sts/senteval/STSBenchmark/sts-test.csv").read_text()
    assert stsb == "main-captions\tMSRvid\t2012test\t0001\t5.000\ta man plays a flute .\ta man ' s flute .\n"



def test_second_download_keeps_present_components_and_force_replaces(tmp_path, mirror):
    dm = manager(tmp_path / "root", mirror)
    dm.download(["quora"])
    marker = tmp_path / "root/beir/quora/corpus.jsonl"
    marker.write_text("edited\n")
    assert [o.action for o in dm.download(["quora"])] == ["present"]
    assert marker.read_text() == "edited\n"
    assert [o.action for o in dm.download(["quora"], force=True)] == ["downloaded"]
    assert marker.read_text() != "edited\n"
    assert not stale_temporaries(tmp_path / "root")



def test_pinned_md5_mismatch_fails_and_leaves_nothing(tmp_path, mirror):
    root = tmp_path / "root"
    (outcome,) = DataManager(root, MANIFEST, mirror=str(mirror), progress=False).download(["quora"])
    assert outcome.action == "failed"
    assert "md5" in outcome.detail and "18fb154900ba42a600f84b839c173167" in outcome.detail
    assert looks_empty(root)
    assert not (root / STORE_NAME).exists()



def test_pinned_file_sha256_mismatch_fails_and_leaves_nothing(tmp_path, mirror):
    base = unpinned(MANIFEST)
    quora = replace(base.component("quora"), files={**base.component("quora").files, "queries.jsonl": "ab" * 32})
    manifest = Manifest({**base.datasets, "quora": (quora,)}, base.descriptions)
    (outcome,) = manager(tmp_path / "root", mirror, manifest).download(["quora"])
    assert outcome.action == "failed" and "queries.jsonl" in outcome.detail and "pinned" in outcome.detail
    assert looks_empty(tmp_path / "root")



class _Broken:
    """A response that delivers one chunk, then fails like a dropped connection (or a Ctrl-C)."""

    def __init__(self, error: BaseException):
        self.headers = {"Content-Length": "1000000"}
        self._chunks, self._error = [b"x" * 1000], error

    def read(self, n: int) -> bytes:
        if self._chunks:
            return self._chunks.pop()
        raise self._error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False



@pytest.mark.parametrize("error", [ConnectionResetError("connection reset by peer"), KeyboardInterrupt()])
def test_interrupted_download_leaves_nothing_that_looks_complete(tmp_path, mirror, monkeypatch, error):
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: _Broken(error))
    dm = manager(tmp_path / "root", mirror)
    if isinstance(error, KeyboardInterrupt):
        with pytest.raises(KeyboardInterrupt):
            dm.download(["useb"])
    else:
        outcomes = dm.download(["useb"])
        assert {o.action for o in outcomes} == {"failed"}
        assert "connection reset" in outcomes[0].detail
    assert looks_empty(tmp_path / "root")
    assert not any(p.name != STORE_NAME for p in (tmp_path / "root").rglob("*") if p.is_file())



def test_short_download_is_an_error(tmp_path, mirror, monkeypatch):
    class Short(_Broken):
        def read(self, n):
            return self._chunks.pop() if self._chunks else b""

    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: Short(OSError()))
    (outcome, _) = manager(tmp_path / "root", mirror).download(["useb"])
    assert outcome.action == "failed" and "stopped after 1000 of 1000000 bytes" in outcome.detail
    assert looks_empty(tmp_path / "root")



def test_trust_on_first_use_refuses_a_changed_archive_unless_retrusted(tmp_path, mirror):
    root = tmp_path / "root"
    manager(root, mirror).download(["quora"])
    changed = build_mirror(tmp_path / "changed", MANIFEST, tag="v2")
    dm2 = manager(root, changed)
    (outcome,) = dm2.download(["quora"], force=True)
    assert outcome.action == "failed" and "--retrust" in outcome.detail and "recorded on" in outcome.detail
    assert "quora v1" not in (root / "beir/quora/corpus.jsonl").read_text()  # the old copy is untouched
    assert "v2" not in (root / "beir/quora/corpus.jsonl").read_text()
    (outcome,) = dm2.download(["quora"], force=True, retrust=True)
    assert outcome.action == "downloaded" and "v2" in (root / "beir/quora/corpus.jsonl").read_text()
    assert all(f.state == "ok" for f in dm2.verify(["quora"]))



def test_verify_reports_mismatch_and_missing_files(tmp_path, mirror):
    root = tmp_path / "root"
    dm = manager(root, mirror)
    dm.download(["useb", "quora"])
    assert {f.state for f in dm.verify(["useb", "quora"])} == {"ok"}
    (root / "useb/data-eval/twitterpara/test.label").write_text("tampered\n")
    (root / "beir/quora/qrels/test.tsv").unlink()
    bad = {f.path: f for f in dm.verify(["all"]) if f.state in ("mismatch", "missing")}
    assert bad["useb/data-eval/twitterpara/test.label"].state == "mismatch"
    assert bad["useb/data-eval/twitterpara/test.label"].basis == "recorded"
    assert bad["beir/quora/qrels/test.tsv"].state == "missing"
    assert len(bad) == 2
    result = CliRunner().invoke(main, ["data", "verify", "--data-root", str(root)])
    assert result.exit_code == 2 and "mismatch" in result.output and "verification failed" in result.output



def test_verify_record_is_trust_on_first_use_for_copied_data(tmp_path, mirror):
    root = tmp_path / "root"
    manager(root, mirror).download(["quora"])
    (root / STORE_NAME).unlink()  # e.g. a copied data root: files but no record
    dm = manager(root, mirror)
    assert {f.state for f in dm.verify(["quora"])} == {"unverified"}
    assert not (root / STORE_NAME).exists()  # verify alone writes nothing
    dm.verify(["quora"], record=True)
    assert {f.state for f in manager(root, mirror).verify(["quora"])} == {"ok"}
    (status,) = [s for s in dm.status()[0] if s.component.id == "quora"]
    assert "verify --record" in status.checksums



def test_zip_slip_archive_is_rejected_and_leaves_nothing(tmp_path, mirror):
    evil = tmp_path / "evil" / "data-eval.zip"
    good = {f"data-eval/{n}": d for n, d in member_files(MANIFEST.component("useb-eval")).items()}
    write_archive(evil, {**good, "data-eval/../../escaped.txt": b"gotcha\n"})
    (outcome,) = manager(tmp_path / "root", evil.parent).import_paths([evil])
    assert outcome.action == "failed" and "outside the extraction folder" in outcome.detail
    assert not list(tmp_path.rglob("escaped.txt"))
    assert looks_empty(tmp_path / "root")



def test_archive_without_its_member_is_an_error(tmp_path):
    write_archive(tmp_path / "m" / "quora.zip", {"other/corpus.jsonl": b"{}\n"})
    (outcome,) = manager(tmp_path / "root", tmp_path / "m").download(["quora"])
    assert outcome.action == "failed" and "expected 'quora' at the top of the archive, found: other" in outcome.detail
    assert looks_empty(tmp_path / "root")



def test_status_reports_tasks_from_the_registry(tmp_path, mirror):
    from usebench.tasks import task_files

    dm = DataManager(tmp_path / "root", unpinned(MANIFEST), mirror=str(mirror), progress=False, tasks=task_files())
    dm.download(["quora"])
    _, tasks, _ = dm.status()
    by_name = {t.task: t for t in tasks}
    assert by_name["quora"].splits == {"dev": True, "test": True} and by_name["quora"].train is True
    assert by_name["sts12"].splits == {"test": False} and by_name["sts12"].first_missing.startswith("sts/senteval/")



def test_cli_download_status_and_errors(tmp_path, mirror):
    root, runner = tmp_path / "root", CliRunner()
    result = runner.invoke(main, ["data", "download", "quora", "--data-root", str(root), "--mirror", str(mirror),
                                  "--no-progress"])
    assert result.exit_code == 2 and "md5" in result.output  # the fake cannot match the published checksum
    result = runner.invoke(main, ["data", "download", "useb", "--data-root", str(root), "--mirror", str(mirror)])
    assert result.exit_code == 0, result.output
    assert "downloaded  useb-eval" in result.output
    result = runner.invoke(main, ["data", "status", "--data-root", str(root)], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    line = next(ln for ln in result.output.splitlines() if "useb-eval" in ln)
    assert "present" in line and "recorded" in line and "(download)" in line
    result = runner.invoke(main, ["data", "download", "usb", "--data-root", str(root)])
    assert result.exit_code == 2 and "did you mean 'useb'" in result.output



def test_url_override_per_component(tmp_path, mirror):
    """`urls` redirects one component to any URL; the archive keeps the manifest's file name (and format)."""
    odd = tmp_path / "served" / "download"
    odd.parent.mkdir()
    shutil.copy(mirror / "Stsbenchmark.tar.gz", odd)
    assert DataManager(tmp_path, MANIFEST).url_for(MANIFEST.component("stsb")) == MANIFEST.component("stsb").url
    dm = DataManager(tmp_path / "root", unpinned(MANIFEST), mirror=str(mirror), urls={"stsb": odd.as_uri()},
                     progress=False)
    assert dm.url_for(MANIFEST.component("stsb")) == odd.as_uri()
    assert dm.url_for(MANIFEST.component("sts12")) == (mirror / "STS2012-en-test.zip").as_uri()
    got = {o.component: o for o in dm.download(["stsb"])}  # a task name: its dataset, sts
    assert got["stsb"].action == "downloaded" and got["stsb"].detail == odd.as_uri()
    assert (tmp_path / "root/sts/original/stsbenchmark/sts-test.csv").is_file()



def test_single_file_components_plain_and_gzip(tmp_path, mirror):
    """AllNLI.tsv.gz is unpacked to nli/AllNLI.tsv; the Twitter URL files are fetched as they are and checked
    against their pinned sha256 (a changed file fails and leaves nothing)."""
    root = tmp_path / "root"
    got = {o.component: o.action for o in manager(root, mirror).download(["nli", "twitter-url"])}
    assert got == {"allnli": "downloaded", "twitter-url-a": "downloaded", "twitter-url-b": "downloaded",
                   "twitter-url-sim": "downloaded"}
    assert (root / "nli/AllNLI.tsv").read_bytes() == b"allnli  \n"
    assert (root / "useb/extra/twitter_url_train_tok/sim.txt").read_bytes() == b"twitter-url-sim  \n"
    pinned = DataManager(tmp_path / "other", MANIFEST, mirror=str(mirror), progress=False)
    out = pinned.download(["twitter-url"])
    assert {o.action for o in out} == {"failed"} and "sha256" in out[0].detail
    assert looks_empty(tmp_path / "other")



def test_imported_and_downloaded_data_honour_the_umask(tmp_path, mirror):
    """A shared data root (umask 002): files copied from a private (0600) folder become group-readable."""
    import os

    dm = manager(tmp_path / "root", mirror)
    old = os.umask(0o002)
    try:
        dm.download(["sts12"])
        for p in (tmp_path / "root").rglob("*"):
            if p.is_file():
                p.chmod(0o600)  # as an archive or a private copy might leave them
        dm_b = manager(tmp_path / "root-b", mirror)
        dm_b.import_paths([tmp_path / "root"])
    finally:
        os.umask(old)
    placed = [p for p in (tmp_path / "root-b" / "sts").rglob("*") if p.is_file()]
    assert placed and {oct(p.stat().st_mode & 0o777) for p in placed} == {"0o664"}
    assert oct((tmp_path / "root-b" / STORE_NAME).stat().st_mode & 0o777) == "0o664"

