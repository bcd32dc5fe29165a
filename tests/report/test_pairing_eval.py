"""Issue 38: a Δ to the paper only for the paper's evaluation data. The evaluation side of a setting is decided by
content, like the training side (tests/report/test_pairing_by_content.py): the release's identity as the package pins
it (never the data root's files), the split, the tokenizer, every key of an untrained row, the dev data that picked
a checkpoint, and the seed count said beside each Δ.

Sources of the published settings changed here (item 9): ../shared/papers/000_469bd9b6678f63f1.txt line 400 (App. B,
"The pooling method for CT and BERT-flow is both mean pooling") and line 196 (footnote 5, "we only consider the
pooling over the last layer"); 002_fcbe7f2a80beb031.txt line 182 (Table 1's PaSeR row), lines 274 and 278 (Table 5's
RAKE top1 and top5 rows).
"""
from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from usebench.registry import METHODS, TASKS
from usebench.report.make import ReportOptions, build_sections, make_report
from usebench.report.pair_notes import GAP_CHARS, SHOWN_GAPS
from usebench.report.pairing import PairingContext, compare_record, expected_stages, published_backbones
from usebench.report.reference import entries, load_reference
from usebench.store import iter_results
from tests.conftest import ASSETS
from tests.report.genuine import (BERT, UNTRAINED_SCORING, add_trained, corpus_entry, data_root, pin_releases,
                                  stage_config)
from tests.report.synthetic_results import add_result, task_version
from tests.report.test_pairing_by_content import _context, _genuine, _pairable_rows


def _changed_tokenizer():
    return {**BERT, "tokenizer": {**BERT["tokenizer"], "sha256": "0" * 64, "model_max_length": 8}}


def _untrained_record(task="stsb", pooling="mean", **changes):
    """`bench eval --model bert-base-uncased --pooling P` as the papers scored it (whole length, fp32, cosine)."""
    method = {"name": "base", "base_model": "bert-base-uncased", "pooling": pooling, "backbone": BERT,
              **UNTRAINED_SCORING["method"]}
    record = {"task": {"name": task, "split": "test", "data_sha256": f"sha-{task}", "n_queries": 10,
                       "version": task_version(task)},
              "method": method, "config": {**UNTRAINED_SCORING["config"]},
              "scorer": {**UNTRAINED_SCORING["scorer"], "pooling": pooling}, "seed": 0}
    for where, key, value in changes.get("set", ()):
        record[where][key] = value
    return record


def _untrained_rows():
    """Published untrained rows of a backbone whose fingerprint is recorded (bert-base-uncased)."""
    return [(tid, e) for tid in load_reference()["tables"] for e in entries(tid)
            if e.match and e.match["method"] == "base" and e.settings and not e.settings.get("preset")
            and e.settings.get("model") in published_backbones() and published_backbones()[e.settings["model"]]["config"]]


# --- the property test, evaluation side ----------------------------------------------------------------------------

def _one_line_changed(tmp_path, task):
    """(release sha256, sha256 after one line of its first file changed) of ``task``'s test files in the fixtures."""
    root = shutil.copytree(ASSETS, tmp_path / f"eval-{task}", dirs_exist_ok=True)
    adapter = TASKS.get(task)
    before = adapter.data_sha256(root, "test")
    first = root / adapter.files("test")[0]
    lines = first.read_text(encoding="utf-8").split("\n")
    lines[0] = lines[0] + " changed"
    first.write_text("\n".join(lines), encoding="utf-8")
    return before, adapter.data_sha256(root, "test")


def _pin_eval(monkeypatch, task, sha):
    from usebench.data import releases

    pinned = releases.load_releases()
    evaluation = {**pinned.evaluation, task: {**pinned.evaluation.get(task, {}), "test": {"sha256": sha}}}
    monkeypatch.setattr(releases, "load_releases", lambda path=None: releases.Releases(evaluation, pinned.training))


