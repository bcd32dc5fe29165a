"""Issue 39, item 3: PaSeR Tables 4, 5, 8, 9, TSDAE Tables 4, 9 and App. A and the thesis' tables on their papers'
skeletons. A synthetic store holds every run the recipe lists (each with the resolved config the planner records);
the report shows the paper's rows in the paper's order with the paper's labels, each slot holding only the run of
its own setting, a "—" row with the reason for each row not made, and no block header the paper does not print."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from usebench.registry import METHODS
from usebench.report.reference import entries
from usebench.report.render import grid_of, to_markdown
from usebench.reproduce.status import load_checked_recipe
from usebench.stats.table_rows import index_results
from usebench.report.skeleton import NOT_IN_PAPER, build_with_skeleton
from usebench.stats.table_specs import TABLES
from usebench.store import iter_results, make_record, run_id, save_result
from usebench.train.config import config_to_dict

STS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")
STS_CORPUS = {"label": "file:sts-sentences.txt", "sha256": "e" * 64, "sentences": 100}


def _stage(method: str, preset: str | None, overrides: tuple[str, ...]) -> dict[str, Any]:
    """The stage config the planner records for one method of a recipe run (``method.key=value`` items are that
    method's, plain ``key=value`` items every method's)."""
    own = [o.split(".", 1)[1] if o.split("=", 1)[0].count(".") and o.startswith(f"{method}.") else o
           for o in overrides if "." not in o.split("=", 1)[0] or o.startswith(f"{method}.")]
    return config_to_dict(METHODS.get(method).config(preset, own))


def _save(root: Path, method: str, seed: int, task: str, score: float, *, config: dict[str, Any], preset: str | None,
          corpus: dict[str, Any] | None, variant: str, pooling: str, model: str = "bert-base-uncased") -> None:
    unit = {"method": method, "preset": preset, "config": config, **({"corpus": corpus} if corpus else {})}
    meta = {"name": method, "base_model": model, "pooling": pooling, "max_length": 128,
            **({"train_corpus": corpus["label"]} if corpus else {}), **({"variant": variant} if variant else {})}
    record = make_record(run=run_id(method, model.replace("/", "_"), unit, seed),
                         task={"name": task, "split": "test", "group": "g", "version": 1, "data_sha256": f"sha-{task}",
                               "n_queries": 10},
                         method=meta, seed=seed, scores={"spearman": score}, main_metric="spearman", subsets={},
                         scorer={"kind": "dense"}, timings={}, config=unit)
    save_result(root, record)


def recipe_store(root: Path, paper: str, table_ids: tuple[str, ...], seeds: tuple[int, ...] = (0, 1)
                 ) -> dict[float, dict[str, Any]]:
    """Every run and eval of the recipe's tables ``table_ids`` in a store (a unit two tables list, once), each unit
    scoring its own number; returns that number -> the unit's resolved stage config (``{}`` for an eval)."""
    recipe = load_checked_recipe(paper)
    units: dict[str, tuple[str, str | None, dict[str, Any], str]] = {}
    evals: dict[str, Any] = {}
    for table in (t for t in recipe.tables if t.id in table_ids):
        for run in table.runs:
            for method in run.methods:
                config = _stage(method, run.preset, run.overrides)
                shown = [o.split(".", 1)[-1] for o in run.overrides]
                variant = " + ".join([run.preset or ""] + shown).strip(" +")
                units[repr(sorted(config.items()))] = (method, run.preset, config, variant)
        for ev in table.evals:
            evals[f"{ev.model}/{ev.pooling}"] = ev
    numbers: dict[float, dict[str, Any]] = {}
    for i, (method, preset, config, variant) in enumerate(units.values()):
        number = round(0.40 + i / 100, 2)
        numbers[number] = config
        for seed in seeds:
            for task in STS:
                _save(root, method, seed, task, number, config=config, preset=preset, corpus=STS_CORPUS,
                      variant=variant, pooling=str(config.get("pooling") or "cls"))
    for j, ev in enumerate(evals.values()):
        number = round(0.20 + j / 100, 2)
        numbers[number] = {}
        for task in STS:
            _save(root, "base", 0, task, number, config={"precision": "fp32"}, preset=None, corpus=None, variant="",
                  pooling=str(ev.pooling), model=str(ev.model))
    return numbers


