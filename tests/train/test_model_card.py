"""The model card of every export: sentence-transformers still loads the folder and keeps the card as the model's own;
its YAML header parses as the Hub's model-card metadata (huggingface_hub's ModelCard, offline), with the store's
results as its model-index; a chain's card names the first backbone; a later result refreshes it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from usebench.train.checkpoint import export_checkpoint
from usebench.train.model_card import CARD, add_result, backbone, hub_id
from tests.methods.helpers import one_thread

CONFIG = {"method": "simcse", "preset": "smoke", "seed": 3,
          "config": {"lr": 3e-5, "amp": "bf16", "model": "minilm", "pooling": "cls"},
          "corpus": {"label": "askubuntu", "sentences": 160_000, "sha256": "ab" * 32}}


@pytest.fixture(scope="module")
def tiny_model(tiny_bert_dir):
    from transformers import AutoModel, AutoTokenizer

    return AutoModel.from_pretrained(tiny_bert_dir), AutoTokenizer.from_pretrained(tiny_bert_dir)


def _export(tiny_model, target: Path, base_model: str = "minilm") -> Path:
    model, tok = tiny_model
    return export_checkpoint(model, tok, target, method="simcse", pooling="cls", max_length=16, config=CONFIG,
                             base_model=base_model, extra={"seed": 3, "steps": 125, "step_path": {"fast": True}})


def _result(store: Path, task: str, split: str, scores: dict[str, float], main: str) -> Path:
    path = store / "run" / task / f"{split}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"task": {"name": task, "split": split, "group": "useb", "data_sha256": "cd" * 32},
                                "scores": scores, "main_metric": main, "main_score": scores[main],
                                "created_at": "2026-01-02T03:04:05+00:00"}))
    return path


def test_an_export_has_a_card_sentence_transformers_loads_and_keeps(tiny_model, tmp_path):
    from huggingface_hub import ModelCard
    from sentence_transformers import SentenceTransformer

    out = _export(tiny_model, tmp_path / "ckpt")
    card = ModelCard.load(out / CARD)  # the Hub's parser: YAML header + body
    assert card.data.library_name == "sentence-transformers" and card.data.pipeline_tag == "sentence-similarity"
    assert card.data.base_model == "sentence-transformers/all-MiniLM-L6-v2"  # our alias, as the Hub names it
    assert {"sentence-transformers", "sentence-similarity", "method:simcse", "pooling:cls"} <= set(card.data.tags)
    assert card.data.eval_results is None  # nothing evaluated yet
    for fact in ("**Pooling:** cls", "**Steps:** 125", "**Seed:** 3", "**Precision:** bf16", '"fast": true',
                 f"sha256 `{'ab' * 32}`", "askubuntu (160,000 sentences)", "- usebench: 0.1.0", '"lr": 3e-05'):
        assert fact in card.text, fact
    with one_thread():
        model = SentenceTransformer(str(out), device="cpu")
        assert model.encode(["a sentence"]).shape == (1, 32)
        model.save(str(tmp_path / "saved"))  # a loaded model without training keeps the card it was given
    assert (tmp_path / "saved" / CARD).read_text() == (out / CARD).read_text()


def test_results_become_the_model_index_and_a_later_one_refreshes_the_card(tiny_model, tmp_path):
    from huggingface_hub import ModelCard

    out = _export(tiny_model, tmp_path / "store" / "run" / "checkpoint")
    first = _result(tmp_path / "store", "askubuntu", "test", {"map": 0.6123, "p@1": 0.5, "mrr": 0.7}, "map")
    add_result(out, first, "cd /work && bench run --methods simcse --tasks askubuntu")
    card = ModelCard.load(out / CARD)
    got = {(r.dataset_name, r.dataset_split, r.metric_type): r.metric_value for r in card.data.eval_results}
    assert got == {("askubuntu", "test", "map"): 0.6123, ("askubuntu", "test", "p_at_1"): 0.5,
                   ("askubuntu", "test", "mrr"): 0.7}
    assert {r.task_type for r in card.data.eval_results} == {"reranking"}
    assert {r.dataset_revision for r in card.data.eval_results} == {"cd" * 32}
    assert "| askubuntu | test | map (main) | 0.6123 |" in card.text
    assert "cd /work && bench run --methods simcse --tasks askubuntu" in card.text
    second = _result(tmp_path / "store", "stsb", "test", {"spearman": 0.81}, "spearman")
    add_result(out, second)  # a later evaluation: both listed, the command kept
    add_result(out, first)  # listed once however often it is re-scored
    card = ModelCard.load(out / CARD)
    assert sorted({(r.dataset_name, r.task_type) for r in card.data.eval_results}) == [
        ("askubuntu", "reranking"), ("stsb", "sentence-similarity")]
    assert sorted(json.loads((out / "usebench_card.json").read_text())["results"]) == ["../askubuntu/test.json",
                                                                                       "../stsb/test.json"]
    assert "bench run --methods simcse" in card.text


def test_a_chain_stage_names_the_first_backbone_and_a_local_one_is_no_hub_id(tiny_model, tmp_path):
    first = _export(tiny_model, tmp_path / "stage1" / "checkpoint", base_model="bert-base-uncased")
    second = _export(tiny_model, tmp_path / "stage2" / "checkpoint", base_model=str(first))
    meta = json.loads((second / "method.json").read_text())
    assert backbone(meta) == "bert-base-uncased"
    assert hub_id("bert-base-uncased") == "bert-base-uncased" and hub_id(str(first)) is None
    assert "base_model: bert-base-uncased" in (second / CARD).read_text()


def test_a_card_that_cannot_be_made_never_fails_the_export(tiny_model, tmp_path, monkeypatch, capsys):
    from usebench.train import model_card

    def broken(meta, results):
        raise ValueError("bad metadata")

    monkeypatch.setattr(model_card, "card_data", broken)
    out = _export(tiny_model, tmp_path / "ckpt")
    assert (out / "method.json").is_file() and not (out / CARD).exists()
    assert "no model card written (ValueError: bad metadata)" in capsys.readouterr().err