def test_every_pairable_row_unpairs_on_other_evaluation_data_split_tokenizer_dev_data_or_scoring(tmp_path, monkeypatch):
    """For every pairable published row: its own setting pairs; evaluation data one line off, another split, another
    tokenizer, other checkpoint-selection data, and for an untrained row any scoring key, each unpair it, naming what
    differs. (The seed count labels the pair instead: test_the_seed_count_is_said_beside_every_delta.)"""
    root = data_root(tmp_path / "data")
    pin_releases(monkeypatch, root)
    shas = {task: _one_line_changed(tmp_path, task) for task in ("askubuntu", "stsb")}
    for task, (release, _) in shas.items():
        _pin_eval(monkeypatch, task, release)
    checked = 0
    for tid, e in _pairable_rows():
        presets = e.settings["preset"]
        record = _genuine(e, root, presets if isinstance(presets, str) else presets[0])
        record["task"]["data_sha256"] = shas[record["task"]["name"]][0]
        ctx = _context(root, e)
        assert compare_record(record, e.settings, e.match["method"], ctx).paired, (tid, e.label)
        variants = {"evaluation data:": ("task", "data_sha256", shas[record["task"]["name"]][1]),
                    "split:": ("task", "split", "dev"), "tokenizer:": ("method", "backbone", _changed_tokenizer())}
        if record["method"]["dev_data"][0]:
            variants["checkpoint selection:"] = ("method", "dev_data", [{"stsb": ["0" * 64]}])
        for gap, (where, key, value) in variants.items():
            bad = json.loads(json.dumps(record))
            bad[where][key] = value
            verdict = compare_record(bad, e.settings, e.match["method"], ctx)
            assert not verdict.paired and any(g.startswith(gap) for g in verdict.gaps), (tid, e.label, gap)
            checked += 1
    assert checked >= 4 * 30


@pytest.mark.parametrize("tid, label", [(t, e.label) for t, e in _untrained_rows()])
def test_every_key_of_an_untrained_row_is_part_of_its_setting(tid, label):
    """Item 4: before, an untrained row compared the backbone only: max_length 16 in bf16 with another pooling
    paired with Table 2's BERT-base-uncased."""
    e = next(x for x in entries(tid) if x.label == label)
    task = "askubuntu" if "askubuntu" in e.values else next(iter(e.values)).split(".")[0]
    task = task if task in TASKS.names() else "stsb"
    pooling = e.settings["pooling"]
    ctx = PairingContext()
    assert compare_record(_untrained_record(task, pooling), e.settings, "base", ctx).paired, (tid, label)
    other = "cls" if pooling != "cls" else "mean"
    for key, where, value in (("max_length", "method", 16), ("precision", "config", "bf16"),
                              ("pooling", "method", other), ("similarity", "scorer", "dot"),
                              ("prompt", "scorer", "query: ")):
        verdict = compare_record(_untrained_record(task, pooling, set=((where, key, value),)), e.settings, "base", ctx)
        assert not verdict.paired and any(g.startswith(f"{key}: ours") for g in verdict.gaps), (tid, label, key)


# --- items 1 and 2: the release is pinned, not the data root's files -------------------------------------------------

def test_fixture_evaluation_data_never_pairs(tmp_path, real_releases):
    """Item 1: a TwitterPara result on the fixtures (7 + 6 pairs) records their sha256 and its release basis; both
    differ from the release, whatever else is the paper's."""
    adapter = TASKS.get("twitterpara")
    record = {"task": {"name": "twitterpara", "split": "test", "data_sha256": adapter.data_sha256(ASSETS, "test"),
                       "n_queries": 13, "release": {"basis": "usebench-counts.json (usebench test fixtures: a few "
                                                                       "lines of each release, not a release)"}},
              "method": {"name": "base", "pooling": "mean", "backbone": BERT, **UNTRAINED_SCORING["method"]},
              "config": UNTRAINED_SCORING["config"], "scorer": UNTRAINED_SCORING["scorer"], "seed": 0}
    row = next(e for e in entries("tsdae-table2") if e.label == "BERT-base-uncased")
    verdict = compare_record(record, row.settings, "base", PairingContext(ASSETS))
    (gap,) = verdict.gaps
    assert gap.startswith("evaluation data: ours ") and "usebench test fixtures" in gap and "13 items" in gap
    assert "as released 4c7b4d04ba64… (pinned in usebench/data/releases.json)" in gap
    real = {**record, "task": {"name": "twitterpara", "split": "test", "data_sha256": _release("twitterpara"),
                               "n_queries": 10_178, "release": {"basis": "published"}}}
    assert compare_record(real, row.settings, "base", PairingContext(ASSETS)).paired  # the real files pair


def _release(task, split="test"):
    from usebench.data.releases import load_releases

    return load_releases().evaluation[task][split]["sha256"]


