"""Issue 40, item 1: an in-memory model is filed under what determines its numbers, a different result under
the same identity is refused unless overwrite=True, reuse=True returns the stored result without encoding, and
an opt-in embedding cache is keyed by the identity and the text."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import usebench
from usebench.api.identity import named_identity, sentence_transformer_identity
from usebench.store import iter_results

ASSETS = Path(__file__).resolve().parents[1] / "assets"


class Counting:
    """A function that counts the texts it encodes."""

    def __init__(self, scale: float = 1.0):
        self.scale, self.texts = scale, 0

    def __call__(self, texts):
        self.texts += len(texts)
        return np.array([[len(t) * self.scale, t.count("e") + 1.0, 1.0] for t in texts])


@pytest.fixture(scope="module")
def tiny_st(tiny_bert_dir):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_bert_dir), device="cpu")


def test_a_sentence_transformers_identity_is_its_settings_and_weights(tiny_st, tiny_bert_dir):
    from sentence_transformers import SentenceTransformer

    same = SentenceTransformer(str(tiny_bert_dir), device="cpu")
    assert sentence_transformer_identity(same) == sentence_transformer_identity(tiny_st)
    short = SentenceTransformer(str(tiny_bert_dir), device="cpu")
    short.max_seq_length = 6
    assert sentence_transformer_identity(short)["hash"] != sentence_transformer_identity(tiny_st)["hash"]
    assert sentence_transformer_identity(short)["weights"] == sentence_transformer_identity(tiny_st)["weights"]
    with torch.no_grad():
        next(same.parameters())[0, 0] += 1.0  # one training step's worth
    assert sentence_transformer_identity(same)["weights"] != sentence_transformer_identity(tiny_st)["weights"]


def test_two_sentence_transformers_of_one_path_are_two_records(tiny_st, tiny_bert_dir, tmp_path):
    from sentence_transformers import SentenceTransformer

    short = SentenceTransformer(str(tiny_bert_dir), device="cpu")
    short.max_seq_length = 6
    a = usebench.evaluate(tiny_st, "stsb", data_root=ASSETS, results_dir=tmp_path, show_progress=False)
    b = usebench.evaluate(short, "stsb", data_root=ASSETS, results_dir=tmp_path, show_progress=False)
    assert a.attrs["run_id"] != b.attrs["run_id"] and len(list(iter_results(tmp_path))) == 2
    assert set(a["model"]) == set(b["model"]) and set(a["revision"]) != set(b["revision"])
    table = usebench.table(usebench.load_results(tmp_path))
    assert len(table) == 2  # two rows, never one averaged cell


def test_reuse_returns_the_stored_result_without_encoding(tmp_path):
    fn = Counting()
    first = usebench.evaluate(fn, ["stsb", "twitterpara"], data_root=ASSETS, results_dir=tmp_path, name="m",
                              show_progress=False)
    encoded = fn.texts
    again = usebench.evaluate(fn, ["stsb", "twitterpara"], data_root=ASSETS, results_dir=tmp_path, name="m",
                              reuse=True, show_progress=False)
    assert fn.texts == encoded and again.attrs["reused"] == ["stsb", "twitterpara"]
    assert again["value"].tolist() == first["value"].tolist()
    other = usebench.evaluate(Counting(2.0), "stsb", data_root=ASSETS, results_dir=tmp_path, name="m",
                              revision="v2", show_progress=False)  # another revision: another record
    assert other.attrs["run_id"] != first.attrs["run_id"] and set(other["revision"]) == {"v2"}
    with pytest.raises(ValueError, match="reuse=True reads stored results: pass the store as results_dir="):
        usebench.evaluate(fn, "stsb", data_root=ASSETS, name="m", reuse=True)


def test_a_named_identity_is_name_and_revision():
    assert named_identity(len, "f", None)["hash"] == named_identity(print, "f", "")["hash"]
    assert named_identity(len, "f", "v2")["hash"] != named_identity(len, "f", None)["hash"]
    assert "weights" in named_identity(torch.nn.Linear(2, 2), "f", None)


def test_the_embedding_cache_is_opt_in_and_keyed_by_identity(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    fn = Counting()
    usebench.evaluate(fn, "stsb", data_root=ASSETS, name="cached", cache=True, show_progress=False)
    encoded = fn.texts
    assert encoded and any((tmp_path / "cache").rglob("shard-*.npz"))
    usebench.evaluate(fn, "stsb", data_root=ASSETS, name="cached", cache=True, show_progress=False)
    assert fn.texts == encoded  # every text from the cache
    usebench.evaluate(fn, "stsb", data_root=ASSETS, name="cached", revision="v2", cache=True, show_progress=False)
    assert fn.texts == 2 * encoded  # another identity, another key
    usebench.evaluate(fn, "stsb", data_root=ASSETS, name="cached", show_progress=False)
    assert fn.texts == 3 * encoded  # without cache=True nothing is read
