"""STS12-16, STS-benchmark and SICK-R: Spearman of cosine similarity vs the gold similarity score.

Data, as SentEval reads it (Conneau & Kiela 2018; SimCSE's copy, ``SentEval/senteval/sts.py``):
- STS12-16 (Agirre et al. 2012-2016): ``sts/senteval/STS1x-en-test/STS.input.<subset>.txt`` (``s1 \\t s2``,
  Moses-tokenised and lowercased by SentEval's ``get_transfer_data.bash``) and ``STS.gs.<subset>.txt`` (one score
  a line; a blank line is an unscored pair and is dropped). STS13 has no SMT subset (not distributed).
- STS-benchmark (Cer et al. 2017): ``sts/senteval/STSBenchmark/sts-{dev,test}.csv``, tab-separated
  ``genre, file, year, id, score, s1, s2`` (sentences tokenised and lowercased the same way).
- SICK (Marelli et al. 2014): ``sick/SICK_{trial,test_annotated}.txt``, the official release with a header and
  ``pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment``. SentEval Moses-tokenises the two
  sentence columns at download time (``tokenizer.perl -l en -no-escape``, no lowercasing); this adapter applies
  the same tokeniser at load time (``usebench.data.senteval.moses_tokenize``, the port that reproduces SentEval's
  STS files), since the data root keeps the SICK release as published.

Protocol (SimCSE ``evaluation.py``, test mode): sentences are whitespace-split and re-joined (SentEval's
``s.split()``); cosine similarity per pair; STS12-16 report the "all" setting, i.e. one Spearman over the pairs
of all subsets of a year pooled (SentEval's ``results['all']['spearman']['all']``; not the per-subset "mean" or
size-weighted "wmean"); STSb and SICK-R report Spearman on their test split. Pearson is computed the same way.
Per-subset scores are kept in ``subsets()``. Everything is reported x100 at display only.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np

from usebench.data.corpus import read_corpus
from usebench.errors import DataFormatError, MissingDataError
from usebench.eval.items import Recipe
from usebench.registry import TASKS
from usebench.data.senteval import moses_tokenize
from usebench.tasks.base import parse_float, split_fields
from usebench.data.corpus import read_lines
from usebench.tasks.release import Count
from usebench.tasks.pairs import (
    PairSet,
    PairTask,
    check_aligned,
    correlations,
    make_pairset,
    require_pairs,
)

Format = Literal["senteval", "stsb", "sick"]


@dataclass(frozen=True)
class StsSpec:
    """One STS set: its folder under the data root, its file format, and the subsets (or files) per split."""

    name: str
    fmt: Format
    directory: str
    test: tuple[str, ...]  # "senteval": subset names (STS.input.<subset>.txt); else file names
    dev: tuple[str, ...] = ()
    description: str = ""
    counts: Mapping[str, int] = field(default_factory=dict)  # scored pairs per subset / file, as released
    source: str = ""  # where ``counts`` come from


# Subsets as SentEval's STS12Eval..STS16Eval list them, each with the scored pairs its release publishes (the
# STS task papers, Agirre et al. 2012-2016; totals STS12 3108, STS13 1500, STS14 3750, STS15 3000, STS16 1186;
# STSb dev 1500 / test 1379, Cer et al. 2017; SICK trial 500 / test 4927, Marelli et al. 2014).
SPECS: tuple[StsSpec, ...] = (
    StsSpec("sts12", "senteval", "sts/senteval/STS12-en-test",
            ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
            description="STS 2012, 3108 pairs",
            counts={"MSRpar": 750, "MSRvid": 750, "SMTeuroparl": 459, "surprise.OnWN": 750, "surprise.SMTnews": 399},
            source="STS 2012 release (Agirre et al. 2012)"),
    StsSpec("sts13", "senteval", "sts/senteval/STS13-en-test", ("FNWN", "headlines", "OnWN"),
            description="STS 2013 without SMT, 1500 pairs", counts={"FNWN": 189, "headlines": 750, "OnWN": 561},
            source="STS 2013 release (Agirre et al. 2013)"),
    StsSpec("sts14", "senteval", "sts/senteval/STS14-en-test",
            ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
            description="STS 2014, 3750 pairs",
            counts={"deft-forum": 450, "deft-news": 300, "headlines": 750, "images": 750, "OnWN": 750,
                    "tweet-news": 750},
            source="STS 2014 release (Agirre et al. 2014)"),
    StsSpec("sts15", "senteval", "sts/senteval/STS15-en-test",
            ("answers-forums", "answers-students", "belief", "headlines", "images"),
            description="STS 2015, 3000 pairs",
            counts={"answers-forums": 375, "answers-students": 750, "belief": 375, "headlines": 750, "images": 750},
            source="STS 2015 release (Agirre et al. 2015)"),
    StsSpec("sts16", "senteval", "sts/senteval/STS16-en-test",
            ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
            description="STS 2016, 1186 pairs",
            counts={"answer-answer": 254, "headlines": 249, "plagiarism": 230, "postediting": 244,
                    "question-question": 209},
            source="STS 2016 release (Agirre et al. 2016)"),
    StsSpec("stsb", "stsb", "sts/senteval/STSBenchmark", ("sts-test.csv",), ("sts-dev.csv",),
            description="STS-benchmark, test 1379 / dev 1500 pairs", counts={"sts-test.csv": 1379, "sts-dev.csv": 1500},
            source="STS-benchmark release (Cer et al. 2017)"),
    StsSpec("sickr", "sick", "sick", ("SICK_test_annotated.txt",), ("SICK_trial.txt",),
            description="SICK relatedness, test 4927 / trial (dev) 500 pairs",
            counts={"SICK_test_annotated.txt": 4927, "SICK_trial.txt": 500},
            source="SICK SemEval-2014 release (Marelli et al. 2014)"),
)


def words(text: str) -> str:
    """SentEval's view of a sentence: whitespace-split tokens joined by one space."""
    return " ".join(text.split())


