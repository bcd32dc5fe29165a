"""Average word vectors: the TSDAE paper's "Avg. GloVe" row (Table 2) from any local vectors file.

``--model wordvec:PATH`` reads a text file in GloVe format (``word v1 ... vd`` per line, space-separated; a
word2vec ``N D`` header line is skipped; ``.gz`` is decompressed) and embeds a sentence as the mean of the
vectors of its tokens, as sentence-transformers' ``average_word_embeddings_*`` models do (``WordEmbeddings``
+ ``WhitespaceTokenizer`` + mean ``Pooling``): split on whitespace; a token is dropped if it is one of
the tokenizer's default stop words (English words and punctuation), else looked up as is, then with punctuation
stripped from its ends, then lower-cased; unknown tokens are dropped. A sentence without a known token gets the
zero vector (cosine 0 with everything). A line whose number of values differs from the first line's is an
error naming the line (sentence-transformers logs and skips it).
"""
from __future__ import annotations

import gzip
import hashlib
import string
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from usebench.errors import BenchError, DataFormatError

PREFIX = "wordvec:"


def stop_words() -> frozenset[str]:
    """The tokenizer's default stop-word list: sentence-transformers' ``ENGLISH_STOP_WORDS`` (386 entries,
    ASCII punctuation included; the same set in v0.3.8, the version the TSDAE paper used, and in v6)."""
    try:
        from sentence_transformers.sentence_transformer.modules.tokenizer import ENGLISH_STOP_WORDS
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.models.tokenizer import ENGLISH_STOP_WORDS
    return frozenset(ENGLISH_STOP_WORDS)


def read_vectors(path: Path) -> tuple[dict[str, int], np.ndarray]:
    """(word -> row, matrix (n_words, dim) float32) of a GloVe/word2vec text file."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"word-vector file {path} does not exist (--model wordvec:PATH takes a local GloVe-format file)")
    opener = gzip.open if path.suffix == ".gz" else open
    index: dict[str, int] = {}
    rows: list[np.ndarray] = []
    dim = None
    with opener(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip().split(" ")
            if lineno == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # word2vec header "n_words dim"
            if len(parts) < 2 or not parts[0]:
                raise DataFormatError(path, lineno, "a word followed by its vector, space-separated", line.rstrip())
            dim = dim or len(parts) - 1
            if len(parts) - 1 != dim:
                raise DataFormatError(path, lineno, f"{dim} values after the word (as on the first line)",
                                      f"{len(parts) - 1} values")
            try:
                vec = np.asarray(parts[1:], dtype=np.float32)
            except ValueError:
                raise DataFormatError(path, lineno, "numbers after the word", line.rstrip()) from None
            index[parts[0]] = len(rows)  # a repeated word: the later vector wins, as a dict built in order
            rows.append(vec)
    if not rows:
        raise DataFormatError(path, None, "at least one word vector")
    return index, np.stack(rows)


def vectors_sha256(path: str | Path) -> str:
    """Content hash of a vectors file, read in chunks (the run id is known before the vectors are loaded)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise BenchError(f"word-vector file {path} does not exist (--model wordvec:PATH takes a local GloVe-format file)")
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class WordVecEncoder:
    """Mean of the word vectors of a sentence's tokens (see the module docstring)."""

    pooling = "mean"
    max_length = 0  # no truncation: every token counts

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self.name = f"{PREFIX}{path}"
        self.index, self.vectors = read_vectors(self.path)
        self.stop = stop_words()
        self._sha = None

    def token_ids(self, text: str) -> list[int]:
        """Known tokens of ``text`` after the stop-word / punctuation / lower-case rules."""
        ids = []
        for token in text.split():
            for candidate in (token, token.strip(string.punctuation), token.strip(string.punctuation).lower()):
                if candidate in self.stop:
                    break
                if candidate and candidate in self.index:
                    ids.append(self.index[candidate])
                    break
        return ids

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.vectors.shape[1]), dtype=np.float32)
        for i, text in enumerate(texts):
            ids = self.token_ids(text)
            if ids:
                out[i] = self.vectors[ids].mean(axis=0)
        return out

    def sha256(self) -> str:
        """Content hash of the vectors file (the model's identity in run ids)."""
        if self._sha is None:
            self._sha = vectors_sha256(self.path)
        return self._sha

    def describe(self) -> dict:
        return {"model": self.name, "kind": "average word vectors", "pooling": self.pooling,
                "vocabulary": len(self.index), "dim": int(self.vectors.shape[1]), "sha256": self.sha256()}
