"""TSDAE: decoder construction and tying, one label shift, and loss parity with sentence-transformers."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.train.optim import unique_parameters
from usebench.registry import METHODS
from usebench.methods.tsdae import TSDAEModule, decoder_inputs
from tests.methods.helpers import one_thread, tiny_config, toy_corpus


@pytest.fixture(scope="module")
def module(tiny_bert_dir):
    cfg = tiny_config(METHODS.get("tsdae"), tiny_bert_dir, dropout=False)
    torch.manual_seed(0)
    return TSDAEModule(cfg).eval(), cfg


def test_decoder_is_a_cross_attention_causal_lm(module):
    m, _ = module
    assert type(m.decoder).__name__ == "BertLMHeadModel"
    assert m.decoder.config.is_decoder and m.decoder.config.add_cross_attention
    assert all(hasattr(layer, "crossattention") for layer in m.decoder.bert.encoder.layer)


def test_tying_shares_every_encoder_weight_but_not_cross_attention(module):
    m, _ = module
    enc = dict(m.encoder.model.named_parameters())
    dec = dict(m.decoder.bert.named_parameters())
    for name, p in enc.items():
        if name.startswith("pooler."):
            assert name not in dec  # the decoder body has no pooler
            continue
        assert dec[name] is p, name  # same Parameter object: embeddings, self-attention, FFN, LayerNorms
    cross = [n for n in dec if "crossattention" in n]
    assert cross and not any(dec[n] is p for n in cross for p in enc.values())
    assert m.decoder.cls.predictions.decoder.weight is m.encoder.model.embeddings.word_embeddings.weight


def test_trainable_parameter_count(module):
    m, _ = module
    trainable = unique_parameters(METHODS.get("tsdae").trainable_parameters(m))
    n = sum(p.numel() for _, p in trainable)
    # Independent count: encoder without its (frozen) pooler + cross-attention + LM-head transform and bias.
    enc = sum(p.numel() for k, p in m.encoder.model.named_parameters() if not k.startswith("pooler."))
    cross = sum(p.numel() for k, p in m.decoder.named_parameters() if "crossattention" in k)
    head = sum(p.numel() for p in m.decoder.cls.predictions.transform.parameters()) + m.decoder.cls.predictions.bias.numel()
    assert n == enc + cross + head


def test_labels_are_shifted_once_and_padding_ignored(module):
    m, _ = module
    tok = m.tokenizer
    target = tok(["the river runs", "a much longer sentence about the sea"], padding=True,
                 return_tensors="pt")["input_ids"]
    dec_in, labels = decoder_inputs(target, tok.pad_token_id)
    assert torch.equal(dec_in, target[:, :-1]) and dec_in[0, 0] == tok.cls_token_id
    assert torch.equal(labels[1], target[1, 1:]) and (labels[0] == -100).sum() == (target[0] == tok.pad_token_id).sum()
    batch_ids = tok(["river", "sea"], padding=True, return_tensors="pt")
    with torch.no_grad():
        ours = m({"input_ids": batch_ids["input_ids"], "attention_mask": batch_ids["attention_mask"],
                  "target_ids": target})
        # Independent reference: HF's own causal-LM loss, which shifts `labels` internally (exactly once).
        pooled = m.encoder(batch_ids["input_ids"], batch_ids["attention_mask"])
        ref = m.decoder(input_ids=target, encoder_hidden_states=pooled[:, None],
                        labels=target.masked_fill(target == tok.pad_token_id, -100), use_cache=False).loss
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-5)


def test_loss_matches_sentence_transformers(tiny_bert_dir, module):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.losses import (
        DenoisingAutoEncoderLoss,
    )
    from sentence_transformers.sentence_transformer.modules import Pooling

    m, cfg = module
    with one_thread():
        st = SentenceTransformer(modules=[Transformer(str(tiny_bert_dir)), Pooling(m.encoder.dim, "cls")], device="cpu")
        torch.manual_seed(1)
        ref_loss = DenoisingAutoEncoderLoss(st, tie_encoder_decoder=True).eval()
        # Same weights everywhere: our decoder takes the reference's (incl. its fresh cross-attention and head).
        m.decoder.load_state_dict(ref_loss.decoder.state_dict())
        m.encoder.model.load_state_dict(st[0].model.state_dict())
        texts = toy_corpus(8, seed=3)
        batch = METHODS.get("tsdae").collate(cfg, m.tokenizer, texts, np.random.default_rng(0))
        noisy = m.tokenizer.batch_decode(batch["input_ids"], skip_special_tokens=True)
        src = st.tokenize(noisy)
        tgt = st.tokenize(texts)
        with torch.no_grad():
            ours = m(batch)
            theirs = ref_loss([src, tgt], None)
    assert torch.equal(src["input_ids"], batch["input_ids"])
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)


def test_noise_free_overfit_uses_the_sentence_vector(tiny_bert_dir):
    """METHODS.md sanity checks: with noise off a small set is memorised, and the decoder relies on the
    bottleneck: the reconstruction CE rises clearly when the memory is another sentence's vector or zeros."""
    import torch.nn.functional as F

    from usebench.train.tokenization import tokenize

    cfg = tiny_config(METHODS.get("tsdae"), tiny_bert_dir, dropout=False)
    torch.manual_seed(0)
    m = TSDAEModule(cfg)
    batch = tokenize(m.tokenizer, toy_corpus(16, seed=3), 32)
    batch = {**batch, "target_ids": batch["input_ids"]}  # noise off: reconstruct the input itself
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    with one_thread():
        for _ in range(250):
            opt.zero_grad()
            loss = m(batch)
            loss.backward()
            opt.step()

        def ce_with(memory: torch.Tensor) -> float:
            dec_in, labels = decoder_inputs(batch["target_ids"], m.pad_id)
            out = m.decoder(input_ids=dec_in, encoder_hidden_states=memory[:, None], use_cache=False)
            return float(F.cross_entropy(out.logits.flatten(0, 1), labels.flatten(), ignore_index=-100))

        m.eval()
        with torch.no_grad():
            s = m.encoder(batch["input_ids"], batch["attention_mask"])
            true, shuffled, zero = ce_with(s), ce_with(s.roll(1, dims=0)), ce_with(torch.zeros_like(s))
    assert true < 0.5, true
    assert shuffled > true + 1.0 and zero > true + 1.0, (true, shuffled, zero)