def read_senteval_subset(directory: Path, subset: str) -> PairSet:
    """``STS.input.<subset>.txt`` + ``STS.gs.<subset>.txt``; pairs with a blank gold line are unscored, dropped."""
    input_path, gold_path = directory / f"STS.input.{subset}.txt", directory / f"STS.gs.{subset}.txt"
    inputs, golds = read_lines(input_path), read_lines(gold_path)
    check_aligned(input_path, len(inputs), gold_path, len(golds))
    rows = []
    for lineno, (line, gold) in enumerate(zip(inputs, golds), 1):
        s1, s2 = split_fields(input_path, lineno, line, 2, 2, "(sentence1, sentence2)")
        if gold.strip():
            rows.append((words(s1), words(s2), parse_float(gold_path, lineno, gold, "gold similarity")))
    return require_pairs(make_pairset(subset, rows), gold_path)


def read_stsb(path: Path) -> PairSet:
    """STS-benchmark csv: score in the 5th field, sentences in the 6th and 7th (source fields may follow)."""
    rows = []
    for lineno, line in enumerate(read_lines(path), 1):
        fields = split_fields(path, lineno, line.strip(), 7, 9, "(genre, file, year, id, score, s1, s2[, src1, src2])")
        rows.append((words(fields[5]), words(fields[6]), parse_float(path, lineno, fields[4], "gold score")))
    return require_pairs(make_pairset(path.stem, rows), path)


def read_sick(path: Path) -> PairSet:
    """SICK release file (header line, CRLF tolerated): relatedness in the 4th field, sentences Moses-tokenised."""
    lines = read_lines(path)
    if not lines or not lines[0].startswith("pair_ID\t"):
        raise DataFormatError(path, 1, "the SICK header 'pair_ID\\tsentence_A\\tsentence_B\\trelatedness_score\\t...'",
                              lines[0] if lines else "an empty file")
    rows = []
    for lineno, line in enumerate(lines[1:], 2):
        fields = split_fields(path, lineno, line.strip(), 5, 5,
                              "(pair_ID, sentence_A, sentence_B, relatedness, entailment)")
        score = parse_float(path, lineno, fields[3], "relatedness score")
        rows.append((words(moses_tokenize(fields[1])), words(moses_tokenize(fields[2])), score))
    return require_pairs(make_pairset(path.stem, rows), path)