def _laid_out(root: Path, table: str):
    return build_with_skeleton(TABLES.get(table), index_results(iter_results(root)))


def _paper_label(label: str) -> str:
    return label.split(" · ")[0]  # the paper's label, before our marks (corpus, variant)


def _assert_on_skeleton(built, published: str) -> None:
    """The paper's rows in the paper's order with its labels, each at most once; no block the paper lacks."""
    slots = entries(published)
    firsts = {}
    for r in built.rows:
        if r.slot is not None:
            firsts.setdefault(r.slot, r)
    assert [(firsts[i].block, _paper_label(firsts[i].label)) for i in sorted(firsts)] == \
        [(e.block, e.label) for e in slots]
    assert [r.slot for r in built.rows if r.slot is not None] == sorted(r.slot for r in built.rows
                                                                      if r.slot is not None)
    assert all(r.block.endswith(NOT_IN_PAPER) for r in built.rows if r.slot is None)


# --- PaSeR Tables 4, 5, 8, 9 ----------------------------------------------------------------------------------

PASER_TABLES = {"table4": "paser-table4", "table5": "paser-table5", "table8": "paser-table8", "table9": "paser-table9"}


@pytest.fixture(scope="module")
def paser_store(tmp_path_factory) -> tuple[Path, dict[float, dict[str, Any]]]:
    root = tmp_path_factory.mktemp("paser") / "results"
    return root, recipe_store(root, "paser", tuple(PASER_TABLES))


def test_the_paser_recipe_names_its_tables_after_the_paper():
    """`--tables table4` is Table 4 (it lived in `ablations`, so `table4` suggested `table1`)."""
    recipe = load_checked_recipe("paser")
    for table_id, report in PASER_TABLES.items():
        entry = recipe.table(table_id)
        assert entry.writes == (report,) and entry.reference == report


@pytest.mark.parametrize("table", sorted(PASER_TABLES.values()))
def test_paser_ablation_tables_are_laid_out_on_the_paper(paser_store, table):
    root, numbers = paser_store
    built = _laid_out(root, table)
    _assert_on_skeleton(built, table)
    for i, slot in enumerate(entries(table)):
        ours = [r for r in built.rows if r.slot == i and r.key is not None]
        if slot.match is None:  # RS, RD, NP/VP masking: a "—" row that says why
            (row,) = [r for r in built.rows if r.slot == i]
            assert all(c.missing for c in row.cells.values()) and row.note.startswith("cannot be made here: ")
            assert "not implemented in the suite" in row.note
            continue
        assert len(ours) == 1, (slot.label, [r.label for r in ours])  # its own run, and only that one
        stsb = round(ours[0].cells["stsb"].mean / 100, 2)
        config = numbers[stsb]
        wanted = (slot.settings or {}).get("config") or {}
        assert all(config.get(k) == pytest.approx(v) if isinstance(v, float) else config.get(k) == v
                   for k, v in wanted.items()), (slot.label, config)
    # no header the paper lacks: PaSeR prints Tables 4, 5, 8, 9 without blocks
    md = to_markdown(grid_of(built))
    headers = [ln for ln in md.splitlines() if ln.startswith("| *")]
    assert all(NOT_IN_PAPER.strip() in h for h in headers), headers


