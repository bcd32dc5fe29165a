"""TwitterPara (USEB): paraphrase identification on tweets, scored by cosine similarity without training labels.

Data (`useb/data-eval/twitterpara/`, as the USEB kit ships it):
- ``Twitter_URL_Corpus_test.txt`` (Lan et al., EMNLP 2017, "A Continuously Growing Dataset of Sentential
  Paraphrases"): ``sentence1 \\t sentence2 \\t (n,6) \\t url``, n of 6 annotators said "paraphrase".
- ``test.data`` + ``test.label`` (SemEval-2015 Task 1, PIT; Xu et al. 2015): ``topic_id, topic_name, sent1,
  sent2, expert_label (0-5), tag1, tag2`` and ``true|false|---- \\t expert/5``, row-aligned.

Protocol (Wang, Reimers, Gurevych 2021, TSDAE, Sec. 4; useb ``evaluators/twitterpara.py``): for each corpus,
cosine of the two sentences (stripped, otherwise raw); AP (sklearn) against the binary label, where the middle
grade (n == 3, expert 3) is dropped and a higher grade is positive; Spearman against the graded score over
*all* pairs, middle grade included. PIT's label is ``test.data``'s expert column (``test.label`` carries the
same judgement; it is only checked for agreement). Main score: mean of the two APs. No dev split.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import numpy as np

from usebench.errors import DataFormatError
from usebench.eval.items import Recipe
from usebench.registry import TASKS
from usebench.tasks.base import parse_float, split_fields
from usebench.data.corpus import read_lines
from usebench.tasks.release import Count
from usebench.tasks.pairs import (
    UNLABELLED,
    PairSet,
    PairTask,
    check_aligned,
    correlations,
    labelled_ap,
    make_pairset,
    require_pairs,
)

DIR = "useb/data-eval/twitterpara"
URL_FILE, PIT_DATA, PIT_LABEL = "Twitter_URL_Corpus_test.txt", "test.data", "test.label"
VOTES = re.compile(r"\((\d),\s*6\)")  # "(n,6)": n of the 6 annotators judged the pair a paraphrase
PIT_WORDS = {"true", "false", "----"}
# Pairs per file in the releases: Twitter URL test 10120 labelled lines (9334 without n == 3, "9334 for testing"
# in the corpus README; Lan et al. 2017), PIT-2015 test 972 lines (838 binary; Xu et al. 2015).
RELEASE_PAIRS = {URL_FILE: (10120, "Twitter URL corpus test release (Lan et al. 2017)"),
                 PIT_DATA: (972, "SemEval-2015 PIT test release (Xu et al. 2015)")}


def binary_label(grade: int, middle: int) -> int:
    """1 above the undecided middle grade, 0 below it, UNLABELLED at it (the corpus papers drop it)."""
    return 1 if grade > middle else 0 if grade < middle else UNLABELLED


def read_twitter_url(path: Path) -> PairSet:
    """Pairs of the Twitter URL test file; graded score n (0-6), label n > 3 (n == 3 dropped from AP).

    Blank lines separate URL groups in the release (the useb copy has none) and are skipped. Ten lines of the
    release carry an empty field before the url; the label is always the third field.
    """
    rows, labels = [], []
    for lineno, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        fields = split_fields(path, lineno, line, 4, 5, "(sentence1, sentence2, (n,6), url)")
        if len(fields) == 5 and fields[3].strip():
            raise DataFormatError(path, lineno, "an empty 4th field on a 5-field line (..., (n,6), '', url)", line)
        votes = VOTES.fullmatch(fields[2].strip())
        if votes is None or int(votes.group(1)) > 6:
            raise DataFormatError(path, lineno, "an annotation '(n,6)' with 0 <= n <= 6 in the 3rd field", fields[2])
        n = int(votes.group(1))
        rows.append((fields[0].strip(), fields[1].strip(), float(n)))
        labels.append(binary_label(n, 3))
    return require_pairs(make_pairset("twitterurl", rows, labels), path)


def read_pit(data_path: Path, label_path: Path) -> PairSet:
    """Pairs of PIT-2015 test; graded score = expert label (0-5), label > 3 (3 dropped from AP)."""
    data_lines, label_lines = read_lines(data_path), read_lines(label_path)
    check_aligned(data_path, len(data_lines), label_path, len(label_lines))
    rows, labels = [], []
    for lineno, (line, label_line) in enumerate(zip(data_lines, label_lines), 1):
        fields = split_fields(data_path, lineno, line, 7, 7, "(topic_id, topic_name, sent1, sent2, label, tag1, tag2)")
        if not re.fullmatch(r"[0-5]", fields[4].strip()):
            raise DataFormatError(data_path, lineno, "an expert label 0-5 in the 5th field", fields[4])
        expert = int(fields[4])
        _check_pit_label(label_path, lineno, label_line, expert)
        rows.append((fields[2].strip(), fields[3].strip(), float(expert)))
        labels.append(binary_label(expert, 3))
    return require_pairs(make_pairset("pit", rows, labels), data_path)


def _check_pit_label(path: Path, lineno: int, line: str, expert: int) -> None:
    """test.label must say the same as test.data's expert label; a disagreement means misaligned files."""
    word, score = split_fields(path, lineno, line, 2, 2, "(true|false|----, score)")
    if word.strip() not in PIT_WORDS:
        raise DataFormatError(path, lineno, "'true', 'false' or '----' in the 1st field", word)
    expected = {1: "true", 0: "false", UNLABELLED: "----"}[binary_label(expert, 3)]
    if word.strip() != expected or round(parse_float(path, lineno, score, "expert label / 5") * 5) != expert:
        raise DataFormatError(path, lineno, f"'{expected}\\t{expert / 5:.4f}' (test.data line {lineno} has "
                              f"expert label {expert})", line)


