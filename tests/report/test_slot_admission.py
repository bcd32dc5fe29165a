"""Issue 39: a slot admits a row only when the row's resolved setting is the slot's (method, block, data and every key
that tells the paper's rows apart); every other row goes to "(not in the paper's table)". Each recipe's every run
is planned (the planner resolves each unit's config, as `bench reproduce` would train it), written to a store as
synthetic results, and each skeleton of the recipe is held to: no slot holds more than its own row."""
from __future__ import annotations

from collections import defaultdict
from unittest import mock
from pathlib import Path

import pytest

from usebench.report.reference import entries, load_reference
from usebench.stats.table_rows import ResultIndex, index_results
from usebench.report.skeleton import NOT_IN_PAPER, build_with_skeleton, slot_settings
from usebench.stats.table_specs import COLUMNS, TABLES
from usebench.store import iter_results, make_record, save_result
from tests.reproduce.reproduce_root import build_reproduce_root

GLOVE = Path(__file__).resolve().parents[1] / "assets" / "wordvec" / "tiny_glove.txt"
# Each recipe's report tables that are laid out on a paper's skeleton
SKELETONS = {"tsdae": ("paper-table2", "sts-table", "specific-vs-sts"),
             "denosent": ("denosent-table1", "denosent-table3"),
             "paser": ("paser-table1",),
             "thesis": ("thesis-table5.9", "thesis-table5.10", "thesis-table5.17")}


@pytest.fixture(scope="module")
def reproduce_root(tmp_path_factory) -> Path:
    return build_reproduce_root(tmp_path_factory.mktemp("slot-root"))


