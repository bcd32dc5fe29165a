"""The MLM head shared by DenoSent and PaSeR: pretrained when the checkpoint has one, else fresh; tied or not."""
from __future__ import annotations

import torch
from transformers import AutoModel, BertConfig, BertForMaskedLM

from usebench.methods.parts.heads import mlm_head


def test_pretrained_head_is_loaded_and_tied(tmp_path, tiny_bert_dir):
    torch.manual_seed(1)
    config = BertConfig.from_pretrained(tiny_bert_dir)
    saved = BertForMaskedLM(config)
    with torch.no_grad():
        saved.cls.predictions.transform.dense.weight.fill_(0.125)  # a value no random init produces
    saved.save_pretrained(tmp_path)
    encoder = AutoModel.from_pretrained(tmp_path)
    head, pretrained = mlm_head(encoder, str(tmp_path), "pretrained", tie=True)
    assert pretrained
    assert torch.all(head.predictions.transform.dense.weight == 0.125)
    assert head.predictions.decoder.weight is encoder.get_input_embeddings().weight


def test_checkpoint_without_head_gets_a_fresh_one(tiny_bert_dir):
    encoder = AutoModel.from_pretrained(tiny_bert_dir)  # saved as a bare BertModel, like the packaged MiniLM
    head, pretrained = mlm_head(encoder, str(tiny_bert_dir), "pretrained", tie=False)
    assert not pretrained
    words = encoder.get_input_embeddings().weight
    out = head.predictions.decoder.weight
    assert out is not words and torch.equal(out, words)  # untied copy of the word embeddings
    assert torch.all(head.predictions.bias == 0)
    logits = head(torch.randn(2, 3, words.shape[1]))
    assert logits.shape == (2, 3, words.shape[0])


def test_the_fallback_head_is_the_fresh_head_of_the_same_seed(tiny_bert_dir):
    """Asking for the pretrained head of a checkpoint without one (the packaged MiniLM) gives the head that
    init="fresh" draws at the same seed: loading the checkpoint's missing head weights used to consume the RNG, so
    a same-seed comparison of the two (PaSeR's old and new head) compared two different random heads."""
    encoder = AutoModel.from_pretrained(tiny_bert_dir)
    torch.manual_seed(0)
    fallback, pretrained = mlm_head(encoder, str(tiny_bert_dir), "pretrained", tie=False)
    after_fallback = torch.rand(3)
    torch.manual_seed(0)
    fresh, _ = mlm_head(encoder, str(tiny_bert_dir), "fresh", tie=False)
    assert not pretrained and torch.equal(torch.rand(3), after_fallback)
    for (name, a), (_, b) in zip(fallback.state_dict().items(), fresh.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
