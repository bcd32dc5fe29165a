"""A row stands in a paper's block only when its backbone is the block's by content (issue 53, item 5): the untrained
MiniLM is no "BERT-base-uncased" row of TSDAE Table 2's "Other previous unsupervised approaches", and a CT run from
MiniLM no row of "Unsupervised method based on BERT-base" in the STS table; both stand below, in blocks that say they
are not the paper's. A backbone whose recorded fingerprint is the published one is the slot's whatever its name."""
from __future__ import annotations

from pathlib import Path

from usebench.report.pairing import published_backbones
from usebench.report.skeleton import NOT_IN_PAPER, build_with_skeleton
from usebench.stats.table_rows import index_results
from usebench.stats.table_specs import TABLES
from usebench.store import iter_results
from tests.report.synthetic_results import add_result, add_useb


def _minilm() -> dict:
    from usebench.eval.models import recorded_backbone

    return recorded_backbone("minilm")


def _bert_base() -> dict:
    """The published bert-base-uncased's fingerprint, as a run on its real weights records it."""
    from usebench.eval.models import FINGERPRINT_VERSION

    ref = published_backbones()["bert-base-uncased"]
    return {"fingerprint_version": FINGERPRINT_VERSION, "config_sha256": ref["config_sha256"],
            "weights_sha256": dict(ref["weights_sha256"]), "tokenizer": ref["tokenizer"]}


def _built(root: Path, table: str):
    return build_with_skeleton(TABLES.get(table), index_results(iter_results(root)))


def test_the_untrained_minilm_is_no_bert_base_row(tmp_path):
    root = tmp_path / "r"
    add_useb(root, "base", 0, 0.5, 0.1, (0.77, 0.72), (0.6,) * 4, model="minilm", pooling="mean",
             method_extra={"backbone": {"model": "minilm", **_minilm()}})
    built = _built(root, "paper-table2")
    slot = next(r for r in built.rows if r.label.startswith("BERT-base-uncased"))
    assert slot.key is None and slot.block == "Other previous unsupervised approaches"
    assert "no results of bert-base-uncased (base)" in slot.note and "ours: minilm, below" in slot.note
    (ours,) = [r for r in built.rows if r.key is not None]
    assert ours.slot is None and ours.block.endswith(NOT_IN_PAPER) and ours.label.startswith("minilm")


def test_a_name_is_no_backbone_but_a_fingerprint_is(tmp_path):
    """Named bert-base-uncased but MiniLM's weights: not the slot's; a checkpoint under another name whose
    fingerprint is bert-base-uncased's: the slot's."""
    liar, real = tmp_path / "liar", tmp_path / "real"
    add_useb(liar, "base", 0, 0.5, 0.1, (0.77, 0.72), (0.6,) * 4, model="bert-base-uncased", pooling="mean",
             method_extra={"backbone": {"model": "bert-base-uncased", **_minilm()}})
    assert all(r.key is None for r in _built(liar, "paper-table2").rows if r.slot is not None)
    add_useb(real, "base", 0, 0.5, 0.1, (0.77, 0.72), (0.6,) * 4, model="/models/my-copy", pooling="mean",
             method_extra={"backbone": {"model": "/models/my-copy", **_bert_base()}})
    built = _built(real, "paper-table2")
    (ours,) = [r for r in built.rows if r.key is not None]
    assert ours.slot is not None and ours.block == "Other previous unsupervised approaches"


def test_a_ct_run_from_minilm_is_not_in_the_bert_base_block_of_the_sts_table(tmp_path):
    root = tmp_path / "r"
    for task in ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr"):
        add_result(root, "ct", 0, task, {"spearman": 0.7}, model="minilm", pooling="mean",
                   method_extra={"backbone": {"model": "minilm", **_minilm()}})
    built = _built(root, "sts-table")
    ct = next(r for r in built.rows if r.label == "CT" and r.slot is not None)
    assert ct.key is None and ct.block == "Unsupervised method based on BERT-base"
    assert ct.note == ("no results of ct on bert-base-uncased in this store (ours on minilm, below, not in the "
                       "paper's table)")
    (ours,) = [r for r in built.rows if r.key is not None]
    assert ours.slot is None and ours.block.endswith(f"· on minilm, not bert-base-uncased{NOT_IN_PAPER}")