def _metrics() -> dict[str, list[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for col in COLUMNS.values():
        if col.task and col.metric:
            out[col.task].add(col.metric)
    return {t: sorted(m) for t, m in out.items()}


def _save(results: Path, run: str, method: dict, seed: int, tasks, split: str, config: dict) -> None:
    metrics = _metrics()
    for task in tasks:
        names = metrics.get(task, ["score"])
        save_result(results, make_record(
            run=run, task={"name": task, "split": split, "group": "g", "version": 1, "data_sha256": f"sha-{task}",
                           "n_queries": 10},
            method=method, seed=seed, scores=dict.fromkeys(names, 0.5), main_metric=names[0], subsets={},
            scorer={"kind": "dense"}, timings={}, config=config))


def write_planned_results(rp, results: Path, stand_in: str = "") -> None:
    """One synthetic result per (unit or untrained row, evaluated task), with the unit's resolved config and the
    record fields `bench run` writes (usebench/run/unit.py ``_evaluate_one``). The tiny BERT the plan was made with
    (``stand_in``) is recorded as the paper's backbone by name, with no fingerprint (as a store written before
    fingerprints): these tests hold slots to the settings keys; the backbone by content is tests/report/
    test_skeleton_backbone.py's."""
    from usebench.run.unit import stage_variant

    def backbone(model: str) -> str:
        return "bert-base-uncased" if stand_in and model == stand_in else model

    for plan in rp.plans.values():
        for u in plan.units:
            first = u.config["config"] if "config" in u.config else u.config["stages"][0]["config"]
            method = {"name": u.label, "base_model": backbone(first["model"]), "pooling": u.stages[-1].pooling,
                      "max_length": 32, "preset": u.stages[0].preset,
                      "train_corpus": u.train_corpus or u.stages[0].data["label"]}
            if "setting" in u.config:
                method["setting"] = u.config["setting"]
            if stage_variant(u):
                method["variant"] = stage_variant(u)
            _save(results, u.run_id, method, u.seed, u.evals, plan.split, u.config)
        for b in plan.baselines:
            _save(results, f"{b.name}__{b.model.replace('/', '_')}__{b.pooling}",
                  {"name": b.name, "base_model": backbone(b.model), "pooling": b.pooling or "", "max_length": 32}, 0,
                  b.evals, plan.split, {})


_STORES: dict[str, ResultIndex] = {}


def full_store(paper: str, root: Path, model: Path, tmp: Path) -> ResultIndex:
    """Every run of the recipe with its own presets (budgets shrunk so that each plans on the fixture root)."""
    from usebench.reproduce.status import load_checked_recipe
    from usebench.reproduce.build import Given, build_plan

    if paper not in _STORES:
        given = Given(model=str(model), seeds=(1, ()), max_steps=2, allow_merged_runs=True,
                      overrides=("batch_size=8", "sbert-nli.batch_size=2", "sbert-stsb.batch_size=2"),
                      labeled_sizes=(2, 4), corpus_sizes=(16,),
                      inputs={"glove": str(GLOVE)} if paper == "tsdae" else {})
        # The store is written from the plan, nothing trains: the plan must hold every run whatever this machine has
        # installed (PaSeR's paper runs need WordNet to train, not to be planned; without this the slot is empty on
        # a machine without wordnet-base, as the README's base install is)
        with mock.patch("usebench.plan.requirements._wordnet_found", return_value=True):
            rp = build_plan(load_checked_recipe(paper), None, given, root)
        write_planned_results(rp, tmp / paper, stand_in=str(model))
        _STORES[paper] = index_results(list(iter_results(tmp / paper)))
    return _STORES[paper]


def _slots(built) -> dict[int, list]:
    out: dict[int, list] = defaultdict(list)
    for r in built.rows:
        if r.slot is not None and r.key is not None:
            out[r.slot].append(r)
    return out


CASES = [(p, t) for p, tables in SKELETONS.items() for t in tables]


@pytest.mark.parametrize("paper, table", CASES, ids=[f"{p}-{t}" for p, t in CASES])
def test_every_run_of_the_recipe_fills_at_most_its_own_slot(paper, table, reproduce_root, tiny_bert_dir,
                                                            tmp_path_factory):
    index = full_store(paper, reproduce_root, tiny_bert_dir, tmp_path_factory.mktemp("slot-store"))
    built = build_with_skeleton(TABLES.get(table), index)
    labels = {i: e.label for i, e in enumerate(entries(TABLES.get(table).skeleton))}
    crowded = {labels[i]: [r.label for r in rows] for i, rows in _slots(built).items() if len(rows) > 1}
    assert not crowded, f"{table}: slots holding more than their own row: {crowded}"


def test_denosent_table1_holds_the_back_translation_runs_only(reproduce_root, tiny_bert_dir, tmp_path_factory):
    """The Table 3 ablation without discrete noise (paper-no-bt on wiki1m) is no row of Table 1: before issue 39 it
    was a second row of the "DenoSent-BERTbase" slot (the slots differed in the loss weights only)."""
    index = full_store("denosent", reproduce_root, tiny_bert_dir, tmp_path_factory.mktemp("slot-store"))
    built = build_with_skeleton(TABLES.get("denosent-table1"), index)
    slots = {entries("denosent-table1")[i].label: rows for i, rows in _slots(built).items()}
    for label in ("DenoSent-BERTbase", "DenoSent-BERTbase (contrastive only)", "DenoSent-BERTbase (generative only)"):
        (row,) = slots[label]
        assert "paraphrases" in row.key.corpus and "paper-no-bt" not in row.key.variant, label
    outside = [r for r in built.rows if r.block.endswith(NOT_IN_PAPER) and r.key and r.key.method == "denosent"]
    assert outside and all("paper-no-bt" in r.key.variant or "pooling=cls" in r.key.variant for r in outside)


def test_denosent_table3_has_its_own_skeleton(reproduce_root, tiny_bert_dir, tmp_path_factory):
    """DenoSent's Table 3 (the authors' paper.pdf: Avg. STS of eight rows) is laid out on its own rows, never on
    TSDAE's Table 11; the LLM-noise row can never be made (its paraphrases were not released)."""
    from usebench.reproduce.status import load_checked_recipe, skeleton_of
    from usebench.report.skeleton import table_status

    entry = load_checked_recipe("denosent").table("table3")
    assert entry.writes == ("denosent-table3",)
    assert skeleton_of("denosent-table3", entry, "denosent") == "denosent-table3"
    published = load_reference()["tables"]["denosent-table3"]
    assert published["columns"] == list(TABLES.get("denosent-table3").columns) == ["sts.avg"]
    assert [r["values"]["sts.avg"] for r in published["rows"]] == [79.33, 78.98, 77.96, 76.19, 77.99, 76.17, 74.54,
                                                                    78.66]
    index = full_store("denosent", reproduce_root, tiny_bert_dir, tmp_path_factory.mktemp("slot-store"))
    status = {s.label: s for s in table_status("denosent-table3", index)}
    assert status["DenoSent♢"].never
    assert all(s.made for label, s in status.items() if label != "DenoSent♢"), status


def test_paser_table1_holds_the_paper_run_only(reproduce_root, tiny_bert_dir, tmp_path_factory):
    """Before issue 39 the one "PaSeR-BERTbase (Our Method)" slot held 14 rows (the main run and the 13 ablation
    runs): now the `paper` run (signal code, top_k 5, synonym replacement 0.5, CLS) alone."""
    index = full_store("paser", reproduce_root, tiny_bert_dir, tmp_path_factory.mktemp("slot-store"))
    built = build_with_skeleton(TABLES.get("paser-table1"), index)
    slot = next(i for i, e in enumerate(entries("paser-table1")) if e.label == "PaSeR-BERTbase (Our Method)")
    (row,) = _slots(built)[slot]
    assert "paper-eq2" not in row.key.variant and row.key.pooling == "cls"
    outside = [r for r in built.rows if r.block.endswith(NOT_IN_PAPER) and r.key and r.key.method == "paser"]
    assert len(outside) == 13 and all("paper-eq2" in r.key.variant for r in outside)


def test_slot_settings_are_the_keys_the_papers_rows_differ_in():
    """Read from the published rows' resolved settings, never from their labels; budget keys (steps, batch size,
    dev selection) tell slots apart only where the table's own rows differ in them."""
    def of(table, label):
        return slot_settings(next(e for e in entries(table) if e.label == label))

    (paser,) = {tuple(sorted(a.items())) for a in of("paser-table1", "PaSeR-BERTbase (Our Method)")}
    assert dict(paser) == {"pooling": "cls", "signal": "code", "signal_m": 10.0, "signal_n": 10.0,
                           "synonym_ratio": 0.5, "top_k": 5}
    assert of("denosent-table1", "DenoSent-BERTbase") == [
        {"contrastive_weight": 1.0, "generative_weight": 1.0, "paraphrases": True, "pooling": "mask_token"}]
    (tsdae,) = of("tsdae-table2", "TSDAE")[:1]
    assert tsdae["from_scratch"] is False and tsdae["tie_encoder_decoder"] is True and "max_steps" not in tsdae
    assert of("thesis-table5.9", "SimCSE BCE") == [{"loss": "bce"}]


def test_denosent_recipe_names_the_published_tables_it_writes():
    """The recipe's Table 2 and Figure 3 have published numbers (the authors' PDFs): their titles say so and they
    name them; Figure 3's table has every published column (MindSmall's MRR@10 among them)."""
    from usebench.reproduce.status import load_checked_recipe

    recipe = load_checked_recipe("denosent")
    for tid, ref in (("table2", "denosent-table2"), ("figure3", "denosent-fig3")):
        entry = recipe.table(tid)
        assert entry.reference == ref and "no published" not in entry.title
    assert load_reference()["tables"]["denosent-fig3"]["columns"] == list(TABLES.get("denosent-fig3").columns)