def test_paser_labels_are_the_papers():
    """As printed (002_fcbe7f2a80beb031.txt lines 251, 274-278, 370-374, 396-399)."""
    labels = {t: [e.label for e in entries(t)] for t in PASER_TABLES.values()}
    assert labels["paser-table4"] == ["BERT-[CLS]", "PaSeRbase-no aug", "+ RS", "+ RD", "+ SR", "+ SR + RD",
                                      "+ SR + RS"]
    assert labels["paser-table5"] == ["None (BERT-[CLS])", "NP only", "VP only", "NP+VP", "RAKE (top1)",
                                      "RAKE (top2)", "RAKE (top3)", "RAKE (top4)", "RAKE (top5)"]
    assert labels["paser-table8"] == ["m = 0.1, n = 1.0", "m = 1.0, n = 1.0", "m = 10, n = 1.0", "m = 10, n = 0.1",
                                      "m = 10, n = 10"]
    assert labels["paser-table9"] == ["Top1 avg.", "Top2 avg.", "First-last avg.", "[CLS]"]


# --- TSDAE Table 4 and App. A (section builders on the paper's skeleton) -----------------------------------------

def _tsdae_units(table_id: str) -> list[tuple[dict[str, Any], Any]]:
    """(resolved TSDAE config, recipe run) of every distinct unit the recipe's table trains."""
    units: dict[str, tuple[dict[str, Any], Any]] = {}
    for run in load_checked_recipe("tsdae").table(table_id).runs:
        config = _stage("tsdae", run.preset, run.overrides + ((f"model={run.model}",) if run.model else ()))
        units.setdefault(repr(sorted(config.items())), (config, run))
    return list(units.values())


def _tsdae_result(root: Path, i: int, config: dict[str, Any], seed: int, task: str, split: str, corpus: str,
                  metric: str, score: float):
    from usebench.store import StoredResult
    import json

    record = {"schema_version": 1, "seed": seed, "method": {"name": "tsdae", "base_model": config["model"]},
              "task": {"name": task, "split": split, "data_sha256": f"sha-{task}" + ("-dev" if split == "dev" else "")},
              "scores": {metric: score}, "main_score": score,
              "config": {"method": "tsdae", "preset": "x", "config": config, "seed": seed,
                         "corpus": {"label": corpus, "sha256": "c"}}}
    path = root / f"u{i}s{seed}" / task / f"{split}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    (path.parent.parent / "log.jsonl").write_text(json.dumps({"step": 1, "loss": 2.0}) + "\n")
    return StoredResult(path, record)


def test_tsdae_table4_is_laid_out_on_the_paper(tmp_path):
    from usebench.report.tsdae_analyses import table4_section

    units = _tsdae_units("table4")
    assert len(units) == 4
    results, number = [], {}
    for i, (config, _) in enumerate(units):
        number[round(0.50 + i / 100, 2)] = config
        for task, metric in (("askubuntu", "map"), ("cqadupstack", "map@100"), ("twitterpara", "ap_avg"),
                             ("scidocs", "map_avg")):
            results.append(_tsdae_result(tmp_path, i, config, 0, task, "test", task, metric, 0.50 + i / 100))
    section = table4_section(results, TABLES.get("tsdae-table4"))
    rows = section.built.rows
    # Table 4 (000_469bd9b6678f63f1.txt lines 300-304): no block header; BERT-base, Scratch, BART-base, T5-base
    assert [(r.block, r.label.split(" · ")[0]) for r in rows] == [("", e.label) for e in entries("tsdae-table4")]
    for row, slot in zip(rows, entries("tsdae-table4")):
        config = number[round(row.cells["askubuntu"].mean / 100, 2)]
        assert config["model"] == slot.model and config["from_scratch"] == bool(
            (slot.settings or {}).get("config", {}).get("from_scratch")), (slot.label, config)
    # a run that is none of the paper's settings goes below, marked as not in the paper's table
    odd = {**units[0][0], "tie_encoder_decoder": False}
    results.append(_tsdae_result(tmp_path, 9, odd, 0, "askubuntu", "test", "askubuntu", "map", 0.3))
    rows = table4_section(results, TABLES.get("tsdae-table4")).built.rows
    assert len([r for r in rows if r.slot is not None]) == 4
    (extra,) = [r for r in rows if r.slot is None]
    assert extra.block.endswith(NOT_IN_PAPER)


