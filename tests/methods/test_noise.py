"""Noise functions: TSDAE word deletion and BERT masking, checked statistically and by hand."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from usebench.methods.parts.noise import delete_words, mask_tokens, word_tokenize
from tests.methods.helpers import WORDS


def _sentences(n: int, seed: int = 0) -> list[str]:
    r = np.random.default_rng(seed)
    return [" ".join(r.choice(WORDS, size=r.integers(8, 17))) for _ in range(n)]


def test_deletes_sixty_percent_of_words_over_10k_sentences():
    rng = np.random.default_rng(0)
    sents = _sentences(10_000)
    # Plain words without punctuation: whitespace splitting counts exactly the NLTK words.
    kept = sum(len(delete_words(s, 0.6, rng).split()) for s in sents)
    total = sum(len(s.split()) for s in sents)
    # METHODS.md sanity check: kept fraction 0.40 +- 0.01 (the v3 example's bug would keep 0.60).
    assert abs(kept / total - 0.40) < 0.01


def test_deletion_keeps_order_one_word_and_is_seeded():
    rng = np.random.default_rng(1)
    for s in _sentences(200):
        out = word_tokenize(delete_words(s, 0.6, rng))
        src = iter(word_tokenize(s))
        assert out and all(w in src for w in out)  # a subsequence of the original words
    assert delete_words("solitary", 0.99, np.random.default_rng(0)) == "solitary"
    assert delete_words("", 0.6, np.random.default_rng(0)) == ""
    a = delete_words("one two three four five six", 0.6, np.random.default_rng(7))
    assert a == delete_words("one two three four five six", 0.6, np.random.default_rng(7))


def test_treebank_round_trip_without_punkt():
    text = "Don't split me, please: it's (nearly) fine!"
    assert word_tokenize(text)[:3] == ["Do", "n't", "split"]
    assert delete_words(text, 0.0, np.random.default_rng(0)) == text


def _batch(bsz=400, length=40, pad_from=30):
    ids = torch.randint(1000, 2000, (bsz, length))
    special = torch.zeros(bsz, length, dtype=torch.bool)
    special[:, 0] = special[:, pad_from - 1] = True  # [CLS] ... [SEP]
    special[:, pad_from:] = True  # padding
    return ids, special


def test_masking_rates_and_specials():
    ids, special = _batch()
    out, labels = mask_tokens(ids, special, np.random.default_rng(0), mask_id=103, vocab_size=30522)
    selected = labels != -100
    assert not selected[special].any() and torch.equal(out[special], ids[special])
    assert torch.equal(labels[selected], ids[selected])
    assert abs(selected.sum().item() / (~special).sum().item() - 0.15) < 0.01
    masked = (out == 103) & selected
    changed = (out != ids) & ~masked & selected
    n = selected.sum().item()
    assert abs(masked.sum().item() / n - 0.8) < 0.02
    assert abs(changed.sum().item() / n - 0.1) < 0.02  # random replacements (a few hit the same id: ~1e-5)
    assert torch.equal(out[~selected], ids[~selected])


def test_whole_word_masking_selects_all_pieces_of_a_word():
    ids, special = _batch(bsz=50, length=12, pad_from=12)
    word_ids = [[None] + [i // 2 for i in range(10)] + [None] for _ in range(50)]  # words of 2 pieces
    _, labels = mask_tokens(ids, special, np.random.default_rng(0), mask_id=103, vocab_size=30522, prob=0.3,
                            word_ids=word_ids, lengths=[12] * 50)
    sel = (labels != -100)[:, 1:11].reshape(50, 5, 2)
    assert torch.equal(sel[..., 0], sel[..., 1]) and sel.any()
    # Budget round(0.3 x 12 tokens, [CLS]/[SEP] counted) = 4 = exactly two 2-piece words in every row.
    assert ((labels != -100).sum(dim=1) == 4).all()


def test_whole_word_budget_is_fixed_and_skips_words_that_would_overflow_it():
    """transformers 4.x DataCollatorForWholeWordMask: num_to_predict = max(1, round(0.15 x len(tokens)));
    words are taken in random order while they fit. Hand-computed budgets for single- and multi-piece words."""
    ids, special = _batch(bsz=200, length=22, pad_from=22)
    single = [[None] + list(range(20)) + [None] for _ in range(200)]  # 20 one-piece words: budget round(3.3) = 3
    _, labels = mask_tokens(ids, special, np.random.default_rng(1), mask_id=103, vocab_size=30522,
                            word_ids=single, lengths=[22] * 200)
    assert ((labels != -100).sum(dim=1) == 3).all()
    # One 3-piece word then 17 one-piece words: the 3-piece word fits only when it comes first, else 3 singles.
    mixed = [[None, 0, 0, 0] + list(range(1, 18)) + [None] for _ in range(200)]
    _, labels = mask_tokens(ids, special, np.random.default_rng(2), mask_id=103, vocab_size=30522,
                            word_ids=mixed, lengths=[22] * 200)
    sel = labels != -100
    assert (sel.sum(dim=1) == 3).all()
    long_word = sel[:, 1:4]
    assert torch.equal(long_word.all(dim=1), long_word.any(dim=1))  # all of its pieces or none
    assert 0 < long_word.all(dim=1).float().mean() < 0.2  # chosen only when drawn first (~1/18)


@pytest.mark.parametrize("prob", [0.0, 1.0])
def test_masking_extremes(prob):
    ids, special = _batch(bsz=4)
    _, labels = mask_tokens(ids, special, np.random.default_rng(0), mask_id=103, vocab_size=10, prob=prob)
    assert torch.equal(labels != -100, ~special if prob else torch.zeros_like(special))