# format -> reader(directory, subset or file name)
READERS: dict[Format, Callable[[Path, str], PairSet]] = {
    "senteval": read_senteval_subset,
    "stsb": lambda directory, name: read_stsb(directory / name),
    "sick": lambda directory, name: read_sick(directory / name),
}


class StsTask(PairTask):
    """An STS set: Spearman (main) and Pearson of cosine vs gold, over all its subsets pooled."""

    spec: ClassVar[StsSpec]
    group: ClassVar[str] = "sts"
    dataset: ClassVar[str] = "sts"
    main_metric: ClassVar[str] = "spearman"
    metric_names: ClassVar[tuple[str, ...]] = ("spearman", "pearson")

    def parts(self, split: str) -> tuple[str, ...]:
        """The split's subsets (``senteval`` format) or file names (``stsb``/``sick``)."""
        self.check_split(split)
        return self.spec.dev if split == "dev" else self.spec.test

    def files(self, split: str) -> list[str]:
        d = self.spec.directory
        if self.spec.fmt == "senteval":
            return [f"{d}/STS.{kind}.{s}.txt" for s in self.parts(split) for kind in ("input", "gs")]
        return [f"{d}/{name}" for name in self.parts(split)]

    def load(self, split: str, data_root: str | Path) -> dict[str, PairSet]:
        directory, read = Path(data_root) / self.spec.directory, READERS[self.spec.fmt]
        return {part: read(directory, part) for part in self.parts(split)}

    def release_counts(self, split: str, data: Mapping[str, PairSet]) -> list[Count]:
        """Scored pairs per gold file (``senteval``) or data file, against the release's numbers."""
        d = self.spec.directory
        where = (lambda part: f"{d}/STS.gs.{part}.txt") if self.spec.fmt == "senteval" else (lambda part: f"{d}/{part}")
        return [Count(where(part), "scored pairs", len(data[part]), self.spec.counts[part], self.spec.source)
                for part in self.parts(split) if part in self.spec.counts]

    def metrics(self, data: Mapping[str, PairSet], scores: Mapping[str, np.ndarray]) -> dict[str, float]:
        # SentEval's "all": concatenate every subset's pairs, then one correlation (SimCSE reports this).
        gold = np.concatenate([ps.gold for ps in data.values()])
        predicted = np.concatenate([scores[name] for name in data])
        return correlations(gold, predicted)

    def item_recipes(self, data: Mapping[str, PairSet]) -> dict[str, Recipe]:
        """One correlation over every subset's pairs pooled (SentEval's "all")."""
        return {m: Recipe(m, tuple(data), "pool") for m in ("spearman", "pearson")}

    def subsets(self, data: Mapping[str, PairSet], scores: Mapping[str, np.ndarray]) -> dict[str, dict[str, float]]:
        if len(data) < 2:
            return {}
        return {name: {**correlations(ps.gold, scores[name]), "n_pairs": float(len(ps))} for name, ps in data.items()}

    def train_files(self) -> list[str]:
        return []  # no STS paper trains on one set's own test sentences; see train_corpus

    def train_corpus(self, data_root: str | Path, corpus_file: str | Path | None = None) -> list[str]:
        """Only an explicit corpus: SimCSE/DenoSent train on wiki1m, ConSERT/PaSeR on all 7 sets' sentences."""
        if corpus_file is not None:
            return read_corpus(corpus_file)
        raise MissingDataError(
            f"{self.name} training corpus (STS papers train on a general corpus such as SimCSE's wiki1m, or on the "
            "unlabeled sentences of all seven STS sets, never on one set alone)", Path(data_root),
            "--corpus FILE",
        )


def make_task(spec: StsSpec) -> StsTask:
    """The adapter of one :class:`StsSpec` (a subclass per set, so that names and splits stay class-level)."""
    attrs = {"name": spec.name, "spec": spec, "splits": ("dev", "test") if spec.dev else ("test",),
             "description": spec.description, "__doc__": f"{spec.name}: {spec.description}"}
    return type(f"StsTask_{spec.name}", (StsTask,), attrs)()


for _spec in SPECS:
    TASKS.add(_spec.name, make_task(_spec))
