"""Issue 28: a published number stands beside ours only when the two are the same setting, decided by content
(the resolved config of every stage, the backbone's fingerprint, the training data's sha256), never by names.

Sources: bert-base-uncased's config.json and weight checksums as the hub lists them (published_backbones.json);
the thesis' training data, ../shared/papers/004_812ab4b1d0bc624d.txt lines 577 and 588 (Sec. 5.1, Table 5.1:
"Quora titles 100k have been sampled from query and documents of Quora evaluation dataset") and 844 (Sec. 5.3.7).
"""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest
from click.testing import CliRunner

from usebench.eval.models import architecture_sha256, backbone_fingerprint
from usebench.registry import METHODS
from usebench.report.make import ReportOptions, build_sections
from usebench.report.pairing import NO_SCORE_KEYS, PairingContext, _normalised, compare_record, published_backbones
from usebench.report.reference import entries, load_reference
from usebench.store import iter_results
from tests.report.genuine import BERT, add_trained, corpus_entry, data_root, dev_data, pin_releases, stage_config
from tests.report.synthetic_results import add_result

USEB = ("askubuntu",)


@pytest.fixture(autouse=True)
def releases(tmp_path, monkeypatch):
    """The small data root these tests build (tmp_path/data) stands for the releases: its files are pinned in place
    of the package's (tests/report/test_pairing_eval.py holds the package's own pins to what they are)."""
    pin_releases(monkeypatch, data_root(tmp_path / "data"))


def _sections(store, root, tables=("paper-table2",), **kw):
    return build_sections(list(iter_results(store)), ReportOptions(results_dir=store, tables=tables, data_root=root,
                                                                   **kw))


def _pairs(section):
    return [(r.label, f"{e.source} {e.label}") for r, e in section.comparison.rows]


def _said(section):
    """The comparison's notes and every difference behind them (the notes name the main ones only)."""
    return list(section.comparison.notes) + [g for _, missed in section.comparison.unpaired for _, gaps in missed
                                             for g in gaps]


# --- the backbone by its fingerprint ------------------------------------------------------------------------------

def test_the_published_bert_config_is_the_hubs_file_and_its_fingerprint_ignores_bookkeeping():
    bert = published_backbones()["bert-base-uncased"]
    text = json.dumps(bert["config"], indent=2) + "\n"  # how the hub's file is written (570 bytes)
    assert len(text.encode()) == 570 and hashlib.sha256(text.encode()).hexdigest() == bert["config_json_sha256"]
    same = {**bert["config"], "transformers_version": "4.44.0", "architectures": ["BertModel"],
            "torch_dtype": "float32"}
    assert architecture_sha256(same) == bert["config_sha256"]  # the library that saved it is no part of the model
    assert architecture_sha256({**bert["config"], "num_hidden_layers": 2}) != bert["config_sha256"]


def test_backbone_fingerprint_hashes_the_config_and_each_weight_file(tiny_bert_dir):
    fp = backbone_fingerprint(tiny_bert_dir)
    (name, sha), = fp["weights_sha256"].items()
    assert sha == hashlib.sha256((tiny_bert_dir / name).read_bytes()).hexdigest()
    assert fp["config_sha256"] == architecture_sha256(json.loads((tiny_bert_dir / "config.json").read_text()))


@pytest.fixture()
def fake_bert(tiny_bert_dir, tmp_path):
    """A 2-layer random BERT in a folder named bert-base-uncased (issue 28, item 1)."""
    return shutil.copytree(tiny_bert_dir, tmp_path / "models" / "bert-base-uncased")


def test_a_random_bert_named_bert_base_uncased_is_never_paired(tmp_path, fake_bert):
    """Before: matched by its folder name, "no gap detected in backbone or steps" (Δ +18.4 on TwitterURL)."""
    root, store = data_root(tmp_path / "data"), tmp_path / "results"
    fp = {"model": str(fake_bert), **backbone_fingerprint(fake_bert)}
    add_trained(store, "tsdae", 0, "askubuntu", {"map": 0.5}, config=stage_config("tsdae", model=str(fake_bert)),
                corpus=corpus_entry(root, "askubuntu"), backbone=fp)
    add_result(store, "base", 0, "askubuntu", {"map": 0.48}, model=str(fake_bert), pooling="mean",
               method_extra={"backbone": fp})
    (section,) = _sections(store, root)
    assert section.comparison.rows == ()
    notes = " ".join(_said(section))
    assert f"backbone config: ours {fp['config_sha256'][:12]}…, paper bert-base-uncased " \
           f"{BERT['config_sha256'][:12]}…" in notes