class TwitterPara(PairTask):
    """TwitterPara: Twitter URL corpus + PIT-2015 test, AP of cosine vs binary paraphrase label."""

    name: ClassVar[str] = "twitterpara"
    group: ClassVar[str] = "useb"
    main_metric: ClassVar[str] = "ap_avg"
    metric_names: ClassVar[tuple[str, ...]] = (
        "ap_avg", "ap_twitterurl", "ap_pit", "spearman_twitterurl", "spearman_pit", "spearman_avg")
    splits: ClassVar[tuple[str, ...]] = ("test",)
    dataset: ClassVar[str] = "useb"
    description: ClassVar[str] = "Twitter URL + PIT-2015 paraphrase pairs; AP of cosine (useb)"
    # Two corpora from two papers, evaluated separately (the TSDAE paper reports one AP each): a lexical scorer
    # indexes each on its own, so PIT's idf is not diluted by the ten times larger URL corpus.
    separate_collections: ClassVar[bool] = True

    def files(self, split: str) -> list[str]:
        self.check_split(split)
        return [f"{DIR}/{URL_FILE}", f"{DIR}/{PIT_DATA}", f"{DIR}/{PIT_LABEL}"]

    def train_files(self) -> list[str]:
        # useb's download names the folder `twitter` (its README tree); ours is named after the task.
        return ["useb/data-train/twitterpara/unsupervised/train.txt", "useb/data-train/twitter/unsupervised/train.txt"]

    def load(self, split: str, data_root: str | Path) -> dict[str, PairSet]:
        self.check_split(split)
        root = Path(data_root) / DIR
        return {"twitterurl": read_twitter_url(root / URL_FILE), "pit": read_pit(root / PIT_DATA, root / PIT_LABEL)}

    def release_counts(self, split: str, data: Mapping[str, PairSet]) -> list[Count]:
        found = {URL_FILE: len(data["twitterurl"]), PIT_DATA: len(data["pit"])}
        return [Count(f"{DIR}/{name}", "pairs", found[name], n, source) for name, (n, source) in RELEASE_PAIRS.items()]

    def metrics(self, data: Mapping[str, PairSet], scores: Mapping[str, np.ndarray]) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, ps in data.items():
            out[f"ap_{name}"] = labelled_ap(ps, scores[name])
            out[f"spearman_{name}"] = correlations(ps.gold, scores[name])["spearman"]
        out["ap_avg"] = float(np.mean([out[f"ap_{n}"] for n in data]))
        out["spearman_avg"] = float(np.mean([out[f"spearman_{n}"] for n in data]))
        return {k: out[k] for k in self.metric_names}

    def item_recipes(self, data: Mapping[str, PairSet]) -> dict[str, Recipe]:
        """AP and Spearman of each corpus on its own; the averages are means over the corpora."""
        names = tuple(data)
        out = {f"{stat}_{n}": Recipe(stat, (n,)) for n in names for stat in ("ap", "spearman")}
        return {**out, "ap_avg": Recipe("ap", names, "mean"), "spearman_avg": Recipe("spearman", names, "mean")}

    def n_queries(self, data: Mapping[str, PairSet]) -> int:
        """Pairs the main score (AP) is computed over: the labelled ones."""
        return sum(ps.n_labelled for ps in data.values())

    def subsets(self, data: Mapping[str, PairSet], scores: Mapping[str, np.ndarray]) -> dict[str, dict[str, float]]:
        return {
            name: {"ap": labelled_ap(ps, scores[name]), **correlations(ps.gold, scores[name]),
                   "n_labelled": float(ps.n_labelled), "n_pairs": float(len(ps))}
            for name, ps in data.items()
        }


TASKS.add("twitterpara", TwitterPara())
