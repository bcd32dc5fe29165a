"""Published rows carry the settings they assume, and a run is compared only with rows whose settings it meets.

Paper lines: ../shared/papers/002_* (PaSeR): Table 4 at 248-256, Table 5 at 268-278, Table 8 at 368-376, Table 9
at 394-399; 001_* (DenoSent) Table 1 at 128-150.
"""
from __future__ import annotations

import dataclasses

import pytest

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.registry import METHODS
from usebench.report.make import ReportOptions, build_sections
from usebench.report.reference import entries, load_reference
from usebench.store import iter_results
from tests.report.genuine import add_trained, corpus_entry, data_root, pin_releases, stage_config

SCHEMA = {"preset", "model", "train_data", "config", "precision"}
AMP = {"off": "fp32", "fp16": "fp16"}
STS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")


@pytest.fixture(autouse=True)
def releases(tmp_path, monkeypatch):
    """tmp_path/data's DenoSent pairs stand for the authors' release (the package pins the real ones' identity)."""
    pin_releases(monkeypatch, data_root(tmp_path / "data"))


def all_rows():
    return [(tid, e) for tid in load_reference()["tables"] for e in entries(tid)]


def test_every_published_row_records_its_settings():
    for tid, e in all_rows():
        assert e.settings is not None and SCHEMA <= set(e.settings), (tid, e.label)


@pytest.mark.parametrize("tid, label", [(t, e.label) for t, e in all_rows()
                                        if e.match and e.match.get("method") in METHODS])
def test_settings_name_real_presets_config_fields_and_the_presets_precision(tid, label):
    """Each setting a trained row names exists (preset, config field), and the precision it records is the one
    that preset trains in (so the published row and our preset agree)."""
    e = next(x for x in entries(tid) if x.label == label)
    method = METHODS.get(e.match["method"])
    presets = [e.settings["preset"]] if isinstance(e.settings["preset"], str) else e.settings["preset"]
    fields = {f.name for f in dataclasses.fields(method.Config)}
    assert presets and all(p in method.presets for p in presets), (tid, label, presets)
    assert set(e.settings["config"]) <= fields, (tid, label)
    for p in presets:  # a source that states no precision (the thesis) records none, and none is checked
        assert e.settings["precision"] is None or AMP[method.config(p).amp] == e.settings["precision"], (tid, label, p)


def test_paser_ablation_tables_are_typed_in():
    t4, t5, t8, t9 = (entries(f"paser-table{n}") for n in (4, 5, 8, 9))
    assert [e.values["sts12_16.avg"] for e in t4] == [31.4, 73.8, 74.2, 74.2, 77.7, 77.2, 77.3]  # 002:250-256
    assert next(e for e in t4 if e.label == "+ SR + RS").values == {"sts12_16.avg": 77.3, "stsb": 77.6, "sickr": 63.1}
    top = {e.settings["config"]["top_k"]: e.values for e in t5 if e.match and e.match["method"] == "paser"}
    assert top[3] == {"sts12_16.avg": 77.8, "stsb": 79.4, "sickr": 64.4}  # 002:276
    assert top[5] == {"sts12_16.avg": 77.7, "stsb": 79.3, "sickr": 65.4}  # the ablations' default row
    m10n10 = next(e for e in t8 if e.label == "m = 10, n = 10")
    assert m10n10.values == top[5] and m10n10.settings["config"]["signal"] == "eq2"  # 002:376
    assert {e.match["pooling"]: e.values["sickr"] for e in t9} == {"mean": 65.7, "last2avg": 66.1,
                                                                   "first_last_avg": 65.8, "cls": 65.4}


def _sts_run(root, method, seed, *, preset, config, corpus, data, value=0.7):
    """A run of ``method``'s ``preset`` with ``config`` applied, on ``corpus``, as `bench run` records it."""
    cfg = stage_config(method, preset, **config)
    for task in STS:
        add_trained(root, method, seed, task, {"spearman": value}, config=cfg, corpus=corpus, preset=preset,
                    pooling="mask_token" if method == "denosent" else "cls")


