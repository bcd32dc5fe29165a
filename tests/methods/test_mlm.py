"""MLM: masking in the collator, head tied to the encoder, loss equal to HF's masked-LM loss."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.registry import METHODS
from usebench.methods.mlm import MLMModule
from tests.methods.helpers import one_thread, tiny_config, toy_corpus


@pytest.fixture(scope="module")
def setup(tiny_bert_dir):
    method = METHODS.get("mlm")
    cfg = tiny_config(method, tiny_bert_dir, dropout=False)
    torch.manual_seed(0)
    with one_thread():
        return method, cfg, MLMModule(cfg).eval()


def test_collator_never_masks_special_tokens_or_padding(setup):
    method, cfg, m = setup
    texts = toy_corpus(64) + ["x"]  # the short line gets lots of padding
    batch = method.collate(cfg, m.tokenizer, texts, np.random.default_rng(0))
    plain = m.tokenizer(texts, padding=True, truncation=True, max_length=cfg.max_length, return_tensors="pt")
    special = torch.isin(plain["input_ids"], torch.tensor(m.tokenizer.all_special_ids))
    assert (batch["labels"][special] == -100).all()
    assert torch.equal(batch["input_ids"][special], plain["input_ids"][special])
    sel = batch["labels"] != -100
    assert torch.equal(batch["labels"][sel], plain["input_ids"][sel])
    assert 0.10 < sel.sum().item() / (~special).sum().item() < 0.20  # ~15% of ~600 real tokens


def test_head_shares_the_encoder(setup):
    _, _, m = setup
    assert m.mlm.base_model is m.encoder.model
    assert m.mlm.get_output_embeddings().weight is m.encoder.model.get_input_embeddings().weight
    assert METHODS.get("mlm").export_module(m)[0] is m.encoder.model
    assert hasattr(m.encoder.model, "pooler")  # the export keeps the checkpoint's pooler


def test_loss_equals_hf_masked_lm_loss(setup):
    method, cfg, m = setup
    batch = method.collate(cfg, m.tokenizer, toy_corpus(8), np.random.default_rng(1))
    with torch.no_grad():
        ours = m(batch)
        ref = m.mlm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
    torch.testing.assert_close(ours["loss"], ref, atol=1e-5, rtol=1e-5)
    assert 0 < ours["masked_frac"] < 0.5


def test_presets_and_min_chars():
    mlm = METHODS.get("mlm")
    paper, official = mlm.config("paper"), mlm.config("official")
    assert (paper.max_steps, paper.batch_size, paper.lr, paper.pooling, paper.mlm_probability) == (100_000, 8, 5e-5, "mean", 0.15)
    assert official.whole_word and official.min_chars == 10 and official.batch_size == 64
    assert mlm.filter_corpus(official, ["short", "a line long enough"]) == ["a line long enough"]


def test_whole_word_collate(setup):
    method, cfg, m = setup
    cfg = cfg.replace(whole_word=True, mlm_probability=0.5)
    batch = method.collate(cfg, m.tokenizer, ["unbelievably tokenization"], np.random.default_rng(3))
    enc = m.tokenizer(["unbelievably tokenization"])
    words = enc.word_ids(0)
    sel = (batch["labels"][0] != -100).tolist()
    for w in {x for x in words if x is not None}:
        picks = {s for s, wid in zip(sel, words) if wid == w}
        assert len(picks) == 1  # all pieces of a word selected together, or none
