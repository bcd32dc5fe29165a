"""DenoSent's paraphrase data: `bench data download denosent` (the authors' released pairs, checksum recorded on
first download and checked after), `bench data import` of a local copy, the `sentence<TAB>paraphrase` layout."""
from __future__ import annotations

import importlib.util
import json

import pytest

from usebench.data import paraphrases
from usebench.data.manager import DataManager
from usebench.data.sources import STORE_NAME, load_manifest
from usebench.errors import BenchError, DataFormatError
from tests.data.data_fakes import fake_parquet

MANIFEST = load_manifest()
needs_pyarrow = pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="needs pyarrow")
ROWS = [("A man is playing a flute.", "A man plays the flute."), ("Two\tdogs run.", "Dogs are\nrunning."),
        ("", "an empty sentence is dropped")]


def test_manifest_names_the_authors_release():
    data, pairs = MANIFEST.datasets["denosent"]
    assert "Singhoo/denosent_data" in data.url and data.url.endswith("/train/0.parquet") and data.plain
    assert pairs.dest == "denosent/paraphrases.tsv" and pairs.derive == {
        "from": "denosent-data", "kind": "paraphrase-tsv", "columns": ["sent0", "sent1"]}


@needs_pyarrow
def test_download_from_a_url_places_the_release_and_derives_the_corpus(tmp_path):
    src = tmp_path / "mirror" / "0.parquet"
    src.parent.mkdir()
    src.write_bytes(fake_parquet(ROWS))
    root = tmp_path / "root"
    dm = DataManager(root, MANIFEST, urls={"denosent-data": src.as_uri()}, progress=False)
    outcomes = {o.component: o for o in dm.download(["denosent"])}
    assert outcomes["denosent-data"].action == "downloaded"
    assert outcomes["denosent-pairs"].action == "derived" and "2 pairs" in outcomes["denosent-pairs"].detail
    lines = (root / "denosent/paraphrases.tsv").read_text(encoding="utf-8").splitlines()
    assert lines == ["A man is playing a flute.\tA man plays the flute.", "Two dogs run.\tDogs are running."]
    assert paraphrases.check_tsv(root / "denosent/paraphrases.tsv") == 2
    rec = json.loads((root / STORE_NAME).read_text())["components"]["denosent-data"]
    assert rec["how"] == "download" and rec["archive"]["sha256"]  # recorded: trust on first use
    # the release changes upstream: a forced re-download is refused until --retrust
    src.write_bytes(fake_parquet(ROWS[:1]))
    (outcome, _) = dm.download(["denosent"], force=True)
    assert outcome.action == "failed" and "--retrust" in outcome.detail
    assert dm.download(["denosent"], force=True, retrust=True)[0].action == "downloaded"


@needs_pyarrow
def test_import_of_a_local_parquet_copy(tmp_path):
    copy = tmp_path / "denosent_data.parquet"
    copy.write_bytes(fake_parquet(ROWS[:1]))
    root = tmp_path / "root"
    outcomes = {o.component: o.action for o in
                DataManager(root, MANIFEST, progress=False).import_paths([copy], as_id="denosent-data")}
    assert outcomes == {"denosent-data": "imported", "denosent-pairs": "derived"}
    assert (root / "denosent/paraphrases.tsv").read_text() == "A man is playing a flute.\tA man plays the flute.\n"


def test_import_of_a_tsv_copy_checks_the_layout(tmp_path):
    good, bad = tmp_path / "good.tsv", tmp_path / "bad.tsv"
    good.write_text("a sentence\tits paraphrase\nanother\tone more\n", encoding="utf-8")
    bad.write_text("a sentence\tits paraphrase\nno tab on this line\n", encoding="utf-8")
    root = tmp_path / "root"
    dm = DataManager(root, MANIFEST, progress=False)
    (outcome,) = dm.import_paths([bad], as_id="denosent-pairs")
    assert outcome.action == "failed" and "bad.tsv:2: expected 'sentence<TAB>paraphrase'" in outcome.detail
    assert not (root / "denosent").exists()
    (outcome,) = dm.import_paths([good], as_id="denosent-pairs")
    assert outcome.action == "imported" and paraphrases.check_tsv(root / "denosent/paraphrases.tsv") == 2


def test_without_pyarrow_the_message_says_what_to_install(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "pyarrow" else real(n, *a))
    with pytest.raises(BenchError, match="needs pyarrow: pip install pyarrow"):
        paraphrases.write_tsv(tmp_path / "x.parquet", tmp_path / "out.tsv", ["sent0", "sent1"])


@needs_pyarrow
def test_not_parquet_or_missing_columns_is_a_format_error(tmp_path):
    wrong = tmp_path / "wrong.parquet"
    wrong.write_bytes(fake_parquet(ROWS, columns=("text", "other")))
    with pytest.raises(DataFormatError, match="columns sent0, sent1"):
        paraphrases.write_tsv(wrong, tmp_path / "out.tsv", ["sent0", "sent1"])
