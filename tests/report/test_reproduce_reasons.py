"""The reasons and counts `bench reproduce` prints per table are true (issue 39, item 4)."""
from __future__ import annotations

from usebench.report.reference import RefEntry, load_reference
from usebench.report.reproduce_status import _line
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
        "no results of mlm in the unsupervised setting in this store"


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
