"""Named unlabeled corpora built from labeled files the suite already reads: ``allnli`` is the SNLI + MultiNLI
sentences without their labels (TSDAE paper App. A: "we train the models on the combination of SNLI and
MultiNLI without labels", as CT and BERT-flow did), i.e. every premise and hypothesis of ``nli/AllNLI.tsv``'s
train split, each once, in file order."""
from __future__ import annotations

from pathlib import Path

from usebench.data.labeled import read_allnli
from usebench.errors import MissingDataError

ALLNLI = "nli/AllNLI.tsv"
NAMED_CORPORA = ("allnli",)


def is_named_corpus(name: str | Path) -> bool:
    """Whether ``--corpus NAME`` names a corpus of the data root rather than a file."""
    return str(name) in NAMED_CORPORA


def named_corpus(name: str, data_root: Path) -> tuple[list[str], tuple[str, ...]]:
    """(sentences, source files) of the named corpus ``name`` under ``data_root``."""
    path = Path(data_root) / ALLNLI
    if not path.is_file():
        raise MissingDataError("AllNLI (SNLI + MultiNLI)", path, "bench data download nli")
    rows = read_allnli(path, "train")
    sentences = list(dict.fromkeys(s for s1, s2, _ in rows for s in (s1, s2) if s))
    return sentences, (str(path),)