def test_the_real_config_with_other_weights_is_not_paired(tmp_path):
    root, store = data_root(tmp_path / "data"), tmp_path / "results"
    other = {**BERT, "weights_sha256": {"model.safetensors": "0" * 64}}
    add_trained(store, "tsdae", 0, "askubuntu", {"map": 0.5}, config=stage_config("tsdae"),
                corpus=corpus_entry(root, "askubuntu"), backbone=other)
    (section,) = _sections(store, root)
    assert section.comparison.rows == ()
    assert any("backbone weights: ours model.safetensors 000000000000…, paper bert-base-uncased" in n
               for n in _said(section))


def test_a_genuine_paper_setting_run_is_paired(tmp_path):
    """The resolved paper preset, bert-base-uncased as published, the task's own released sentences."""
    root, store = data_root(tmp_path / "data"), tmp_path / "results"
    for seed in range(2):
        add_trained(store, "tsdae", seed, "askubuntu", {"map": 0.6}, config=stage_config("tsdae"),
                    corpus=corpus_entry(root, "askubuntu"))
    (section,) = _sections(store, root)
    assert _pairs(section) == [("TSDAE", "TSDAE Table 2 TSDAE")]
    line = next(n for n in section.comparison.notes if n.startswith("Setting of TSDAE"))
    assert "the same setting by content" in line and "100000 steps at batch 8" in line


def test_a_result_without_a_fingerprint_is_not_paired(tmp_path):
    root, store = data_root(tmp_path / "data"), tmp_path / "results"
    add_trained(store, "tsdae", 0, "askubuntu", {"map": 0.6}, config=stage_config("tsdae"),
                corpus=corpus_entry(root, "askubuntu"), backbone=None)
    (section,) = _sections(store, root)
    assert section.comparison.rows == ()
    assert any("backbone: ours has no fingerprint recorded" in n for n in _said(section))


# --- every score-affecting key ----------------------------------------------------------------------------------