def test_the_report_never_takes_the_data_roots_files_for_the_release(tmp_path, real_releases):
    """Item 2: before, the in-domain corpus a published row trained on was hashed from whatever the data root held,
    so a 3-sentence train.txt was "the release". Now the identity is the package's (data-train.zip's is not pinned:
    no checksum of it is published), and the note says where it looked: the data root given, not the user cache."""
    root, store = data_root(tmp_path / "data"), tmp_path / "results"
    add_trained(store, "tsdae", 0, "askubuntu", {"map": 0.6}, config=stage_config("tsdae"),
                corpus=corpus_entry(root, "askubuntu"))
    (section,) = build_sections(list(iter_results(store)), ReportOptions(results_dir=store, tables=("paper-table2",),
                                                                           data_root=root))
    assert section.comparison.rows == ()
    (label, missed), = section.comparison.unpaired
    gaps = dict(missed)["TSDAE Table 2 TSDAE"]
    data = next(g for g in gaps if g.startswith("training data:"))
    assert "whose sha256 is not known here" in data and "useb-train" in data
    assert str(root / ".usebench-checksums.json") in data and ".cache" not in data


def test_bench_report_has_data_root_and_defaults_it_like_bench_run(tmp_path, monkeypatch):
    from usebench.cli.main import main

    store = tmp_path / "results"
    add_result(store, "base", 0, "stsb", {"spearman": 0.5})
    seen = {}
    import usebench.report.make as make

    real = make.make_report
    monkeypatch.setattr(make, "make_report", lambda opts: seen.setdefault("opts", opts) and real(opts))
    for args, want in ((["--data-root", str(tmp_path / "d")], tmp_path / "d"), ([], tmp_path / "env")):
        monkeypatch.setenv("BENCH_DATA", str(tmp_path / "env"))
        seen.clear()
        res = CliRunner().invoke(main, ["report", "--results-dir", str(store), "--out", str(tmp_path / "o"),
                                        "--table", "sts-table", "--format", "md", "--no-plots", *args])
        assert res.exit_code == 0, res.output
        assert seen["opts"].data_root == want


# --- item 3: the split ------------------------------------------------------------------------------------------------

def test_a_dev_result_is_never_beside_the_papers_test_numbers(tmp_path):
    """Before: `bench report --split dev` printed a Δ between a dev result and the paper's test numbers."""
    store = tmp_path / "results"
    for split in ("test", "dev"):
        sha = "sha-stsb" if split == "test" else "sha-stsb-dev"
        rec = _untrained_record("stsb", "cls")
        add_result(store, "base", 0, "stsb", {"spearman": 0.2}, split=split, sha=sha, pooling="cls",
                   scorer=rec["scorer"], config=rec["config"], method_extra=rec["method"])
    sections = {}
    for split in ("test", "dev"):
        (sections[split],) = build_sections(list(iter_results(store)), ReportOptions(
            results_dir=store, tables=("sts-table",), split=split))
    assert [e.label for _, e in sections["test"].comparison.rows][:1] == ["BERTbase (CLS)"]
    assert sections["dev"].comparison.rows == ()
    (label, missed), = sections["dev"].comparison.unpaired
    assert all(any(g == "split: ours dev, paper test" for g in gaps) for _, gaps in missed)


# --- item 6: the data that selected the checkpoint ---------------------------------------------------------------

def test_checkpoint_selection_is_compared_by_its_dev_datas_content(tmp_path, monkeypatch):
    """SimCSE's, DenoSent's and PaSeR's best checkpoint is chosen on STSb dev: a task name, which no longer suffices."""
    root = data_root(tmp_path / "data")
    pin_releases(monkeypatch, root)
    e = next(x for x in entries("denosent-table1") if x.label == "DenoSent-BERTbase")
    record = _genuine(e, root, "paper")
    ctx = _context(root, e)
    assert compare_record(record, e.settings, "denosent", ctx).paired
    for dev_data, want in (([None], "not recorded"), ([{"stsb": ["1" * 64]}], "111111111111…"),
                           ([{"stsb": ["sha-stsb-dev", "2" * 64]}], "then")):
        record["method"]["dev_data"] = dev_data
        verdict = compare_record(record, e.settings, "denosent", ctx)
        (gap,) = verdict.gaps
        assert gap.startswith("checkpoint selection: ours stsb dev ") and want in gap