def test_tsdae_table4_rows_not_run_say_why(tmp_path):
    from usebench.report.tsdae_analyses import table4_section

    config, _ = _tsdae_units("table4")[0]  # BERT-base only
    results = [_tsdae_result(tmp_path, 0, config, 0, "askubuntu", "test", "askubuntu", "map", 0.6)]
    built = table4_section(results, TABLES.get("tsdae-table4")).built
    empty = {r.label: r.note for r in built.rows if r.note}
    assert empty == {"Scratch": "no results of TSDAE from scratch (from_scratch=true) on the four tasks' own "
                                "sentences in this store",
                     "BART-base": "no results of TSDAE from facebook/bart-base on the four tasks' own sentences in "
                                  "this store",
                     "T5-base": "no results of TSDAE from t5-base on the four tasks' own sentences in this store"}


def test_tsdae_app_a_is_laid_out_on_tables_5_to_7(tmp_path):
    from usebench.report.tsdae_analyses import APP_A_TABLES, app_a_section

    units = _tsdae_units("tables5-7")
    assert len(units) == 16  # 19 search runs, three of them the same setting as another table's row
    results, number = [], {}
    for i, (config, run) in enumerate(units):
        number[round(0.60 + i / 100, 2)] = config
        results.append(_tsdae_result(tmp_path, i, config, 0, "stsb", "dev", run.corpus, "spearman", 0.60 + i / 100))
    built = app_a_section(results, TABLES.get("tsdae-app-a")).built
    slots = [e for t in APP_A_TABLES for e in entries(t)]
    # every published row, in the paper's order, with its label and its table as the block (the paper's captions,
    # 000_469bd9b6678f63f1.txt lines 384, 389, 396; the tying result, line 391)
    assert [(r.block, r.label) for r in built.rows] == [(e.block, e.label) for e in slots]
    for row, slot in zip(built.rows, slots):
        config = number[round(row.cells["stsb"].mean / 100, 2)]
        wanted = (slot.settings or {})["config"]
        assert all(config[k] == wanted[k] for k in ("noise", "noise_ratio", "pooling", "tie_encoder_decoder")), \
            (slot.label, config)
    assert {r.block for r in built.rows} == {"Table 5: Results with different noise types",
                                              "Table 6: Results with different noise ratio",
                                              "Table 7: Results with different pooling methods",
                                              "App. A: tying the encoder and the decoder"}


# --- the thesis ------------------------------------------------------------------------------------------------

def test_thesis_tables_carry_no_block_header_the_thesis_lacks():
    """The thesis prints its tables without block rows (004_812ab4b1d0bc624d.txt lines 674-681, 762-769, 921-937)."""
    from usebench.report.reference import load_reference

    for table_id, table in load_reference()["tables"].items():
        if table.get("source") == "thesis":
            assert {r["block"] for r in table["rows"]} == {""}, table_id


def _thesis_unit(root: Path, i: int, batch: int, epochs: float, size: int | None, value: float,
                 extra: dict[str, Any] | None = None) -> None:
    config = config_to_dict(METHODS.get("simcse").config("thesis", {"batch_size": batch, "epochs": epochs,
                                                                    **(extra or {})}))
    corpus = {"label": "file:owt_1m.txt", "sha256": "f" * 64, "sentences": size or 1_000_000}
    variant = f"thesis + batch_size={batch} + epochs={epochs:g}" + "".join(f" + {k}={v}" for k, v in (extra or {}).items())
    for task, scores in (("stsb", {"spearman": value}), ("quora", {"recall@10": value, "p@10": value})):
        unit = {"method": "simcse", "preset": "thesis", "config": config, "corpus": corpus,
                **({"corpus_size": size} if size else {})}
        meta = {"name": "simcse", "base_model": "bert-base-uncased", "pooling": "cls", "max_length": 32,
                "train_corpus": corpus["label"], "variant": variant}
        record = make_record(run=run_id("simcse", f"m{i}", unit, 1), task={
            "name": task, "split": "test", "group": "g", "version": 1, "data_sha256": f"sha-{task}", "n_queries": 10},
            method=meta, seed=1, scores=scores, main_metric=next(iter(scores)), subsets={}, scorer={"kind": "dense"},
            timings={}, config=unit)
        save_result(root, record)