def _changed(value):
    """A different value of the same kind (the record is data: it need not be a valid config)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value * 2 + 1
    if isinstance(value, str):
        return value + "-other"
    if isinstance(value, list):
        return [*value, 1]
    return "set" if value is None else None


def _pairable_rows():
    """Published rows with a method preset whose data a test can provide (its release or a user's sample)."""
    out = []
    for tid in load_reference()["tables"]:
        for e in entries(tid):
            s = e.settings or {}
            if not (e.match and s.get("preset") and e.match["method"] in METHODS.names()):
                continue
            if s.get("model") != "bert-base-uncased" or s.get("chains"):
                continue
            out.append((tid, e))
    return out


def _genuine(e, root, preset):
    """A record of the published row's own setting (single-method rows), with the data its row names."""
    s = e.settings
    method = e.match["method"]
    cfg = stage_config(method, preset, **{k: tuple(v) if isinstance(v, list) else v
                                          for k, v in (s.get("config") or {}).items()})
    data = s["train_data"]
    if data == "in-domain":
        task, corpus = "askubuntu", corpus_entry(root, "askubuntu")
    elif isinstance(data, dict) and "source" in data:
        task, corpus = "stsb", corpus_entry(root, file=root / "denosent/paraphrases.tsv")
    else:
        task, corpus = "stsb", {"label": "file:mine.txt", "sha256": "a" * 64, "sentences": 10}
    unit = {"method": method, "preset": preset, "config": cfg, "corpus": corpus}
    dev = {"dev_corpus_sha256": "b" * 64} if cfg.get("dev_metric") == "loss" else {}
    unit["corpus"] = {**corpus, **dev}
    return {"task": {"name": task, "split": "test", "data_sha256": f"sha-{task}", "n_queries": 10},
            "method": {"name": method, "backbone": BERT, "dev_data": [dev_data(cfg)]}, "config": unit, "seed": 0}


def _context(root, e):
    samples = {}
    for k, sha in (("train_data", "a" * 64), ("dev_data", "b" * 64)):
        spec = e.settings.get(k)
        if isinstance(spec, dict) and "unpublished" in spec:
            samples[spec["unpublished"]] = sha
    return PairingContext(root, samples)


def test_every_published_row_pairs_with_its_own_setting_and_any_changed_key_unpairs_it(tmp_path):
    root = data_root(tmp_path / "data")
    rows = _pairable_rows()
    assert len(rows) >= 40  # TSDAE Tables 2, 3, 9, 11, DenoSent/PaSeR Table 1 and the ablations, the thesis
    checked = 0
    for tid, e in rows:
        presets = e.settings["preset"]
        preset = presets if isinstance(presets, str) else presets[0]
        record = _genuine(e, root, preset)
        ctx = _context(root, e)
        assert compare_record(record, e.settings, e.match["method"], ctx).paired, (tid, e.label)
        for key in _normalised(record["config"]["config"], 0):
            bad = json.loads(json.dumps(record))
            bad["config"]["config"][key] = _changed(bad["config"]["config"][key])
            verdict = compare_record(bad, e.settings, e.match["method"], ctx)
            assert not verdict.paired and any(g.startswith(f"{key}: ours") for g in verdict.gaps), (tid, e.label, key)
            checked += 1
    assert checked > 1000


def test_keys_that_cannot_change_a_score_are_not_compared(tmp_path):
    root = data_root(tmp_path / "data")
    e = entries("tsdae-table2")[0]
    record = _genuine(e, root, "paper")
    for key in NO_SCORE_KEYS:
        record["config"]["config"][key] = 12345
    assert compare_record(record, e.settings, "tsdae", PairingContext(root)).paired


# --- issue 28, item 2: overrides and corpus size ---------------------------------------------------------------

def test_a_denosent_paper_run_with_other_values_is_not_the_7933_row(tmp_path):
    root, store = data_root(tmp_path / "data"), tmp_path / "results"
    pairs = corpus_entry(root, file=root / "denosent/paraphrases.tsv")
    changed = stage_config("denosent", max_steps=10, temperature=1.0, noise_dropout=0.0)
    for seed, cfg in enumerate((stage_config("denosent"), changed)):
        add_trained(store / str(seed), "denosent", seed, "stsb", {"spearman": 0.7}, config=cfg, corpus=pairs,
                    pooling="mask_token")
    (genuine,) = _sections(store / "0", root, ("sts-table",))
    assert [p[1] for p in _pairs(genuine)] == ["DenoSent Table 1 DenoSent-BERTbase"]
    (section,) = _sections(store / "1", root, ("sts-table",))
    assert section.comparison.rows == ()  # before: paired with 79.33
    note = " ".join(_said(section))
    want = stage_config("denosent")
    for key in ("max_steps", "temperature", "noise_dropout"):
        assert f"{key}: ours {changed[key]}, paper {want[key]}" in note


def test_a_corpus_size_sample_is_not_the_release(tmp_path):
    root, store = data_root(tmp_path / "data"), tmp_path / "results"
    sample = corpus_entry(root, "askubuntu", size=1)
    add_trained(store, "tsdae", 0, "askubuntu", {"map": 0.6}, config=stage_config("tsdae"), corpus=sample)
    (section,) = _sections(store, root)
    assert section.comparison.rows == ()
    assert any("training data: ours" in n and "(askubuntu, 1 sentences)" in n for n in _said(section))


# --- issue 28, item 3: data by checksum -----------------------------------------------------------------------

def test_a_home_made_paraphrases_tsv_is_not_the_authors_release(tmp_path):
    """The no-back-translation ablation: both columns identical, under the release's file name."""
    root, store = data_root(tmp_path / "data"), tmp_path / "results"
    mine = tmp_path / "mine" / "paraphrases.tsv"
    mine.parent.mkdir()
    mine.write_text("a cat sat .\ta cat sat .\nit rains .\tit rains .\n")
    add_trained(store, "denosent", 0, "stsb", {"spearman": 0.7}, config=stage_config("denosent"),
                corpus=corpus_entry(root, file=mine), pooling="mask_token")
    (section,) = _sections(store, root, ("sts-table",))
    assert section.comparison.rows == ()
    assert any("paper" in n and "denosent/denosent-pairs" in n for n in _said(section))


def test_rows_name_their_data_by_release_or_as_unpublished_never_by_a_file_pattern():
    for tid in load_reference()["tables"]:
        for e in entries(tid):
            data = e.settings["train_data"]
            assert not (isinstance(data, str) and data.startswith("file:")), (tid, e.label, data)
            if isinstance(data, dict):
                assert set(data) in ({"source"}, {"unpublished", "what"}, {"unpublished", "what", "from_task"}), (tid, e.label)


# --- issue 28, item 4: thesis Table 5.17 trained on Quora titles 100k -------------------------------------------

def _thesis_517(root, store, corpus, seed=1):
    cfg = stage_config("simcse", "thesis", batch_size=64, epochs=3.0, dev_task="quora", dev_metric="recall@10",
                       loss="infonce")
    return add_trained(store, "simcse", seed, "quora", {"recall@10": 0.8, "recall@100": 0.9, "ndcg@10": 0.5},
                       config=cfg, corpus=corpus, preset="thesis", pooling="mean")


def test_table_517_rows_name_quora_titles_and_pair_with_the_documented_run_on_the_users_word(tmp_path):
    rows = entries("thesis-table5.17")
    trained = [e for e in rows if e.settings["preset"]]
    assert trained and all(e.settings["train_data"]["unpublished"] == "thesis-quora-titles-100k" for e in trained)
    root, store = data_root(tmp_path / "data"), tmp_path / "results"
    quora = {"label": "quora", "sha256": "c" * 64, "sentences": 100_000}  # `--tasks quora --corpus-size 100000`
    _thesis_517(root, store, quora)
    (section,) = _sections(store, root, ("thesis-table5.17",))
    assert section.comparison.rows == ()  # the thesis' sample was never published: not without the user's word
    assert any("--user-sample thesis-quora-titles-100k=SHA256" in n for n in _said(section))
    (section,) = _sections(store, root, ("thesis-table5.17",),
                           user_samples=(("thesis-quora-titles-100k", "c" * 64),))
    assert [p[1] for p in _pairs(section)] == ["thesis Table 5.17 L_simcse"]
    assert "user's sample" in section.comparison.rows[0][0].label


def test_an_openwebtext_run_does_not_meet_table_517(tmp_path):
    """Before: an OpenWebText run was paired with "L_simcse + 0.001 L_CLM_autoencoder"."""
    root, store = data_root(tmp_path / "data"), tmp_path / "results"
    owt = {"label": "file:openwebtext_1m.txt", "sha256": "d" * 64, "sentences": 1_000_000}
    _thesis_517(root, store, owt)
    (section,) = _sections(store, root, ("thesis-table5.17",), user_samples=(("thesis-openwebtext-1m", "d" * 64),))
    assert section.comparison.rows == ()


def test_user_sample_option_checks_its_name_and_hashes_a_file(tmp_path):
    from usebench.cli.main import main
    from usebench.cli.report import user_sample
    from usebench.plan.corpus import load_corpus

    f = tmp_path / "owt.txt"
    f.write_text("one\ntwo\none\n")
    assert user_sample(f"thesis-openwebtext-1m={f}") == ("thesis-openwebtext-1m",
                                                         load_corpus(None, [str(f)], None, tmp_path).sha256)
    res = CliRunner().invoke(main, ["report", "--results-dir", str(tmp_path), "--out", str(tmp_path / "o"),
                                    "--user-sample", "wiki=" + "a" * 64])
    assert res.exit_code == 2 and "thesis-quora-titles-100k" in res.output and "--user-sample 'wiki=" in res.output


def test_bench_run_records_the_backbone_fingerprint_and_a_random_bert_run_is_not_the_papers(fake_bert, tmp_path):
    """Issue 28, item 1, end to end: `bench run --preset paper --max-steps 2` from a 2-layer random BERT in a folder
    named bert-base-uncased records that folder's fingerprint, and the TSDAE row's comparison names what differs."""
    from usebench.cli.main import main
    from tests.conftest import ASSETS

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"sentence number {i} is here" for i in range(32)), encoding="utf-8")
    res = CliRunner().invoke(main, ["run", "--methods", "tsdae", "--tasks", "stsb", "--corpus", str(corpus),
                                    "--model", str(fake_bert), "--preset", "paper", "--max-steps", "2",
                                    "--data-root", str(ASSETS), "--results-dir", str(tmp_path / "r"),
                                    "--device", "cpu"])
    assert res.exit_code == 0, res.output
    (result,) = list(iter_results(tmp_path / "r"))
    recorded = result.record["method"]["backbone"]
    assert recorded == {"model": str(fake_bert), **backbone_fingerprint(fake_bert)}
    row = entries("tsdae-table2")[0]
    verdict = compare_record(result.record, {**row.settings, "train_data": "in-domain"}, "tsdae", PairingContext())
    assert not verdict.paired
    assert any(g.startswith("backbone config: ours") for g in verdict.gaps)
    assert "max_steps: ours 2, paper 100000" in verdict.gaps