def test_bench_run_records_the_dev_data_that_picked_the_checkpoint(tiny_bert_dir, tmp_path):
    from usebench.cli.main import main

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"sentence number {i} is here" for i in range(32)), encoding="utf-8")
    res = CliRunner().invoke(main, ["run", "--methods", "simcse", "--tasks", "stsb", "--corpus", str(corpus),
                                    "--model", str(tiny_bert_dir), "--preset", "smoke", "--max-steps", "2",
                                    "--set", "dev_task=stsb", "--set", "dev_every=1", "--set", "batch_size=8",
                                    "--data-root", str(ASSETS), "--results-dir", str(tmp_path / "r"),
                                    "--device", "cpu"])
    assert res.exit_code == 0, res.output
    (result,) = list(iter_results(tmp_path / "r"))
    assert result.record["method"]["dev_data"] == [{"stsb": [TASKS.get("stsb").data_sha256(ASSETS, "dev")]}]


# --- item 7: the seeds ---------------------------------------------------------------------------------------------

def test_the_seed_count_is_said_beside_every_delta(tmp_path, monkeypatch):
    """A one-seed mean beside Table 2's mean of 5 seeds (000 line 229) says "1 of 5 seeds"; a paper that does not
    say says so."""
    root, store = data_root(tmp_path / "data"), tmp_path / "results"
    pin_releases(monkeypatch, root)
    add_trained(store, "tsdae", 0, "askubuntu", {"map": 0.6}, config=stage_config("tsdae"),
                corpus=corpus_entry(root, "askubuntu"))
    rec = _untrained_record("stsb", "cls")
    add_result(store, "base", 0, "stsb", {"spearman": 0.2}, pooling="cls", scorer=rec["scorer"], config=rec["config"],
               method_extra=rec["method"])
    out = tmp_path / "o"
    make_report(ReportOptions(results_dir=store, out=out, tables=("paper-table2", "sts-table"),
                              formats=("md", "csv"), plots=False, data_root=root))
    md = (out / "paper-table2.md").read_text()
    assert "| Method | Paper row | Seeds |" in md and "| 1 of 5 seeds |" in md
    assert "1 seed (paper: not stated)" in (out / "sts-table.md").read_text()  # DenoSent Table 1 states none
    assert json.loads((out / "paper-table2.json").read_text())["paper"][0]["seeds"] == "1 of 5 seeds"
    assert ",5," in (out / "paper-table2-vs-paper.csv").read_text().splitlines()[1]


# --- item 8: honesty about data that is not a release ---------------------------------------------------------------

def _fixture_store(tmp_path, tiny_bert_dir):
    """What a user gets from the fixture root, everything else the paper's: the tiny BERT scores the fixture files
    (so task.data_sha256 and task.release are the fixtures'), and each record names the paper's setting otherwise
    (bert-base-uncased's fingerprint, TSDAE's resolved `paper` preset on the root's own training sentences, or the
    papers' scoring of an untrained backbone). Before issue 38 this store was put beside TSDAE Table 2 (Δ +23.2 on
    TwitterURL) and DenoSent Table 1."""
    from usebench.eval.encoder import HFEncoder
    from usebench.eval.evaluate import evaluate, to_record
    from usebench.eval.scorer import DenseScorer
    from usebench.store import run_id, save_result
    from tests.reproduce.reproduce_root import build_reproduce_root

    root = build_reproduce_root(tmp_path / "data")
    store = tmp_path / "results"
    scorer = DenseScorer(HFEncoder(str(tiny_bert_dir), pooling="cls", max_length=128, show_progress=False))
    for task in ("twitterpara", "stsb", "sts12"):
        ev = evaluate(task, scorer, "test", root)
        untrained = {"name": "base", "base_model": "bert-base-uncased", "pooling": "cls", "backbone": BERT,
                     **UNTRAINED_SCORING["method"]}
        save_result(store, {**to_record(ev, run=run_id("base", "bert-base-uncased", {"t": 1}, 0), method=untrained,
                                        seed=0, scorer=scorer, config=UNTRAINED_SCORING["config"]),
                            "scorer": {**UNTRAINED_SCORING["scorer"], "pooling": "cls"}})
        if task == "twitterpara":
            unit = {"method": "tsdae", "preset": "paper", "config": stage_config("tsdae"),
                    "corpus": corpus_entry(root, task)}
            meta = {"name": "tsdae", "base_model": "bert-base-uncased", "pooling": "cls", "max_length": 128,
                    "preset": "paper", "train_corpus": task, "backbone": BERT, "dev_data": [None]}
            save_result(store, to_record(ev, run=run_id("tsdae", "bert-base-uncased", unit, 0), method=meta, seed=0,
                                         scorer=scorer, config=unit))
    return root, store


