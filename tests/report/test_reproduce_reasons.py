"""The reasons and counts `bench reproduce` prints per table are true (issue 39, item 4)."""
from __future__ import annotations

from usebench.report.reference import RefEntry, load_reference
from usebench.reproduce.status import _line
from usebench.report.skeleton import SlotStatus, _why_not


def _entry(label: str, model: str | None, match: dict | None) -> RefEntry:
    return RefEntry(table_id="t", source="TSDAE Table 2", label=label, block="b", model=model, match=match,
                    values={}, std={}, marks={})


def test_an_empty_untrained_slot_names_the_model_it_waits_for():
    """"no results of base in this store" read as if no untrained row existed, though BERT-base's did."""
    why, never = _why_not(_entry("SBERT-base-nli-v2", "sentence-transformers/bert-base-nli-mean-tokens",
                                 {"method": "base"}))
    assert why == "no results of sentence-transformers/bert-base-nli-mean-tokens (base) in this store"
    assert not never
    assert _why_not(_entry("MLM", "bert-base-uncased", {"method": "mlm", "group": "unsupervised"}))[0] == \
        "no results of mlm on bert-base-uncased in the unsupervised setting in this store"  # issue 53: its backbone


def test_a_filled_row_is_made_even_when_methods_did_not_name_it():
    """The supervised setting's chain trains with the run --methods kept: its row is made, not "not selected"."""
    slot = SlotStatus("paper-table2", "b", "SBERT-supervised", made=True, reason="", never=False)
    line = _line("paper-table2", slot, {"method": "sbert-supervised"}, {}, frozenset({"tsdae"}))
    assert line.state == "made"
    empty = SlotStatus("paper-table2", "b", "SBERT-supervised", made=False, reason="no results", never=False)
    assert _line("paper-table2", empty, {"method": "sbert-supervised"}, {}, frozenset({"tsdae"})).state \
        == "not selected"


def test_no_published_glove_row_says_the_suite_has_no_glove():
    """The suite evaluates averaged word vectors (wordvec): a reprinted GloVe row is never "no counterpart"."""
    rows = [r for t in load_reference()["tables"].values() for r in t["rows"] if r.get("model") == "glove"]
    assert rows
    for row in rows:
        notes = [row.get("note"), (row.get("settings") or {}).get("note")]
        assert "no counterpart in the suite" not in notes, row["label"]


def test_a_table_its_own_builder_lays_out_has_a_row_status(tmp_path):
    """TSDAE Table 4 is laid out by its builder, not the generic skeleton: `bench reproduce` printed "rows made: 0
    of 0" for it. Its rows' states come from the builder's slots."""
    from tests.report.test_new_skeletons import _tsdae_result, _tsdae_units
    from usebench.reproduce.status import _rows, load_checked_recipe
    from usebench.stats.table_rows import index_results

    config, _ = _tsdae_units("table4")[0]  # BERT-base only
    results = [_tsdae_result(tmp_path, 0, config, 0, task, "test", task, metric, 0.6)
               for task, metric in (("askubuntu", "map"), ("cqadupstack", "map@100"), ("twitterpara", "ap_avg"),
                                    ("scidocs", "map_avg"))]
    entry = load_checked_recipe("tsdae").table("table4")
    lines = _rows("tsdae-table4", entry, "tsdae", index_results(results), None, results)
    assert [(line.label, line.state) for line in lines] == [
        ("BERT-base", "made"), ("Scratch", "not made"), ("BART-base", "not made"), ("T5-base", "not made")]
    assert lines[1].reason == "no results of TSDAE from scratch (from_scratch=true) on the four tasks' own " \
                              "sentences in this store"


def _fig3_results(root, method: str, corpus: str, value: float) -> None:
    from usebench.stats.table_specs import COLUMNS, TABLES
    from usebench.store import make_record, run_id, save_result

    by_task: dict[str, dict[str, float]] = {}
    for cid in TABLES.get("denosent-fig3").columns:
        by_task.setdefault(COLUMNS[cid].task, {})[COLUMNS[cid].metric] = value
    for seed in (0, 1):
        cfg = {"method": method, "model": "bert-base-uncased", "seed": seed}
        for task, scores in by_task.items():
            save_result(root, make_record(
                run=run_id(method, "bert-base-uncased", {"method": method}, seed),
                task={"name": task, "split": "test", "group": "mteb", "version": 1, "data_sha256": f"sha-{task}",
                      "n_queries": 5},
                method={"name": method, "base_model": "bert-base-uncased", "pooling": "cls", "max_length": 32,
                        "train_corpus": corpus},
                seed=seed, scores=scores, main_metric=next(iter(scores)), subsets={}, scorer={"kind": "dense"},
                timings={}, config=cfg))


def test_figure3_puts_denosent_beside_simcse_trained_on_its_own_data_and_an_empty_table_is_not_made(tmp_path):
    """DenoSent's Figure 3 is DenoSent (on its paraphrases) minus SimCSE (on wiki1m): the table dropped every row,
    as it paired SimCSE only on the same corpus, and `bench reproduce` still called the empty table complete."""
    from usebench.reproduce.status import _rows, load_checked_recipe
    from usebench.stats.table_rows import index_results
    from usebench.report.skeleton import build_with_skeleton
    from usebench.stats.table_specs import TABLES
    from usebench.store import iter_results

    entry = load_checked_recipe("denosent").table("figure3")
    _fig3_results(tmp_path, "denosent", "file:paraphrases.tsv", 0.60)
    index = index_results(list(iter_results(tmp_path)))
    (line,) = _rows("denosent-fig3", entry, "denosent", index, None)
    assert line.state == "not made" and "no row of ours" in line.reason
    _fig3_results(tmp_path, "simcse", "file:wiki1m_for_simcse.txt", 0.55)
    index = index_results(list(iter_results(tmp_path)))
    (row,) = [r for r in build_with_skeleton(TABLES.get("denosent-fig3"), index).rows if r.key is not None]
    assert row.key.method == "denosent"
    assert all(abs(c.mean - 5.0) < 1e-9 for c in row.cells.values())  # 100 x (0.60 - 0.55), paired per seed
    assert _rows("denosent-fig3", entry, "denosent", index, None) == []