def test_thesis_studies_are_laid_out_on_tables_5_11_to_5_13(tmp_path):
    from usebench.report.thesis_tables import STUDY_TABLES, studies_section

    root = tmp_path / "results"
    runs = {(32, 1.0, 100_000): 0.61, (128, 1.0, 100_000): 0.62, (512, 1.0, 100_000): 0.63, (64, 1.0, 10_000): 0.64,
            (64, 1.0, 100_000): 0.65, (64, 3.0, 100_000): 0.66, (64, 3.0, None): 0.67}
    for i, ((batch, epochs, size), value) in enumerate(runs.items()):
        _thesis_unit(root, i, batch, epochs, size, value)
    built = studies_section(list(iter_results(root)), TABLES.get("thesis-studies")).built
    slots = [(t, e) for t in STUDY_TABLES for e in entries(t)]
    firsts = {}
    for r in built.rows:
        if r.slot is not None:
            firsts.setdefault(r.slot, r)
    assert [(firsts[i].block, _paper_label(firsts[i].label)) for i in sorted(firsts)] == \
        [(f"Table {t.removeprefix('thesis-table')}", e.label) for t, e in slots]
    got = {(firsts[i].block, _paper_label(firsts[i].label)): firsts[i] for i in firsts}
    assert got["Table 5.11", "batch 32 (3125 steps)"].cells["stsb"].mean == pytest.approx(61.0)
    assert got["Table 5.11", "batch 64 (1562 steps)"].cells["stsb"].mean == pytest.approx(65.0)  # 5.12's 100k run
    assert got["Table 5.12", "10k (156 steps)"].cells["stsb"].mean == pytest.approx(64.0)
    assert got["Table 5.13", "100k (4686 steps)"].cells["stsb"].mean == pytest.approx(66.0)
    assert got["Table 5.11", "batch 96 (1041 steps)"].note.startswith("no SimCSE run with batch size 96")
    assert got["Table 5.12", "50k (781 steps)"].key is None
    assert got["Table 5.12", "100k (1562 steps)"].cells["stsb"].mean == pytest.approx(65.0)  # and 5.11's batch 64
    assert got["Table 5.13", "1M (46875 steps)"].cells["stsb"].mean == pytest.approx(67.0)  # the whole 1M corpus
    assert [r for r in built.rows if r.slot is None] == []
    _thesis_unit(root, 9, 64, 2.0, 100_000, 0.5)  # 2 epochs: no row of the thesis
    _thesis_unit(root, 10, 64, 1.0, 100_000, 0.4, {"loss": "bce"})  # Table 5.9's loss, not the studies' SimCSE
    _thesis_unit(root, 11, 64, 1.0, 100_000, 0.3, {"dev_task": "quora", "dev_metric": "recall@10"})  # Table 5.17's
    built = studies_section(list(iter_results(root)), TABLES.get("thesis-studies")).built
    extra = [r for r in built.rows if r.slot is None]
    assert all(r.block.endswith(NOT_IN_PAPER) for r in extra)
    assert sorted(round(r.cells["stsb"].mean) for r in extra) == [30, 40, 50]
    assert [r.cells["stsb"].mean for r in built.rows if r.slot is not None and r.key is not None
            and round(r.cells["stsb"].mean) in (30, 40, 50)] == []