def _report(store, data, tables, **kw):
    return build_sections(list(iter_results(store)), ReportOptions(results_dir=store, tables=tables, data_root=data,
                                                                   **kw))


def test_a_denosent_run_without_paraphrases_is_not_compared_with_the_paraphrase_result(tmp_path):
    data = data_root(tmp_path / "data")
    wiki = tmp_path / "wiki1m.txt"
    wiki.write_text("a cat sat .\nit rains .\n")
    _sts_run(tmp_path / "r", "denosent", 0, preset="paper-no-bt", corpus=corpus_entry(data, file=wiki), data=data,
             config={"contrastive_weight": 1.0, "generative_weight": 1.0})
    (section,) = _report(tmp_path / "r", data, ("sts-table",))
    assert section.comparison.rows == ()  # before: compared with 79.33 although it trained without paraphrases
    (note,) = [n for n in section.comparison.notes if n.startswith("No published neighbour for DenoSent")]
    assert "DenoSent Table 1 DenoSent-BERTbase" in note and " differs in " in note
    note = " ".join(g for _, missed in section.comparison.unpaired for _, gaps in missed for g in gaps)
    assert "paraphrases: ours false, paper true" in note
    assert "(file:wiki1m.txt, 2 sentences), paper " in note and "denosent/denosent-pairs" in note


def test_the_paper_denosent_run_meets_its_row_and_ablations_meet_theirs(tmp_path):
    data = data_root(tmp_path / "data")
    pairs = corpus_entry(data, file=data / "denosent/paraphrases.tsv")  # the authors' release, as downloaded
    weights = {"paper": (1.0, 1.0), "contrastive-only": (1.0, 0.0), "generative-only": (0.0, 1.0)}
    for i, (c, g) in enumerate(weights.values()):
        _sts_run(tmp_path / str(i), "denosent", 0, preset="paper", corpus=pairs, data=data,
                 config={"paraphrases": True, "contrastive_weight": c, "generative_weight": g})
    got = []
    for i in range(3):
        (section,) = _report(tmp_path / str(i), data, ("sts-table",))
        got.append([e.label for _, e in section.comparison.rows])
    assert got == [["DenoSent-BERTbase"], ["DenoSent-BERTbase (contrastive only)"],
                   ["DenoSent-BERTbase (generative only)"]]


def test_paser_runs_meet_the_ablation_row_of_their_own_setting(tmp_path):
    """PaSeR trains on the STS sets' unlabeled sentences as ConSERT collected them, which were never published as a
    file: a run pairs only on the user's word that its corpus is a sample of them."""
    data = data_root(tmp_path / "data")
    sts = {"label": "file:sts-sentences.txt", "sha256": "e" * 64, "sentences": 100}
    t5 = {e.label: e for e in entries("paser-table5")}["RAKE (top3)"].settings["config"]
    t1 = next(e for e in entries("paser-table1") if e.match and e.match["method"] == "paser").settings["config"]
    _sts_run(tmp_path / "a", "paser", 0, preset="paper-eq2", corpus=sts, data=data, config=t5)
    _sts_run(tmp_path / "b", "paser", 0, preset="paper", corpus=sts, data=data, config=t1)
    labels = {}
    for run in ("a", "b"):
        sections = _report(tmp_path / run, data, ("paser-table5", "sts-table"),
                           user_samples=(("consert-sts-sentences", "e" * 64),))
        labels[run] = [f"{e.source} {e.label}" for s in sections for _, e in s.comparison.rows]
    assert labels["a"] == ["PaSeR Table 5 RAKE (top3)"]  # not Table 1's number: a different setting
    # the code's signal: Table 1's run (first found in DenoSent Table 1, which reprints PaSeR's), no ablation row
    assert labels["b"] == ["DenoSent Table 1 PaSeR-BERTbase"]
    (alone,) = _report(tmp_path / "b", data, ("sts-table",))
    assert alone.comparison.rows == ()  # without the user's word: the corpus is no release
