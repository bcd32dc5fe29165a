"""The fast path (issue 36) on the CPU, its static shapes: length and labelled-row buckets, padded batches that keep
the masking draws, and the same losses as unpadded batches.

Tolerance of the loss-curve comparisons: relative 1e-4 per logged step in fp32, with every dropout off (tests/train/test_fast_path.py
says why).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.registry import METHODS
from usebench.train import loop, static_shapes
from usebench.train.batches import StepBatches
from usebench.train.tokenization import tokenize
from usebench.train.step_path import StepPath
from tests.methods.helpers import one_thread, tiny_config, toy_data
from tests.train.fast_path_helpers import (PROBE, assert_same_curve, losses,
                                          no_dropout_config, run)


# --- static shapes ---------------------------------------------------------------------------------------------

def test_buckets():
    assert [static_shapes.bucket(n, 16, 128) for n in (1, 16, 17, 33, 100, 128)] == [16, 16, 32, 64, 128, 128]
    assert static_shapes.bucket(70, 16, 75) == 75  # capped at max_length
    with pytest.raises(ValueError, match="exceeds its cap"):
        static_shapes.bucket(80, 16, 75)


def test_tokenize_pads_to_a_bucket_only_inside_a_static_collate(tiny_bert_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    texts = ["a dog", "the river runs past the old house and the tree"]
    plain = tokenize(tok, texts, 64, special_tokens_mask=True, word_ids=True)
    with static_shapes.static_shapes():
        padded = tokenize(tok, texts, 64, special_tokens_mask=True, word_ids=True)
    width = plain["input_ids"].shape[1]
    assert width < 16 and padded["input_ids"].shape == (2, 16)
    assert torch.equal(padded["input_ids"][:, :width], plain["input_ids"])
    assert (padded["input_ids"][:, width:] == tok.pad_token_id).all()
    assert (padded["attention_mask"][:, width:] == 0).all()
    assert padded["special_tokens_mask"][:, width:].all() and padded["word_ids"][1][width:] == [None] * (16 - width)
    assert static_shapes.natural_width(padded["attention_mask"]) == width


def test_a_left_padding_tokenizer_keeps_its_columns_and_its_masking_draws(left_padding_bert_dir):
    """Issue 50, defect 5: the bucket's extra columns go on the right of a left-padded batch too, so the first
    ``width`` columns are the pad-to-longest batch (where the masking draws are made) and every token keeps its
    column and position id. Extra pads on the left had masked other tokens than the eager collate."""
    from transformers import AutoTokenizer

    from usebench.methods.parts.noise import mask_tokens

    tok = AutoTokenizer.from_pretrained(left_padding_bert_dir)
    assert tok.padding_side == "left"
    texts = ["a dog", "the river runs past the old house and the tree", "kite"]
    plain = tokenize(tok, texts, 64, special_tokens_mask=True, word_ids=True)
    with static_shapes.static_shapes():
        padded = tokenize(tok, texts, 64, special_tokens_mask=True, word_ids=True)
    width = plain["input_ids"].shape[1]
    assert plain["attention_mask"][0, 0] == 0 and padded["input_ids"].shape == (3, 16)  # left-padded rows
    for key in ("input_ids", "attention_mask", "special_tokens_mask"):
        assert torch.equal(padded[key][:, :width], plain[key]), key
    assert (padded["attention_mask"][:, width:] == 0).all() and padded["word_ids"][1][width:] == [None] * (16 - width)
    draws = [mask_tokens(enc["input_ids"], enc["special_tokens_mask"], np.random.default_rng(0), mask_id=103,
                         vocab_size=3000, prob=0.5, width=static_shapes.natural_width(enc["attention_mask"]))
             for enc in (plain, padded)]
    assert torch.equal(draws[1][1][:, :width], draws[0][1]) and (draws[1][1][:, width:] == -100).all()


@pytest.mark.parametrize("name", ["mlm", "tsdae", "ct"])
def test_static_shapes_give_the_same_losses_with_a_left_padding_tokenizer(name, left_padding_bert_dir, tmp_path,
                                                                          monkeypatch, without_dropout):
    """Masking noise (MLM), a decoder's shifted targets (TSDAE), [CLS] pooling (CT) with left padding: bucket
    padding is still the same math (measured over every trainer: within 4e-6; 0.1% to 56% apart before)."""
    method = without_dropout(METHODS.get(name))
    cfg = no_dropout_config(method, left_padding_bert_dir, max_steps=3, log_every=1, max_length=40)
    reference = run(method, cfg, tmp_path / "ref", "off")
    _static_only(monkeypatch)
    assert_same_curve(losses(reference), losses(run(method, cfg, tmp_path / "static", "on")))


def test_labelled_positions_pad_to_a_count_bucket_with_ignored_targets():
    from usebench.methods.parts.heads import label_positions

    labels = torch.full((3, 5), -100)
    labels[0, 1], labels[2, 4] = 7, 9
    with static_shapes.static_shapes():
        positions, targets = label_positions(labels)
        empty = label_positions(torch.full((2, 2), -100))
    assert positions.tolist()[:2] == [1, 14] and positions.numel() == static_shapes.MIN_LABELS
    assert targets.tolist()[:2] == [7, 9] and (targets[2:] == -100).all() and (positions[2:] == 0).all()
    assert empty[0].numel() == 0  # no labels stay no labels


def test_masking_draws_are_the_same_on_padded_batches():
    from usebench.methods.parts.noise import mask_tokens

    ids = torch.randint(1000, 2000, (4, 9))
    special = torch.zeros(4, 9, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    plain = mask_tokens(ids, special, np.random.default_rng(0), mask_id=103, vocab_size=3000)
    wide_ids = torch.cat([ids, torch.zeros(4, 7, dtype=ids.dtype)], dim=1)
    wide_special = torch.cat([special, torch.ones(4, 7, dtype=torch.bool)], dim=1)
    wide = mask_tokens(wide_ids, wide_special, np.random.default_rng(0), mask_id=103, vocab_size=3000, width=9)
    assert torch.equal(wide[0][:, :9], plain[0]) and torch.equal(wide[1][:, :9], plain[1])
    assert (wide[1][:, 9:] == -100).all()


def _token_widths(batch, found: list[int], counts: list[int], key: str = "") -> None:
    """Collect the widths of token tensors and the lengths of labelled-position tensors anywhere in ``batch``."""
    if isinstance(batch, dict):
        for k, v in batch.items():
            _token_widths(v, found, counts, k)
    elif isinstance(batch, (list, tuple)):
        if key.endswith("_targets") and len(batch) == 2 and all(isinstance(t, torch.Tensor) for t in batch):
            counts.append(batch[0].numel())  # PaSeR's (positions, targets) pairs
        else:
            for v in batch:
                _token_widths(v, found, counts, key)
    elif isinstance(batch, torch.Tensor):
        if key in ("input_ids", "attention_mask", "target_ids", "masked_ids", "decoder_input_ids"):
            found.append(batch.shape[1] + (1 if key == "decoder_input_ids" else 0))
        elif key in ("label_positions", "label_targets"):
            counts.append(batch.numel())


@pytest.mark.parametrize("name", METHODS.names())
def test_batches_carry_bucketed_shapes(name, tiny_bert_dir):
    from transformers import AutoTokenizer

    method = METHODS.get(name)
    cfg = tiny_config(method, tiny_bert_dir)
    data = StepBatches(method, cfg, AutoTokenizer.from_pretrained(tiny_bert_dir), toy_data(method), 0, 0, 1, 0, 3)
    data.static_shapes = True
    widths: list[int] = []
    counts: list[int] = []
    for step in range(3):
        _token_widths(data.batch(step), widths, counts)
    assert widths and set(widths) <= {16, 32}, widths  # buckets of max_length 32
    assert all(c == 0 or (c >= static_shapes.MIN_LABELS and c & (c - 1) == 0) for c in counts), counts


def _static_only(monkeypatch) -> None:
    """Runs asked for ``on`` take a fast path with static shapes alone: no compile, the reference optimizers."""
    monkeypatch.setattr(loop, "resolve_step_path",
                        lambda *a, **k: StepPath(fast=True, static_shapes=True, notes=("static shapes only",)))


@pytest.mark.parametrize("name", METHODS.names())
def test_static_shapes_alone_give_the_same_losses(name, tiny_bert_dir, tmp_path, monkeypatch, without_dropout):
    """Bucket padding (with the skipped pooler and padded vocabulary heads) is the same math: the loss of every step
    within RTOL of pad-to-longest, dropout off."""
    method = without_dropout(METHODS.get(name))
    cfg = no_dropout_config(method, tiny_bert_dir, max_steps=3, log_every=1, max_length=40)
    reference = run(method, cfg, tmp_path / "ref", "off")
    _static_only(monkeypatch)
    result = run(method, cfg, tmp_path / "static", "on")
    assert result.step_path["static_shapes"] and not result.step_path["compile"]
    assert_same_curve(losses(reference), losses(result))
    # and the exported encoders embed alike, so they score alike (not weight by weight: Adam's m / sqrt(v) turns a
    # rounding-sized gradient into a full-sized step of either sign, e.g. in a flow's ActNorm)
    from usebench.eval.encoder import HFEncoder

    with one_thread():
        a, b = (HFEncoder(str(r.checkpoint), device="cpu", show_progress=False).encode(PROBE)
                for r in (reference, result))
    np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-3 * float(np.abs(a).max()))