def test_a_report_with_bench_data_at_a_fixture_root_pairs_nothing(tmp_path, tiny_bert_dir, monkeypatch,
                                                                  real_releases):
    root, store = _fixture_store(tmp_path, tiny_bert_dir)
    monkeypatch.setenv("BENCH_DATA", str(root))
    out = tmp_path / "reports"
    rep = make_report(ReportOptions(results_dir=store, out=out, formats=("md", "csv", "html"), plots=False,
                                    tables=(*ReportOptions.tables, "tsdae-table4")))
    assert [(s.built.name, len(s.comparison.rows)) for s in rep.sections if s.comparison.rows] == []
    table2 = next(s for s in rep.sections if s.built.name == "paper-table2")
    marked = [r for r in table2.built.rows if r.not_release]
    assert {r.label.split(" · ")[0] for r in marked} == {"TSDAE", "bert-base-uncased (cls)"}
    unmarked = [(s.built.name, r.label) for s in rep.sections for r in s.built.rows if r.n and not r.not_release]
    assert unmarked == [] and any(r.not_release for s in rep.sections if s.built.name == "tsdae-table4"
                                  for r in s.built.rows)  # every row with a result, in every table, says it
    assert all("eval data not a release: usebench test fixtures (" in r.label for r in marked)
    assert not any(c.bold for r in marked for c in r.cells.values())  # never bold as a test-set score
    md = (out / "paper-table2.md").read_text()
    assert "**" not in md.split("### Published")[0].split("Rows marked")[0].split("\n| *In-domain")[0]
    notes = [n for s in rep.sections for n in s.comparison.notes if n.startswith("No published neighbour")]
    assert notes and all(len(n) < 700 for n in notes)
    assert all(n.split(" differs in ")[1].startswith("evaluation data: ours ")
               for n in notes if " differs in " in n)  # the main difference first
    detail = json.loads((out / "paper-table2.json").read_text())["unpaired"]
    assert detail and all(row["published"] for row in detail)
    page = (out / "report.html").read_text()
    assert "<details class=\"unpaired\"><summary>Why TSDAE" in page


def test_a_note_names_the_main_differences_and_keeps_every_one_in_the_detail(tmp_path, monkeypatch):
    """Before: one ~1,500-character line per row."""
    root, store = data_root(tmp_path / "data"), tmp_path / "results"
    pin_releases(monkeypatch, root)
    add_trained(store, "tsdae", 0, "askubuntu", {"map": 0.6}, preset="smoke", backbone=_changed_tokenizer(),
                config=stage_config("tsdae", "smoke", lr=1e-4, noise_ratio=0.5, batch_size=4, weight_decay=0.1),
                corpus=corpus_entry(root, "askubuntu"))
    (section,) = build_sections(list(iter_results(store)), ReportOptions(results_dir=store, tables=("paper-table2",),
                                                                           data_root=root))
    (note,) = [n for n in section.comparison.notes if n.startswith("No published neighbour")]
    ((label, missed),) = section.comparison.unpaired
    every = dict(missed)["TSDAE Table 2 TSDAE"]
    assert len(every) >= 6 and len(note) < 2 * (SHOWN_GAPS + 1) * GAP_CHARS
    assert note.index("tokenizer:") < note.index(" and ") and "max_steps" not in note  # main ones first
    assert f"and {len(every) - SHOWN_GAPS} more" in note


def test_a_row_without_a_published_fingerprint_reads_as_a_gap_of_our_model(tmp_path, monkeypatch):
    """Before: "backbone: no fingerprint of the published google/electra-base-discriminator is recorded here"."""
    root = data_root(tmp_path / "data")
    pin_releases(monkeypatch, root)
    e = next(x for x in entries("tsdae-table9") if x.settings["model"] == "google/electra-base-discriminator"
             and x.match["method"] == "tsdae")
    record = _genuine(e, root, "paper")
    verdict = compare_record(record, e.settings, "tsdae", _context(root, e))
    assert verdict.gaps[0].startswith("backbone: ours bert-base-uncased (config ") and \
        "is not shown to be google/electra-base-discriminator" in verdict.gaps[0]