def test_a_domain_adaptation_chain_is_compared_stage_by_stage(tmp_path):
    """TSDAE then NLI+STSb (Table 2's "target task -> NLI+STS" block): each stage's preset, the supervised stages'
    pooling inherited from TSDAE's CLS (as the planner does), each stage's data by its hash. Labeled release data
    has no pinned identity (issue 38: a data root's AllNLI or STSb train is never taken for the release), so the
    genuine chain's only differences are its two labeled stages' data; a changed key of the last stage adds itself."""
    from usebench.plan.stage_data import stage_data
    from usebench.store import make_record, run_id, save_result
    from tests.conftest import ASSETS

    root = data_root(shutil.copytree(ASSETS / "labeled_root", tmp_path / "data", dirs_exist_ok=True))
    stages = [{"method": "tsdae", "preset": "paper", "config": stage_config("tsdae"),
               "data": {"kind": "corpus", **corpus_entry(root, "askubuntu")}}]
    for k, name in enumerate(("sbert-nli", "sbert-stsb"), start=1):
        cfg = METHODS.get(name).config("paper", {"pooling": "cls"})
        data = stage_data(METHODS.get(name), cfg, "askubuntu", None, None, 0, root)[0]
        stages.append({"method": name, "preset": "paper", "config": {**stage_config(name, pooling="cls"),
                                                                      "model": f"stage:{k}"}, "data": data})

    def write(store, stages):
        unit = {"method": "tsdae>sbert-nli>sbert-stsb", "chain": [s["method"] for s in stages], "stages": stages,
                "setting": "adapt-target-first"}
        meta = {"name": unit["method"], "base_model": "bert-base-uncased", "pooling": "cls", "max_length": 128,
                "preset": "paper", "train_corpus": "askubuntu", "setting": "adapt-target-first", "backbone": BERT,
                "dev_data": [dev_data(s["config"]) for s in stages]}
        save_result(store, make_record(run=run_id("tsdae+sbert-nli+sbert-stsb", "bert-base-uncased", unit, 0),
                                       task={"name": "askubuntu", "split": "test", "group": "g", "version": 1,
                                             "data_sha256": "sha-askubuntu", "n_queries": 1},
                                       method=meta, seed=0, scores={"map": 0.6}, main_metric="map", subsets={},
                                       scorer={"kind": "dense"}, timings={}, config=unit))

    def differences(store):
        (section,) = _sections(store, root)
        assert section.comparison.rows == ()
        (label, missed), = section.comparison.unpaired
        return dict(missed)["TSDAE Table 2 TSDAE"]

    write(tmp_path / "ok", stages)
    gaps = differences(tmp_path / "ok")
    assert len(gaps) == 2 and all(g.startswith(f"stage {k} (sbert-{n}) training data:") and "does not pin" in g
                                  for g, (k, n) in zip(gaps, ((2, "nli"), (3, "stsb"))))
    changed = json.loads(json.dumps(stages))
    changed[2]["config"]["epochs"] = 1.0
    write(tmp_path / "bad", changed)
    assert "stage 3 (sbert-stsb) epochs: ours 1.0, paper 4.0" in differences(tmp_path / "bad")


def test_bench_eval_records_the_evaluated_models_fingerprint_outside_the_run_id(fake_bert):
    from usebench.plan.eval_options import EvalOptions, describe_model

    method, config, _ = describe_model(EvalOptions(model=str(fake_bert), pooling="mean", device="cpu"))
    assert method["backbone"] == {"model": str(fake_bert), **backbone_fingerprint(fake_bert)}
    assert "backbone" not in config  # the run id (config) is unchanged: results already stored keep their ids
