"""On-disk embedding cache keyed by (model fingerprint, pooling, max length, text hash).

Each encode call that computes new vectors appends one shard (``.npz`` with text hashes and float32 vectors),
written atomically, so concurrent or interrupted runs never leave a half-written file that a later run reads.
"""
from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

import numpy as np

from usebench.store import mkstemp_shared


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors for one encoder configuration, in ``root/<key>/shard-*.npz``."""

    def __init__(self, root: str | Path, key: str):
        self.dir = Path(root) / key
        self._vectors: dict[str, np.ndarray] | None = None

    def _load(self) -> dict[str, np.ndarray]:
        if self._vectors is None:
            self._vectors = {}
            for shard in sorted(self.dir.glob("shard-*.npz")):
                with np.load(shard) as data:
                    for k, v in zip(data["keys"], data["vectors"]):
                        self._vectors[str(k)] = v
        return self._vectors

    def get_many(self, texts: list[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``texts`` (text -> vector)."""
        store = self._load()
        return {t: store[k] for t in texts if (k := text_key(t)) in store}

    def put_many(self, texts: list[str], vectors: np.ndarray) -> None:
        if not texts:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        keys = np.array([text_key(t) for t in texts])
        fd, tmp = mkstemp_shared(self.dir, suffix=".tmp")  # group-readable in a shared cache
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, keys=keys, vectors=vectors.astype(np.float32))
        os.replace(tmp, self.dir / f"shard-{uuid.uuid4().hex}.npz")
        store = self._load()
        store.update({str(k): v for k, v in zip(keys, vectors)})
