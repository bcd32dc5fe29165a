"""PaSeR: phrase masking vs decoder targets, the decoding signal in both forms, MLM masking, the decoder's
wiring, and WordNet synonym replacement."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from usebench.errors import MissingDataError
from usebench.registry import METHODS
from usebench.methods.paser import PaSeRModule
from usebench.methods.parts.phrase_decoder import decoder_io, decoding_signal
from usebench.methods.parts.phrase_masking import make_example
from usebench.methods.parts.rake import NLTK_ENGLISH_STOPWORDS, word_spans
from usebench.methods.parts.synonyms import (
    find_wordnet_dir,
    load_wordnet,
    render,
    synonym_replacements,
    wordnet_synonyms,
)

STOP = NLTK_ENGLISH_STOPWORDS


@pytest.fixture(scope="module")
def tokenizer(tiny_bert_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_bert_dir)


def _example(text: str, k: int) -> object:
    return make_example(text, k, "[MASK]", STOP, 0.0, random.Random(0), None)


def test_top_k_phrases_are_masked_word_by_word():
    text = "At least 89 dead in china earthquakes"  # RAKE: least 89 dead (9) > china earthquakes (4)
    ex = _example(text, 1)
    assert ex.view0 == text
    assert ex.view1 == "At [MASK] [MASK] [MASK] in china earthquakes"
    assert ex.target == "least 89 dead"
    ex3 = _example(text, 3)  # only two phrases exist: both are masked, target in text order
    assert ex3.view1 == "At [MASK] [MASK] [MASK] in [MASK] [MASK]"
    assert ex3.target == "least 89 dead china earthquakes"


def test_collate_lines_up_masks_decoder_inputs_and_labels(tokenizer):
    method = METHODS.get("paser")
    cfg = method.config("smoke", synonym_ratio=0.0, mlm_weight=0.0, top_k=1, max_length=32)
    texts = ["Do I need a transit visa for a stop in London?", "it is what it is",
             " ".join(["word"] * 40)]
    batch = method.collate(cfg, tokenizer, texts, np.random.default_rng(0))
    ids = batch["views"]["input_ids"]
    # Sentence 0: top phrase "transit visa" -> two [MASK] in s~, none in s.
    assert int((ids[3] == tokenizer.mask_token_id).sum()) == 2 and int((ids[0] == tokenizer.mask_token_id).sum()) == 0
    dec_in, labels = batch["decoder_input_ids"], batch["decoder_labels"]
    target = tokenizer("transit visa")["input_ids"]  # [CLS] transit visa [SEP]
    assert dec_in[0, : len(target) - 1].tolist() == target[:-1]  # starts with [CLS]
    assert labels[0, : len(target) - 1].tolist() == target[1:]  # ends with [SEP]
    assert (labels[0, len(target) - 1:] == -100).all()
    # Teacher forcing: label i is input i + 1 wherever both are real tokens.
    real = labels[0] != -100
    assert torch.equal(labels[0, :-1][real[:-1]], dec_in[0, 1:][real[:-1]])
    assert (labels[1] == -100).all()  # only stop words: nothing to generate
    assert (labels[2] == -100).all()  # its views reach max_length: dropped as in the reference


def test_synonym_replacement_spares_masked_words_and_counts_by_hand():
    text = "fast cars and slow trucks"
    tokens = word_spans(text)
    fake = lambda word: (f"{word}-syn",)
    # 5 words -> budget max(1, int(0.5 * 5)) = 2 distinct non-stop words replaced.
    out = synonym_replacements(tokens, 0.5, random.Random(0), fake)
    assert len(out) == 2 and all(tokens[i].text != "and" for i in out)
    spared = synonym_replacements(tokens, 1.0, random.Random(0), fake, skip={0, 1})
    assert set(spared) == {3, 4}  # "and" is a stop word; 0, 1 are masked
    assert render(text, tokens, spared) == "fast cars and slow-syn trucks-syn"
    assert synonym_replacements(tokens, 0.0, random.Random(0), fake) == {}


def test_decoding_signal_shapes_and_values():
    torch.manual_seed(0)
    z1, z2 = torch.randn(5, 8), torch.randn(5, 8)
    paper = decoding_signal(z1, z2, "eq2", m=10, n=10)
    assert paper.shape == (5, 4, 8)
    expected = torch.stack([z1, z2, 10 * (z1 - z2).abs(), 10 * (z1 * z2).abs()], dim=1)
    assert torch.allclose(paper, expected)
    proj = torch.nn.Linear(8, 8)
    code = decoding_signal(z1, z2, "code", t=1.0, k=1.0, projection=proj)
    p2 = proj(z2)
    assert code.shape == (5, 4, 8)
    assert torch.allclose(code, torch.stack([z1 * p2, z1 - p2, z1, p2], dim=1))
    assert (code[:, 1] < 0).any()  # the code form keeps signs (no absolute value)


def test_mlm_masks_view_0_only_never_special_tokens_or_padding(tokenizer):
    method = METHODS.get("paser")
    cfg = method.config("smoke", synonym_ratio=0.0, max_length=32)
    texts = [f"sentence number {i} talks about rivers mountains and the sea" for i in range(60)] + ["short"]
    batch = method.collate(cfg, tokenizer, texts, np.random.default_rng(0))
    view0 = {k: v[: len(texts)] for k, v in batch["views"].items()}
    labels, inputs = batch["mlm_labels"], batch["mlm"]["input_ids"]
    special = torch.isin(view0["input_ids"], torch.tensor(tokenizer.all_special_ids))
    chosen = labels != -100
    assert not chosen[special].any() and torch.equal(labels[chosen], view0["input_ids"][chosen])
    assert 0.11 < chosen.sum().item() / (~special).sum().item() < 0.19  # 15% of ~600 eligible tokens
    assert torch.equal(inputs[~chosen], view0["input_ids"][~chosen])
    masked = (inputs == tokenizer.mask_token_id) & chosen
    assert 0.7 < masked.sum().item() / chosen.sum().item() < 0.9


def test_decoder_shares_word_embeddings_and_is_causal(tiny_bert_dir):
    method = METHODS.get("paser")
    cfg = method.config("smoke", model=str(tiny_bert_dir), synonym_ratio=0.0, decoder_embeddings="word",
                        mlm_head="fresh", tie_head=True)  # the paper-text reading (the preset is the code's)
    module = PaSeRModule(cfg).eval()
    words = module.encoder.model.get_input_embeddings()
    assert module.decoder.embed_tokens is words and len(module.decoder.layers) == 6
    assert module.head.predictions.decoder.weight is words.weight  # fresh head tied to the word embeddings
    ids = torch.randint(1000, 2000, (2, 6))
    memory = torch.randn(2, 4, words.embedding_dim)
    out = module.decoder(input_ids=ids, encoder_hidden_states=memory).last_hidden_state
    ids2 = ids.clone()
    ids2[:, 4] = 3000
    out2 = module.decoder(input_ids=ids2, encoder_hidden_states=memory).last_hidden_state
    assert torch.allclose(out[:, :4], out2[:, :4]) and not torch.allclose(out[:, 4], out2[:, 4])


def test_decoder_io_ignores_unusable_rows():
    target = torch.tensor([[101, 7, 8, 102], [101, 9, 102, 0]])
    mask = (target != 0).long()
    inputs, labels = decoder_io(target, mask, torch.tensor([True, False]))
    assert inputs.tolist() == [[101, 7, 8], [101, 9, 102]]
    assert labels.tolist() == [[7, 8, 102], [-100, -100, -100]]


def test_missing_wordnet_message(tmp_path):
    with pytest.raises(MissingDataError, match="apt-get install wordnet-base"):
        load_wordnet(str(tmp_path))


@pytest.mark.skipif(find_wordnet_dir() is None, reason="WordNet database not installed (apt-get install wordnet-base)")
def test_wordnet_synonyms_from_debian_files(tokenizer):
    synonyms = wordnet_synonyms(load_wordnet())
    quick = synonyms("quick")
    assert "fast" in quick and "quick" not in quick and list(quick) == sorted(quick)
    assert "car" in synonyms("automobile")
    assert synonyms("the") == ()
    # The collate path with augmentation on: masks and targets untouched, other words replaced, deterministic.
    method = METHODS.get("paser")
    cfg = method.config("smoke", mlm_weight=0.0, top_k=1)
    texts = ["the quick brown fox jumps over the lazy dog", "At least 89 dead in china earthquakes"]
    a = method.collate(cfg, tokenizer, texts, np.random.default_rng(7))
    b = method.collate(cfg, tokenizer, texts, np.random.default_rng(7))
    assert all(torch.equal(a["views"][k], b["views"][k]) for k in a["views"])
    assert torch.equal(a["decoder_labels"], b["decoder_labels"])
    plain = method.collate(cfg.replace(synonym_ratio=0.0), tokenizer, texts, np.random.default_rng(7))
    assert not torch.equal(a["views"]["input_ids"][:2], plain["views"]["input_ids"][:2])  # s was augmented
    assert torch.equal(a["decoder_labels"], plain["decoder_labels"])  # targets come from the original s
    masked_view = tokenizer.decode(a["views"]["input_ids"][3], skip_special_tokens=False)
    assert "[MASK] [MASK] [MASK]" in masked_view  # "least 89 dead" stays masked word by word
