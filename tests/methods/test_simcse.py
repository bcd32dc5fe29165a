"""SimCSE: duplicated rows, dropout views, MLP in training only, loss parity with MultipleNegativesRankingLoss."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.errors import ConfigError
from usebench.registry import METHODS
from usebench.methods.parts.losses import info_nce
from usebench.methods.simcse import SimCSEModule
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


def test_paper_keeps_the_mlp_at_test_and_official_drops_it():
    """TSDAE App. B: "a linear layer on the CLS token embedding as the pooling method"; [SC] --mlp_only_train."""
    method = METHODS.get("simcse")
    assert method.eval_pooling(method.config("paper")) == "cls_mlp"
    assert method.eval_pooling(method.config("official")) == "cls"
    with pytest.raises(ConfigError, match="variant=official"):
        method.config("st", mlp_only_train=False)


def test_cls_mlp_export_is_tanh_of_the_trained_linear_on_cls(tiny_bert_dir, tmp_path):
    """The exported vectors are tanh(W CLS + b) with the trained MLP, through bench eval's encoder and through
    SentenceTransformer(path) alike; dev selection scored that same pooling."""
    from sentence_transformers import SentenceTransformer

    from usebench.eval.encoder import HFEncoder
    from usebench.train.loop import train

    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, pooling="cls", mlp_only_train=False, max_steps=4, dev_task="stsb",
                      dev_every=2)
    seen = []

    def dev_eval(ckpt):
        seen.append(json.loads((ckpt / "method.json").read_text())["pooling"])
        return float(len(seen))  # every probe is a new best: the last one is exported

    with one_thread():
        result = train(method, cfg, toy_corpus(), tmp_path / "run", seed=0, show_progress=False, dev_eval=dev_eval,
                       device="cpu")
        assert seen == ["cls_mlp", "cls_mlp"]
        texts = ["a dog and a fish", "kite"]
        ours = HFEncoder(str(result.checkpoint), device="cpu", show_progress=False).encode(texts)
        st = SentenceTransformer(str(result.checkpoint), device="cpu").encode(texts, convert_to_numpy=True)
        linear = result.module.mlp[0]
        result.module.eval()
        enc = result.module.tokenizer(texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            cls = result.module.encoder.model(**enc).last_hidden_state[:, 0]
            ref = torch.tanh(cls @ linear.weight.T + linear.bias).numpy()
    np.testing.assert_allclose(ours, ref, atol=1e-5)
    np.testing.assert_allclose(st, ref, atol=1e-5)
