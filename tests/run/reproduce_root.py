"""The fixture data root `bench reproduce`'s tests run on: tests/assets with the labeled fixtures, plus what the
papers' recipes read that the assets lack, each a few lines: an unlabeled ``train.txt`` per USEB task, supervised
pairs for CQADupStack and SciDocs, STS13-16 (STS12's MSRvid pairs under each year's subset names), a Quora
BEIR folder (the tiny BEIR fixture and 40 more questions), DenoSent's paraphrase pairs and the corpora the recipes take from ``DATA_ROOT/corpora``. Every added
evaluation file is entered in the root's ``usebench-counts.json``, as the fixtures' counts are."""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[1] / "assets"
WORDS = ("the a cat dog runs jumps over under quick slow red blue green install linux error code paper model "
         "data screen driver kernel update").split()
STS_SUBSETS = {"STS13-en-test": ("FNWN", "headlines", "OnWN"),
               "STS14-en-test": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
               "STS15-en-test": ("answers-forums", "answers-students", "belief", "headlines", "images"),
               "STS16-en-test": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question")}
CORPORA = ("wiki-sentences.txt", "sts-sentences.txt", "wiki1m_for_simcse.txt", "nli-sentences.txt", "owt_1m.txt",
           "owt_10k.txt")


def build_reproduce_root(root: Path, sentences: int = 300) -> Path:
    """Fill ``root`` (see the module docstring); returns it."""
    shutil.copytree(ASSETS, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("labeled_root"))
    shutil.copytree(ASSETS / "labeled_root", root, dirs_exist_ok=True)
    counts_path = root / "usebench-counts.json"
    counts = json.loads(counts_path.read_text(encoding="utf-8"))
    text = _sentences(sentences)
    for task in ("askubuntu", "cqadupstack", "twitterpara", "scidocs"):
        _write(root / "useb/data-train" / task / "unsupervised/train.txt", text)
    for task in ("cqadupstack", "scidocs"):  # the supervised stage of --setting all / --labeled-sizes
        for name in ("train.org", "train.para"):
            shutil.copy(root / "useb/data-train/askubuntu/supervised" / name,
                        _parent(root / "useb/data-train" / task / "supervised" / name))
    sts12 = root / "sts/senteval/STS12-en-test"
    for folder, subsets in STS_SUBSETS.items():
        for subset in subsets:
            for kind in ("input", "gs"):
                shutil.copy(sts12 / f"STS.{kind}.MSRvid.txt", _parent(root / "sts/senteval" / folder /
                                                                       f"STS.{kind}.{subset}.txt"))
            counts["counts"][f"sts/senteval/{folder}/STS.gs.{subset}.txt"] = 3
    quora = root / "beir/quora"
    shutil.copytree(root / "beir/tiny", quora, dirs_exist_ok=True)
    with open(quora / "corpus.jsonl", "a", encoding="utf-8") as f:  # enough questions for --corpus-sizes 16
        for i, line in enumerate(text.splitlines()[:40]):
            f.write(json.dumps({"_id": f"extra{i}", "title": "", "text": line}) + "\n")
    counts["counts"]["beir/quora/corpus.jsonl"] = len(_lines(quora / "corpus.jsonl"))
    for split in ("test", "dev"):  # judged queries: the distinct query ids under the header
        counts["counts"][f"beir/quora/qrels/{split}.tsv"] = len({line.split("\t")[0] for line in
                                                                 _lines(quora / "qrels" / f"{split}.tsv")[1:]})
    for name in CORPORA:
        _write(root / "corpora" / name, text)
    pairs = [f"{line}\t{' '.join(reversed(line.split()))}" for line in text.splitlines()]
    _write(root / "denosent/paraphrases.tsv", "\n".join(pairs) + "\n")  # sentence<TAB>paraphrase
    counts_path.write_text(json.dumps(counts, indent=1), encoding="utf-8")
    return root


def _sentences(n: int) -> str:
    rng = random.Random(0)
    return "\n".join(" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(n)) + "\n"


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _parent(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _write(path: Path, text: str) -> None:
    _parent(path).write_text(text, encoding="utf-8")
