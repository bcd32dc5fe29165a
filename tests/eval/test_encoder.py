"""HFEncoder: de-duplicated, length-sorted, padded batches give the embeddings of encoding each text on its own.

The reference is computed here with plain transformers, one unpadded text at a time, with the pooling written out.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
import torch

from usebench.eval.encoder import HFEncoder

TEXTS = [
    "a short one",
    "A much longer sentence, with punctuation; it pads every shorter text in its batch quite a lot!",
    "a short one",  # duplicate
    "medium length sentence here",
    "x",
    "Another fairly long sentence that ends up in the first length-sorted batch of three",
    "x",  # duplicate
    "tweets r fun :) #nlp",
]


@lru_cache(maxsize=1)
def load(model_dir):
    from transformers import AutoModel, AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir), AutoModel.from_pretrained(model_dir).eval()


def reference(model_dir, text: str, pooling: str) -> np.ndarray:
    """One text, no padding: pooling over all its tokens."""
    tokenizer, model = load(model_dir)
    with torch.inference_mode():
        out = model(**tokenizer(text, return_tensors="pt"), output_hidden_states=True)
    first, last = out.hidden_states[0][0], out.hidden_states[-1][0]  # (seq, dim)
    pooled = {"mean": last.mean(0), "cls": last[0], "max": last.max(0).values,
              "first_last_avg": ((first + last) / 2).mean(0)}[pooling]
    return pooled.numpy()


@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "first_last_avg"])
def test_batched_dedup_encoding_equals_one_text_at_a_time(tiny_bert_dir, pooling):
    encoder = HFEncoder(str(tiny_bert_dir), pooling=pooling, batch_size=3, device="cpu", show_progress=False)
    batched = encoder.encode(TEXTS)
    assert batched.shape == (len(TEXTS), 32) and batched.dtype == np.float32
    expected = np.stack([reference(tiny_bert_dir, t, pooling) for t in TEXTS])
    np.testing.assert_allclose(batched, expected, atol=1e-5)
    alone = np.concatenate([encoder.encode([t]) for t in TEXTS])
    np.testing.assert_allclose(batched, alone, atol=1e-5)


def test_each_unique_text_goes_through_the_model_once(tiny_bert_dir):
    encoder = HFEncoder(str(tiny_bert_dir), pooling="mean", batch_size=3, device="cpu", show_progress=False)
    rows, forward = [], encoder._forward

    def counting_forward(features):
        rows.append(int(features["input_ids"].shape[0]))
        return forward(features)

    encoder._forward = counting_forward
    out = encoder.encode(TEXTS)
    assert sum(rows) == len(set(TEXTS)) == 6 and rows == [3, 3]
    assert np.array_equal(out[0], out[2]) and np.array_equal(out[4], out[6])
    assert encoder.encode([]).shape == (0, 32)


def test_evaluation_is_fp32_on_every_device_unless_bf16_is_asked_for(tiny_bert_dir, tmp_path):
    """The default precision does not depend on the device (it used to switch to bf16 autocast on a GPU); bf16
    is explicit, changes the vectors, and is in the description and the cache key."""
    fp32 = HFEncoder(str(tiny_bert_dir), pooling="mean", device="cpu", show_progress=False, cache_dir=str(tmp_path))
    fp32.device = torch.device("cuda")  # the policy alone: no GPU needed to see which dtype would be used
    assert fp32._autocast_dtype() is None
    fp32.device = torch.device("cpu")
    bf16 = HFEncoder(str(tiny_bert_dir), pooling="mean", device="cpu", show_progress=False, cache_dir=str(tmp_path),
                     precision="bf16")
    assert (fp32.describe()["precision"], fp32.describe()["dtype"]) == ("fp32", "float32")
    assert (bf16.describe()["precision"], bf16.describe()["dtype"]) == ("bf16", "bfloat16-autocast")
    assert fp32.cache_key() != bf16.cache_key()
    a, b = fp32.encode(TEXTS), bf16.encode(TEXTS)
    assert 0 < np.abs(a - b).max() < 0.1  # bf16 keeps ~3 significant digits
    expected = np.stack([reference(tiny_bert_dir, t, "mean") for t in TEXTS])
    np.testing.assert_allclose(a, expected, atol=1e-5)
    with pytest.raises(Exception, match="precision"):
        HFEncoder(str(tiny_bert_dir), device="cpu", show_progress=False, precision="fp16")
