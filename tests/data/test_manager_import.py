"""`bench data import`: archives, folders and whole data roots placed offline, incomplete folders, the derived
forms recomputed, the real data root."""
from __future__ import annotations

import json
import shutil

import pytest

from usebench.data.manager import DataManager
from usebench.data.sources import STORE_NAME
from usebench.errors import BenchError
from tests.data.data_fakes import MANIFEST, build_mirror, looks_empty, manager


def test_import_archives_and_a_data_root(tmp_path, mirror):
    dm = manager(tmp_path / "a", mirror)
    outcomes = dm.import_paths([mirror / "data-eval.zip", mirror / "STS2013-en-test.zip"])
    assert {o.component: o.action for o in outcomes} == {"useb-eval": "imported", "sts13": "imported",
                                                         "sts13-senteval": "derived"}
    assert (tmp_path / "a/useb/data-eval/askubuntu/dev.txt").is_file()
    assert json.loads((tmp_path / "a" / STORE_NAME).read_text())["components"]["useb-eval"]["how"] == "import"
    # a whole data root: every component found in it is imported as it is (no re-derivation)
    (tmp_path / "a/sts/senteval/STS13-en-test/STS.gs.FNWN.txt").write_text("4.0\n")
    dm_b = manager(tmp_path / "b", mirror)
    got = {o.component: o.action for o in dm_b.import_paths([tmp_path / "a"])}
    assert got == {"useb-eval": "imported", "sts13": "imported", "sts13-senteval": "imported"}
    assert (tmp_path / "b/sts/senteval/STS13-en-test/STS.gs.FNWN.txt").read_text() == "4.0\n"
    assert [o.action for o in dm_b.import_paths([tmp_path / "a"])] == ["present"] * 3


def test_import_folder_by_name_or_with_as(tmp_path, mirror):
    src = tmp_path / "unpacked"
    shutil.unpack_archive(mirror / "quora.zip", src)
    dm = manager(tmp_path / "root", mirror)
    assert [o.action for o in dm.import_paths([src / "quora"])] == ["imported"]
    sts = tmp_path / "mine" / "STS12-en-test"
    shutil.unpack_archive(mirror / "STS2012-en-test.zip", tmp_path / "x")
    shutil.copytree(tmp_path / "x/test-gold", sts)
    assert [o.component for o in manager(tmp_path / "r2", mirror).import_paths([tmp_path / "x"])] == [
        "sts12", "sts12-senteval"]  # a folder an archive was unpacked in: found by the archive's member
    with pytest.raises(BenchError, match="sts12, sts12-senteval.*--as"):
        dm.import_paths([sts])  # original release or SentEval form: the name cannot tell
    got = {o.component: o.action for o in dm.import_paths([sts], as_id="sts12")}
    assert got == {"sts12": "imported", "sts12-senteval": "derived"}
    single = tmp_path / "SICK_trial.txt"
    single.write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n")
    assert [o.action for o in dm.import_paths([single])] == ["imported"]
    (tmp_path / "x/test-gold").rename(tmp_path / "x/renamed")
    with pytest.raises(BenchError, match="matches no component"):
        dm.import_paths([tmp_path / "x"])


def test_import_incomplete_folder_needs_allow_incomplete(tmp_path, mirror):
    src = tmp_path / "data-eval"
    shutil.unpack_archive(mirror / "data-eval.zip", tmp_path / "u")
    shutil.copytree(tmp_path / "u/data-eval", src)
    (src / "scidocs/data.json").unlink()
    dm = manager(tmp_path / "root", mirror)
    (outcome,) = dm.import_paths([src])
    assert outcome.action == "failed" and "scidocs/data.json" in outcome.detail
    assert looks_empty(tmp_path / "root")
    (outcome,) = dm.import_paths([src], allow_incomplete=True)
    assert outcome.action == "imported"
    (status,) = [s for s in dm.status()[0] if s.component.id == "useb-eval"]
    assert status.state == "incomplete" and status.missing == ("useb/data-eval/scidocs/data.json",)
    got = {o.component: o for o in dm.download(["useb"])}  # download completes it from the canonical archive
    assert got["useb-eval"].action == "downloaded" and "replaced an incomplete copy" in got["useb-eval"].detail
    assert (tmp_path / "root/useb/data-eval/scidocs/data.json").is_file()


