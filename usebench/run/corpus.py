"""The unlabeled sentences a unit trains on: a task's in-domain corpus or ``--corpus`` files, de-duplicated and
optionally cut to a fixed, nested subsample (``--corpus-size``, the TSDAE paper's Fig. 3)."""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from usebench.data.corpus import read_corpus
from usebench.data.nli_sentences import is_named_corpus, named_corpus
from usebench.errors import ConfigError
from usebench.registry import TASKS
from usebench.train.plugin import TrainingData


def load_corpus(task: str | None, files: Sequence[str | Path], size: int | None, data_root: Path) -> TrainingData:
    """The task's unlabeled corpus, the concatenation of ``files`` (one sentence per line), or one named corpus
    of the data root (``allnli``, :mod:`usebench.data.nli_sentences`)."""
    if len(files) == 1 and is_named_corpus(files[0]):  # e.g. allnli: NLI sentences without labels (App. A)
        texts, sources = named_corpus(str(files[0]), data_root)
        label = str(files[0])
    elif files:
        texts = [t for f in files for t in read_corpus(f)]
        label, sources = "file:" + "+".join(Path(f).name for f in files), tuple(str(f) for f in files)
    else:
        if task is None:
            raise ConfigError("a training corpus needs a task or --corpus files")
        texts = TASKS.get(task).train_corpus(data_root)
        label, sources = task, tuple(TASKS.get(task).train_files())
    # Exact duplicate lines are dropped (first occurrence kept): a sentence twice in one batch is a false
    # negative for the contrastive methods, and the released USEB train files are already unique.
    unique = list(dict.fromkeys(texts))
    dropped, distinct = len(texts) - len(unique), len(unique)
    if size:
        unique = subsample_corpus(unique, size, label)
    return TrainingData(label, unique, text_sha256(unique), sources, dropped, distinct if size else None)


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
