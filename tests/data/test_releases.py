"""Issue 38, item 2: a release's identity is pinned in the package (usebench/data/releases.json) or recorded by a
`bench data` download verified against a checksum the package pins; never taken from whatever a data root holds."""
from __future__ import annotations

import importlib.util
import json
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.data.download import file_digests
from usebench.data.manager import DataManager
from usebench.data.releases import evaluation_identity, load_releases, training_identity
from usebench.data.sources import STORE_NAME, ChecksumStore, load_manifest
from usebench.registry import TASKS
from usebench.plan.release_ids import record_release_identities

ASSETS = Path(__file__).resolve().parents[1] / "assets"
REPO = Path(__file__).resolve().parents[2]


def _pin_script():
    spec = importlib.util.spec_from_file_location("pin_releases", REPO / "scripts" / "pin_releases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_pinned_identities_are_the_real_release_files(real_data):
    """Every pinned identity, recomputed from the real files (shared/data): what a result on them records."""
    script = _pin_script()
    assert script.main([str(real_data), "--check"]) == 0
    pinned = load_releases().evaluation
    for task, splits in script.derived_sts(real_data).items():  # `bench data download sts`'s own derivation
        for split, ident in splits.items():
            entry = pinned[task][split]
            assert ident["sha256"] == entry["sha256"] or ident["sha256"] in {a["sha256"] for a in entry["also"]}


def test_every_pinned_entry_names_its_source_and_every_other_its_components():
    manifest_ids = set(load_manifest().component_ids())
    for task, splits in load_releases().evaluation.items():
        assert task in TASKS.names(), task
        for split, entry in splits.items():
            if entry["sha256"]:
                assert entry["source"] and set(entry["files"]) == set(TASKS.get(task).files(split)), (task, split)
            else:
                assert entry["components"] and set(entry["components"]) <= manifest_ids, (task, split)
    assert {t for t, s in load_releases().evaluation.items() if any(e["sha256"] for e in s.values())} == {
        "twitterpara", "sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr"}  # the files at hand


def _quora_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels/dev.tsv"):
            zf.writestr(f"quora/{name}", (ASSETS / "beir/tiny" / name).read_bytes())
    return path


def _manager(root: Path, archive: Path, pinned: bool) -> DataManager:
    """A data manager whose manifest pins ``archive``'s sha256 for BEIR's quora.zip (or pins nothing)."""
    manifest = load_manifest()
    sha = file_digests(archive).sha256 if pinned else None
    datasets = {n: tuple(replace(c, archive_md5=None, archive_sha256=sha if c.id == "quora" else c.archive_sha256)
                         for c in comps) for n, comps in manifest.datasets.items()}
    return DataManager(root, replace(manifest, datasets=datasets), urls={"quora": archive.as_uri()}, progress=False)


def test_a_download_verified_against_a_pinned_checksum_records_the_releases_identity(tmp_path):
    archive, root = _quora_zip(tmp_path / "quora.zip"), tmp_path / "root"
    assert evaluation_identity("quora", "test", root).sha256 is None  # nothing downloaded: not known
    assert [o.action for o in _manager(root, archive, pinned=True).download(["quora"])] == ["downloaded"]
    assert ChecksumStore(root).get("quora")["verified"] == "pinned"
    said = record_release_identities(root)
    assert any(line.startswith("release identity of quora/test recorded") for line in said)
    ident = evaluation_identity("quora", "test", root)
    assert ident.sha256 == TASKS.get("quora").data_sha256(root, "test") and "after verifying quora" in ident.how
    assert record_release_identities(root) == []  # recorded once


def test_a_first_use_download_proves_nothing_about_the_release(tmp_path):
    archive, root = _quora_zip(tmp_path / "quora.zip"), tmp_path / "root"
    _manager(root, archive, pinned=False).download(["quora"])
    assert ChecksumStore(root).get("quora")["verified"] == "first use"
    assert record_release_identities(root) == []
    ident = evaluation_identity("quora", "test", root)
    assert ident.sha256 is None and str(root / STORE_NAME) in ident.why
    # a record someone put there by hand is ignored too: its component was not verified against a pin
    store = ChecksumStore(root)
    store.record_identity("evaluation", "quora/test", TASKS.get("quora").data_sha256(root, "test"), ["quora"])
    assert evaluation_identity("quora", "test", root).sha256 is None
    assert "recorded on first use" in evaluation_identity("quora", "test", root).why


def test_a_file_edited_after_its_verification_is_not_recorded(tmp_path):
    archive, root = _quora_zip(tmp_path / "quora.zip"), tmp_path / "root"
    _manager(root, archive, pinned=True).download(["quora"])
    qrels = root / "beir/quora/qrels/test.tsv"
    qrels.write_text(qrels.read_text().rsplit("\n", 2)[0] + "\n")  # one line fewer
    said = record_release_identities(root)
    assert any("not recorded: beir/quora/qrels/test.tsv changed since quora was verified" in s for s in said)
    assert evaluation_identity("quora", "test", root).sha256 is None


def test_a_release_without_a_pinned_checksum_says_so_whatever_the_data_root_holds(tmp_path):
    """AskUbuntu's files are in the fixture root, but data-eval.zip has no checksum in sources.json: the report
    cannot know the release's identity, and says where it looked."""
    root = tmp_path / "root"
    (root / "useb").mkdir(parents=True)
    ident = evaluation_identity("askubuntu", "test", root)
    assert ident.sha256 is None and "sources.json pins no checksum of useb-eval" in ident.why
    assert str(root / STORE_NAME) in ident.why
    corpus = training_identity("askubuntu", root)
    assert corpus.sha256 is None and "useb-train" in corpus.why


def test_bench_data_download_records_the_identities(tmp_path, monkeypatch):
    """The command records them with the verification (usebench/cli/data.py)."""
    from click.testing import CliRunner

    from usebench.cli import data as data_cli
    from usebench.cli.main import main

    archive, root = _quora_zip(tmp_path / "quora.zip"), tmp_path / "root"
    monkeypatch.setattr(data_cli, "_manager", lambda data_root, mirror=None, progress=True: _manager(
        root, archive, pinned=True))
    res = CliRunner().invoke(main, ["data", "download", "quora", "--data-root", str(root)])
    assert res.exit_code == 0, res.output
    assert "release identity of quora/test recorded" in res.output
    stored = json.loads((root / STORE_NAME).read_text())["identities"]["evaluation"]
    assert set(stored) == {"quora/test", "quora/dev"}