@pytest.mark.slow
def test_import_the_real_data_root(real_data, tmp_path):
    """The shared copy of the real files has the manifest's layout: import it, verify it, tasks see it."""
    from usebench.tasks import task_files

    root = tmp_path / "root"
    dm = DataManager(root, MANIFEST, progress=False, tasks=task_files())
    got = {o.component: o.action for o in dm.import_paths([real_data], allow_incomplete=True)}
    sts_ids = [c.id for c in MANIFEST.datasets["sts"]]
    assert all(got[i] == "imported" for i in sts_ids), got
    assert got["useb-eval"] == "imported"  # partial: no AskUbuntu corpus, CQADupStack or SciDocs here
    # the Twitter URL training pairs match the sha256 pinned for that commit's files
    assert all(got[f"twitter-url-{n}"] == "imported" for n in ("a", "b", "sim")), got
    findings = dm.verify(["sts", "useb"])
    assert {f.state for f in findings if f.component in sts_ids} == {"ok"}
    assert (root / "sts/senteval/STS12-en-test/STS.input.MSRpar.txt").read_bytes() == (
        real_data / "sts/senteval/STS12-en-test/STS.input.MSRpar.txt").read_bytes()  # imported as is
    tasks = {t.task: t for t in dm.status()[1]}
    for name in ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr", "twitterpara"):
        assert all(tasks[name].splits.values()), tasks[name]
    assert not tasks["askubuntu"].splits["test"]
    # on the (read-only) shared copy itself: nothing pinned or recorded, and verify writes nothing
    assert {f.state for f in DataManager(real_data, MANIFEST).verify(["sts"])} == {"unverified"}
    assert not (real_data / STORE_NAME).exists()


def test_forced_import_of_a_release_recomputes_its_senteval_form(tmp_path, mirror):
    dm = manager(tmp_path / "root", mirror)
    dm.import_paths([mirror / "STS2013-en-test.zip"])
    changed = build_mirror(tmp_path / "changed", MANIFEST, tag="v2")
    src = tmp_path / "rel"
    shutil.unpack_archive(changed / "STS2013-en-test.zip", src)
    (src / "test-gs/STS.input.FNWN.txt").write_text("Brand new sentence.\tAnother one.\n")
    (refused,) = dm.import_paths([src / "test-gs"], as_id="sts13", force=True)  # differs from the recorded copy
    assert refused.action == "failed" and "--retrust" in refused.detail
    got = {o.component: o.action for o in dm.import_paths([src / "test-gs"], as_id="sts13", force=True,
                                                          retrust=True)}
    assert got == {"sts13": "imported", "sts13-senteval": "derived"}
    assert (tmp_path / "root/sts/senteval/STS13-en-test/STS.input.FNWN.txt").read_text() == (
        "brand new sentence .\tanother one .\n")


def test_import_allnli_as_downloaded_or_unpacked(tmp_path):
    """`bench data import AllNLI.tsv.gz` (the file sentence-transformers serves) or the unpacked AllNLI.tsv."""
    import gzip

    text = b"split\tdataset\tfilename\tsentence1\tsentence2\tlabel\ntrain\tSNLI\tf\ta\tb\tentailment\n"
    (tmp_path / "dl").mkdir()
    (tmp_path / "dl" / "AllNLI.tsv.gz").write_bytes(gzip.compress(text))
    dm = DataManager(tmp_path / "root", MANIFEST, progress=False)
    assert [o.action for o in dm.import_paths([tmp_path / "dl" / "AllNLI.tsv.gz"])] == ["imported"]
    assert (tmp_path / "root" / "nli" / "AllNLI.tsv").read_bytes() == text
    (tmp_path / "dl" / "AllNLI.tsv").write_bytes(text)
    other = DataManager(tmp_path / "root2", MANIFEST, progress=False)
    assert [o.action for o in other.import_paths([tmp_path / "dl" / "AllNLI.tsv"])] == ["imported"]
    assert (tmp_path / "root2" / "nli" / "AllNLI.tsv").read_bytes() == text

