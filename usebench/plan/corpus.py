"""The unlabeled sentences a unit trains on: a task's in-domain corpus or ``--corpus`` files, de-duplicated and
optionally cut to a fixed, nested subsample (``--corpus-size``, the TSDAE paper's Fig. 3)."""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from usebench.data.corpus import read_corpus
from usebench.data.digests import digest_file, fact
from usebench.data.memo import in_session, remember
from usebench.data.nli_sentences import ALLNLI, is_named_corpus, named_corpus
from usebench.errors import BenchError, ConfigError
from usebench.registry import TASKS
from usebench.train.plugin import TrainingData


def load_corpus(task: str | None, files: Sequence[str | Path], size: int | None, data_root: Path) -> TrainingData:
    """The task's unlabeled corpus, the concatenation of ``files`` (one sentence per line), or one named corpus
    of the data root (``allnli``, :mod:`usebench.data.nli_sentences`).

    While planning (:func:`usebench.data.memo.planning`) it is loaded once per session, and each ``--corpus-size``
    drawn from that one load; its label, hash and counts come from the digests (:mod:`usebench.data.digests`) when
    the files are unchanged, and its sentences are read only if a check needs them. They are shared: never change
    them."""
    named = [str(f) if is_named_corpus(f) else str(Path(f).resolve()) for f in files]  # the files, not their names
    key = (task, tuple(named), str(Path(data_root).resolve()))
    if not in_session():
        return _corpus(key, files, size, data_root)
    label, sources = _named(task, files, data_root)
    facts = fact("corpus", [*key, size], lambda: _facts(_corpus(key, files, size, data_root)))
    sentences = LazySentences(facts["count"], facts["sha256"], lambda: _corpus(key, files, size, data_root))
    return TrainingData(label, sentences, facts["sha256"], sources, facts["dropped"], facts["sampled_from"])


def _corpus(key: tuple, files: Sequence[str | Path], size: int | None, data_root: Path) -> TrainingData:
    """The corpus itself (memoised in a planning session by ``key``, which names ``files`` by their real paths)."""
    task = key[0]

    def load() -> TrainingData:
        label, sources, unique, dropped = remember(("corpus", *key), lambda: _distinct(task, files, data_root))
        if not size:
            return TrainingData(label, unique, text_sha256(unique), sources, dropped, None)
        sample = subsample_corpus(unique, size, label)
        return TrainingData(label, sample, text_sha256(sample), sources, dropped, len(unique))

    return remember(("corpus-data", *key, size), load)


def _facts(corpus: TrainingData) -> dict[str, Any]:
    return {"sha256": corpus.sha256, "count": len(corpus.examples), "dropped": corpus.duplicates_dropped,
            "sampled_from": corpus.sampled_from}


class LazySentences(Sequence[str]):
    """A corpus' sentences whose count and hash a digest gave: read when first needed (a check the digests do not
    hold), and refused if they are not what the digest said (a file changed behind an unchanged size and time)."""

    def __init__(self, count: int, sha256: str, load: Callable[[], TrainingData]):
        self._count, self._sha256, self._load, self._items = count, sha256, load, None

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i):  # type: ignore[override]
        return self._sentences()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sentences())

    def _sentences(self) -> list[str]:
        if self._items is None:
            corpus = self._load()  # its hash computed from what was just read
            items = corpus.examples
            if len(items) != self._count or corpus.sha256 != self._sha256:
                raise BenchError(f"a corpus changed on disk without a new size or modification time: its digest "
                                 f"says {self._count:,} sentences (sha256 {self._sha256[:12]}); delete "
                                 f"{digest_file()} and plan again")
            self._items = items
        return self._items


def _distinct(task: str | None, files: Sequence[str | Path],
              data_root: Path) -> tuple[str, tuple[str, ...], list[str], int]:
    """(label, source files, the distinct sentences in corpus order, duplicate lines dropped)."""
    label, sources = _named(task, files, data_root)
    if len(files) == 1 and is_named_corpus(files[0]):  # e.g. allnli: NLI sentences without labels (App. A)
        texts, sources = named_corpus(str(files[0]), data_root)
    elif files:
        texts = [t for f in files for t in read_corpus(f)]
    else:
        texts = TASKS.get(str(task)).train_corpus(data_root)
    # Exact duplicate lines are dropped (first occurrence kept): a sentence twice in one batch is a false
    # negative for the contrastive methods, and the released USEB train files are already unique.
    unique = list(dict.fromkeys(texts))
    return label, sources, unique, len(texts) - len(unique)


def _named(task: str | None, files: Sequence[str | Path], data_root: Path) -> tuple[str, tuple[str, ...]]:
    """(label, source files) of a corpus, without reading it."""
    if len(files) == 1 and is_named_corpus(files[0]):
        return str(files[0]), (str(Path(data_root) / ALLNLI),)
    if files:
        return "file:" + "+".join(Path(f).name for f in files), tuple(str(f) for f in files)
    if task is None:
        raise ConfigError("a training corpus needs a task or --corpus files")
    return task, tuple(TASKS.get(task).train_files())


def corpus_note(corpus: TrainingData) -> str | None:
    """``corpus a.toks: 42,200 lines -> 38,775 unique -> 128 sampled``, when lines were dropped or sampled."""
    distinct = corpus.sampled_from or len(corpus.examples)
    if not corpus.duplicates_dropped and corpus.sampled_from is None:
        return None
    note = f"corpus {corpus.label}: {distinct + corpus.duplicates_dropped:,} lines -> {distinct:,} unique"
    if corpus.sampled_from is not None:
        note += f" -> {len(corpus.examples):,} sampled (--corpus-size)"
    return note


def text_sha256(texts: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(texts).encode("utf-8", "surrogatepass")).hexdigest()


def subsample_corpus(texts: list[str], n: int, label: str) -> list[str]:
    """The first ``n`` sentences of one fixed permutation (seed 0), in corpus order: the same subset for every
    seed and method, and nested across sizes (the 128-sentence subset is inside the 256 one)."""
    import numpy as np

    if n > len(texts):
        raise ConfigError(f"--corpus-size {n}: the {label} corpus has only {len(texts)} distinct sentences")
    keep = np.sort(np.random.default_rng(0).permutation(len(texts))[:n])
    return [texts[i] for i in keep]
