"""Average word vectors (``--model wordvec:PATH``): the same embeddings as sentence-transformers'
WordEmbeddings + WhitespaceTokenizer + mean Pooling on a tiny GloVe-format file, and clear errors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from usebench.errors import BenchError, DataFormatError
from usebench.eval.wordvec import WordVecEncoder, read_vectors

GLOVE = Path(__file__).resolve().parents[1] / "assets" / "wordvec" / "tiny_glove.txt"
PROBE = ["The river runs past the house.", "Paris, paris and PARIS!", "how to install java on ubuntu 12.04",
         "wifi stopped after the upgrade , no sound", "a kite over the ocean at night"]


def test_same_vectors_as_sentence_transformers():
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling, WordEmbeddings

    words = WordEmbeddings.from_text_file(str(GLOVE))
    st = SentenceTransformer(modules=[words, Pooling(words.get_word_embedding_dimension(), "mean")], device="cpu")
    ref = st.encode(PROBE, convert_to_numpy=True)
    ours = WordVecEncoder(GLOVE).encode(PROBE)
    np.testing.assert_allclose(ours, ref, atol=1e-6)


def test_tokens_by_hand():
    enc = WordVecEncoder(GLOVE)
    index, vecs = read_vectors(GLOVE)
    # "The" is a stop word once lower-cased; "house." loses its period; "PARIS!" -> "PARIS" -> "paris";
    # punctuation tokens are stop words even when the file has a vector for them.
    assert enc.token_ids("The house. ,") == [index["house"]]
    assert enc.token_ids("Paris PARIS! unknownword") == [index["Paris"], index["paris"]]
    np.testing.assert_allclose(enc.encode(["river sun"])[0], (vecs[index["river"]] + vecs[index["sun"]]) / 2)
    assert not enc.encode(["the of and"]).any()  # no known token: the zero vector


def test_errors_name_the_file_and_line(tmp_path):
    bad = tmp_path / "v.txt"
    bad.write_text("a 1 2 3\nb 1 2\n")
    with pytest.raises(DataFormatError, match=r"v.txt:2: expected 3 values after the word"):
        read_vectors(bad)
    bad.write_text("a 1 x 3\n")
    with pytest.raises(DataFormatError, match=r"v.txt:1: expected numbers"):
        read_vectors(bad)
    with pytest.raises(BenchError, match="does not exist"):
        WordVecEncoder(tmp_path / "missing.txt")
    (tmp_path / "w2v.txt").write_text("2 3\na 1 2 3\nb 4 5 6\n")  # word2vec header skipped
    assert read_vectors(tmp_path / "w2v.txt")[1].shape == (2, 3)


def test_bench_eval_wordvec_on_sts_fixture(tmp_path):
    """`bench eval --model wordvec:PATH` stores a result with the wordvec method and the file's hash."""
    import json

    from usebench.plan.eval_options import EvalOptions

    from usebench.run.evaluation import evaluate_model

    assets = Path(__file__).resolve().parents[1] / "assets"
    words = sorted({w for line in (assets / "sts/senteval/STSBenchmark/sts-test.csv").read_text().splitlines()
                    for w in " ".join(line.split("\t")[5:7]).split()})
    rng = np.random.default_rng(0)
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("".join(f"{w} {' '.join(f'{x:.4f}' for x in rng.normal(size=8))}\n" for w in words))
    out = evaluate_model(EvalOptions(model=f"wordvec:{vectors}"), "stsb", "test", assets, tmp_path / "results",
                         strict=True)
    assert out.evaluations and np.isfinite(out.evaluations[0].main_score)
    record = json.loads(next((tmp_path / "results").rglob("test.json")).read_text())
    assert record["method"]["name"] == "wordvec" and record["config"]["vectors_sha256"]
