"""SimCSE: duplicated rows, dropout views, MLP in training only, loss parity with MultipleNegativesRankingLoss."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import methods  # noqa: F401
from benchmark.registry import METHODS
from methods.simcse import SimCSEModule, info_nce
from tests.methods.helpers import one_thread, tiny_config, toy_corpus


def test_info_nce_equals_mnrl_with_scale_20(tiny_bert_dir):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.losses import (
        MultipleNegativesRankingLoss,
    )
    from sentence_transformers.sentence_transformer.modules import Pooling

    st = SentenceTransformer(modules=[Transformer(str(tiny_bert_dir)), Pooling(32, "cls")], device="cpu")
    torch.manual_seed(0)
    z1, z2 = torch.randn(16, 32), torch.randn(16, 32)
    ref = MultipleNegativesRankingLoss(st, scale=20.0).compute_loss_from_embeddings([z1, z2], None)
    torch.testing.assert_close(info_nce(z1, z2, 0.05), ref, atol=1e-5, rtol=0)


def test_st_variant_matches_mnrl_on_the_same_model(tiny_bert_dir):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.losses import (
        MultipleNegativesRankingLoss,
    )
    from sentence_transformers.sentence_transformer.modules import Pooling

    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, variant="st", pooling="mean", dropout=False)
    with one_thread():
        ours_module = SimCSEModule(cfg).eval()
        st = SentenceTransformer(modules=[Transformer(str(tiny_bert_dir)), Pooling(32, "mean")], device="cpu").eval()
        texts = toy_corpus(8)
        batch = method.collate(cfg, ours_module.tokenizer, texts, np.random.default_rng(0))
        with torch.no_grad():
            ours = ours_module(batch)
            feats = st.tokenize(texts)
            theirs = MultipleNegativesRankingLoss(st, scale=20.0)([feats, dict(feats)], None)
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)


def test_official_batch_layout_dropout_views_and_mlp(tiny_bert_dir):
    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, pooling="cls")
    torch.manual_seed(0)
    with one_thread():
        m = SimCSEModule(cfg).train()
        batch = method.collate(cfg, m.tokenizer, ["one sentence", "another longer sentence"], np.random.default_rng(0))
        ids = batch["views"]["input_ids"]
        assert ids.shape[0] == 4 and torch.equal(ids[0], ids[1]) and torch.equal(ids[2], ids[3])
        z = m.encoder(**batch["views"])
        assert not torch.allclose(z[0], z[1])  # train mode: the two views differ by dropout only
        loss = m(batch)
        loss.backward()
        assert m.mlp[0].weight.grad is not None and m.mlp[0].weight.grad.abs().sum() > 0
        m_off = SimCSEModule(cfg.replace(dropout=False)).train()
        z_off = m_off.encoder(**batch["views"])
        torch.testing.assert_close(z_off[0], z_off[1])  # dropout-off control: identical views
    model, _ = method.export_module(m)
    assert model is m.encoder.model and not any("mlp" in k for k in model.state_dict())


@pytest.mark.parametrize("preset", ["paper", "official", "smoke", "st"])
def test_presets(preset):
    cfg = METHODS.get("simcse").config(preset)
    assert cfg.temperature == 0.05 and cfg.dropout
    assert (cfg.pooling, cfg.variant) == (("mean", "st") if preset == "st" else ("cls", "official"))