def test_thesis_eproduct_tables_collect_no_run(tmp_path):
    from usebench.report.thesis_tables import EPRODUCT_TABLES, eproduct_section

    root = tmp_path / "results"
    _thesis_unit(root, 0, 64, 1.0, 100_000, 0.6)
    built = eproduct_section(list(iter_results(root)), TABLES.get("thesis-eproduct")).built
    assert [r.label for r in built.rows] == [e.label for t in EPRODUCT_TABLES for e in entries(t)]
    assert all(r.key is None and r.note.startswith("cannot be made here: eProduct") for r in built.rows)


def test_tsdae_table9_is_laid_out_on_the_paper(tmp_path):
    """Every run of the recipe's Table 9 (four methods from five checkpoints): each block's slot holds the run of its
    method from its checkpoint (000_469bd9b6678f63f1.txt lines 441-465), never another checkpoint's."""
    from tests.report.synthetic_results import add_useb
    from usebench.report.tsdae_analyses import table9_section

    root = tmp_path / "results"
    number = {}
    recipe = load_checked_recipe("tsdae").table("table9")
    for i, run in enumerate(recipe.runs):
        model = run.model or "bert-base-uncased"
        for j, method in enumerate(run.methods):
            value = round(0.30 + (i * 4 + j) / 100, 2)
            number[value] = (method, model)
            config = {"config": _stage(method, run.preset, run.overrides + (f"model={model}",))}
            add_useb(root, method, 0, value, value, (value, value), (value,) * 4, model=model, config=config,
                     setting="unsupervised")
    add_useb(root, "mlm", 0, 0.1, 0.1, (0.1, 0.1), (0.1,) * 4, setting="unsupervised")  # no row of Table 9
    built = table9_section(list(iter_results(root)), TABLES.get("tsdae-table9")).built
    _assert_on_skeleton(built, "tsdae-table9")
    for i, slot in enumerate(entries("tsdae-table9")):
        (row,) = [r for r in built.rows if r.slot == i]
        assert row.key is not None, slot.label
        assert number[round(row.cells["askubuntu"].mean / 100, 2)] == (slot.match["method"], slot.model)
    (extra,) = [r for r in built.rows if r.slot is None]
    assert extra.key.method == "mlm" and extra.block.endswith(NOT_IN_PAPER)
    assert {r.block for r in built.rows if r.slot is not None} == {
        "ELECTRA-base", "DistilRoBERTa-base", "RoBERTa-base", "DistilBERT-base", "BERT-base"}


def test_section_slots_name_the_published_rows_each_section_lays_out():
    from usebench.report.thesis_tables import EPRODUCT_TABLES, STUDY_TABLES
    from usebench.report.tsdae_analyses import APP_A_TABLES, SECTION_BUILDERS, SECTION_SLOTS

    assert set(SECTION_SLOTS) == set(SECTION_BUILDERS)
    assert SECTION_SLOTS["tsdae-app-a"] == APP_A_TABLES and SECTION_SLOTS["thesis-studies"] == STUDY_TABLES
    assert SECTION_SLOTS["thesis-eproduct"] == EPRODUCT_TABLES


def test_tsdae_table4_leaves_out_a_corpus_size_sample(tmp_path):
    """Figure 3's runs train TSDAE on a sample of the task's sentences: they are no Table 4 row, and a store holding
    both (bench reproduce tsdae on every table) must not try to average them with the whole-corpus run."""
    import json

    from usebench.report.tsdae_analyses import table4_section

    config, _ = _tsdae_units("table4")[0]
    whole = _tsdae_result(tmp_path, 0, config, 0, "askubuntu", "test", "askubuntu", "map", 0.6)
    sample = _tsdae_result(tmp_path, 1, config, 0, "askubuntu", "test", "askubuntu", "map", 0.3)
    sample.record["config"]["corpus_size"] = 16
    sample.path.write_text(json.dumps(sample.record))
    built = table4_section([whole, sample], TABLES.get("tsdae-table4")).built
    (bert,) = [r for r in built.rows if r.label.startswith("BERT-base")]
    assert bert.cells["askubuntu"].mean == pytest.approx(60.0)
    assert not [r for r in built.rows if r.slot is None]  # the sample is not even "not in the paper's table"