# --- item 9: published settings from the sources ---------------------------------------------------------------------

def test_the_tsdae_papers_bert_flow_rows_pool_the_last_layer_by_mean():
    """000 line 400 (App. B: "The pooling method for CT and BERT-flow is both mean pooling") and line 196 (footnote
    5: "we only consider the pooling over the last layer"): every TSDAE-paper BERT-flow row resolves base_pooling
    mean (before: preset paper, the port's first_last_avg)."""
    rows = [e for tid in load_reference()["tables"] if tid.startswith("tsdae") for e in entries(tid)
            if e.match and e.match["method"] == "bertflow"]
    assert len(rows) == 9
    for e in rows:
        chain = (e.settings.get("chains") or [["bertflow"]])[0]
        (*_, (name, cfg)) = expected_stages(chain, e.settings["preset"], "bertflow", e.settings["config"], "askubuntu")
        assert name == "bertflow" and cfg.base_pooling == "mean", (e.source, e.label)
        assert cfg == METHODS.get("bertflow").config("paper-mean", {"model": cfg.model}), (e.source, e.label)


def test_pasers_table_1_row_masks_the_top_five_phrases():
    """002 line 182: Table 1's 77.72 (STS12-16 mean) / 79.19 / 65.31 sits at Table 5's RAKE top5 row 77.7 / 79.3 /
    65.4 (line 278), not at its top1 row 73.5 / 73.9 / 62.4 (line 274)."""
    rows = [e for tid in ("paser-table1", "denosent-table1") for e in entries(tid)
            if e.match and e.match["method"] == "paser"]
    assert len(rows) == 2 and all(e.settings["config"]["top_k"] == 5 for e in rows)
    assert all(METHODS.get("paser").config(p).top_k == 5 for p in ("paper", "official"))


# --- issue 46: the task version a published number was pinned with --------------------------------------------------

def test_a_result_of_another_task_version_never_stands_beside_the_papers_numbers(tmp_path, monkeypatch):
    """A published row pairs only with results scored under the task version its numbers were checked against
    (paper_reference.json's ``task_versions``), trained rows and untrained ones alike."""
    root = data_root(tmp_path / "data")
    pin_releases(monkeypatch, root)
    (tid, e), = [(t, x) for t, x in _pairable_rows() if x.match["method"] == "tsdae"][:1]
    presets = e.settings["preset"]
    record = _genuine(e, root, presets if isinstance(presets, str) else presets[0])
    ctx = _context(root, e)
    assert compare_record(record, e.settings, "tsdae", ctx).paired, (tid, e.label)
    record["task"]["version"] = "0"
    verdict = compare_record(record, e.settings, "tsdae", ctx)
    assert not verdict.paired and any(g.startswith("task version: ours 0, the published numbers' pin 1 (")
                                      for g in verdict.gaps), verdict.gaps
    tid, untrained = _untrained_rows()[0]
    task = "askubuntu" if "askubuntu" in untrained.values else "stsb"
    old = _untrained_record(task, untrained.settings["pooling"], set=(("task", "version", "0"),))
    verdict = compare_record(old, untrained.settings, "base", PairingContext())
    assert not verdict.paired and any(g.startswith("task version: ours 0") for g in verdict.gaps)


def test_every_task_of_a_published_table_is_pinned_at_its_version_now():
    """A version bump (tasks/base.py: the protocol or data changed meaning) must move the pin on purpose, after
    the new protocol is checked against the papers; MTEB's tasks are versioned by MTEB."""
    from usebench.stats.table_specs import COLUMNS

    pins = load_reference()["task_versions"]
    used = set()
    for table in load_reference()["tables"].values():
        todo = [COLUMNS[c] for c in table["columns"] if c in COLUMNS]
        while todo:
            col = todo.pop()
            todo += [COLUMNS[c] for c in col.mean_of or ()]
            if col.task and col.task in TASKS.names():
                used.add(col.task)
    assert used and used <= set(pins), sorted(used - set(pins))
    assert {t: str(TASKS.get(t).version) for t in pins} == pins
