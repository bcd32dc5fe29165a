"""The fixture data root `bench reproduce`'s tests run on: tests/assets with the labeled fixtures, plus what the
papers' recipes read that the assets lack, each a few lines: an unlabeled ``train.txt`` per USEB task, supervised
pairs for CQADupStack and SciDocs, STS13-16 (STS12's MSRvid pairs under each year's subset names), a Quora
BEIR folder (the tiny BEIR fixture and 40 more questions), DenoSent's paraphrase pairs and the corpora the recipes take from ``DATA_ROOT/corpora``. Every added
evaluation file is entered in the root's ``usebench-counts.json``, as the fixtures' counts are.

The chains' labeled stages train on ``tests/assets/chains`` (issue 39, item 6): an ``AllNLI.tsv.gz`` as
sentence-transformers ships it (unpacked to ``nli/AllNLI.tsv`` as ``bench data`` unpacks the download) and an STSb
``sts-train.csv``, both written by :func:`write_chain_fixtures` (``python -m tests.reproduce.reproduce_root``). They are
big enough that every stage of every chain moves the weights under the recipes' own presets: 400 NLI triplets fill
three batches of the SBERT-nli-v2 recipe's 128 (one epoch; warm-up is the first step, at learning rate 0, so a
single batch would change nothing), and 48 STSb pairs give the continue-training recipe 3 steps an epoch."""
from __future__ import annotations

import gzip
import json
import random
import shutil
import sys
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[1] / "assets"
CHAINS = ASSETS / "chains"  # the labeled data of the chains' supervised stages (write_chain_fixtures)
NLI_PREMISES = 200  # x 2 triplets each (entailment and contradiction partners): 400 triplets, 3 batches of 128
STSB_PAIRS = 48  # 3 batches of 16 an epoch
WORDS = ("the a cat dog runs jumps over under quick slow red blue green install linux error code paper model "
         "data screen driver kernel update").split()
STS_SUBSETS = {"STS13-en-test": ("FNWN", "headlines", "OnWN"),
               "STS14-en-test": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
               "STS15-en-test": ("answers-forums", "answers-students", "belief", "headlines", "images"),
               "STS16-en-test": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question")}
CORPORA = ("wiki-sentences.txt", "sts-sentences.txt", "wiki1m_for_simcse.txt", "nli-sentences.txt", "owt_1m.txt",
           "owt_10k.txt")


def build_reproduce_root(root: Path, sentences: int = 600) -> Path:
    """Fill ``root`` (see the module docstring); returns it."""
    shutil.copytree(ASSETS, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("labeled_root", "chains"))
    shutil.copytree(ASSETS / "labeled_root", root, dirs_exist_ok=True)
    _install_chain_fixtures(root)
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
    # the laptop recipe's corpus: the two sides of the Twitter URL training pairs, one sentence a line
    lines = text.splitlines()
    _write(root / "useb/extra/twitter_url_train_tok/a.toks", "\n".join(lines[0::2]) + "\n")
    _write(root / "useb/extra/twitter_url_train_tok/b.toks", "\n".join(lines[1::2]) + "\n")
    # ... and PIT-2015's development pairs in their train format (topic, sentences, (pos, neg) votes, tags)
    _write(root / "useb/extra/pit2015/dev.data", "".join(
        f"{i}\ttopic {i}\tpit {a}\tpit {b}\t({i % 3}, {5 - i % 3})\ttag\ttag\n"
        for i, (a, b) in enumerate(zip(lines[0:80:2], lines[1:80:2]))))
    counts_path.write_text(json.dumps(counts, indent=1), encoding="utf-8")
    return root


def _install_chain_fixtures(root: Path) -> None:
    """The chains' NLI and STSb training data in the root's layout: the AllNLI download unpacked as ``bench data``
    unpacks it, STSb train where the STS-benchmark archive puts it."""
    from usebench.data.download import extract

    (root / "nli").mkdir(parents=True, exist_ok=True)
    extract(CHAINS / "AllNLI.tsv.gz", root / "nli")
    shutil.copy(CHAINS / "sts-train.csv", _parent(root / "sts/original/stsbenchmark/sts-train.csv"))


# Sentence parts of the generated NLI and STSb fixtures: (subject, its generalisation), (action, its
# generalisation, a contradicting action), places, and details that make a neutral hypothesis.
SUBJECTS = (("A man", "A person"), ("A woman", "A person"), ("A young girl", "A child"), ("A little boy", "A child"),
            ("Two men", "Some people"), ("A group of women", "Some people"), ("An old man", "A person"),
            ("A brown dog", "An animal"), ("A black cat", "An animal"), ("A teenager", "A person"))
ACTIONS = (("is playing a guitar", "is making music", "is sleeping"),
           ("is riding a bike", "is outside", "is sitting on a sofa"),
           ("is reading a book", "is reading", "is swimming"),
           ("is cooking dinner", "is preparing food", "is running a race"),
           ("is running", "is moving", "is lying still"),
           ("is eating an apple", "is eating", "is singing on stage"),
           ("is painting a wall", "is working", "is watching television"),
           ("is walking", "is moving", "is asleep in bed"))
PLACES = ("in a park", "on the beach", "in the kitchen", "on a busy street", "near a river", "in a small room",
          "at the market", "under a tree")
PLURAL = ("Two men", "A group of women", "Some people")
DETAILS = ("for the first time", "with a friend", "because it is sunny", "after a long day", "before lunch",
           "to win a prize")


def _says(subject: str, action: str, *rest: str) -> str:
    """A sentence, its verb agreeing with the subject ("Two men are running")."""
    verb = action.replace("is ", "are ", 1) if subject in PLURAL and action.startswith("is ") else action
    return " ".join((subject, verb, *rest)) + "."


def write_chain_fixtures(folder: Path = CHAINS) -> None:
    """Write ``AllNLI.tsv.gz`` (sentence-transformers' columns split, dataset, filename, sentence1, sentence2, label;
    gzip without a time stamp, so the bytes are reproducible) and ``sts-train.csv`` (the STS-benchmark layout:
    genre, file, year, id, score 0-5, sentence1, sentence2) with realistic sentences drawn from a fixed seed."""
    rng = random.Random(39)
    combos = [(s, a, p) for s in range(len(SUBJECTS)) for a in range(len(ACTIONS)) for p in range(len(PLACES))]
    header = "split\tdataset\tfilename\tsentence1\tsentence2\tlabel"
    rows = [header]
    for i, (s, a, p) in enumerate(rng.sample(combos, NLI_PREMISES + 4)):
        (subject, general), (action, vague, other) = SUBJECTS[s], ACTIONS[a]
        premise = _says(subject, action, PLACES[p])
        split, (dataset, name) = ("dev" if i >= NLI_PREMISES else "train"), (
            ("SNLI", "snli_1.0_{}.jsonl") if i % 3 else ("MultiNLI", "multinli_1.0_{}.jsonl"))
        for hypothesis, label in ((_says(general, vague), "entailment"), (_says(subject, other), "contradiction"),
                                  (_says(subject, action, rng.choice(DETAILS)), "neutral")):
            rows.append("\t".join((split, dataset, name.format(split), premise, hypothesis, label)))
    folder.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(rows) + "\n").encode("utf-8")
    (folder / "AllNLI.tsv.gz").write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    pairs = []
    for i, (s, a, p) in enumerate(rng.sample(combos, STSB_PAIRS)):
        (subject, general), (action, vague, other) = SUBJECTS[s], ACTIONS[a]
        first, stranger = _says(subject, action, PLACES[p]), SUBJECTS[(s + 3) % len(SUBJECTS)][0]
        second, score = [(_says(general, vague, PLACES[p]), 4.0), (_says(subject, action), 3.2),
                         (_says(subject, other, PLACES[p]), 1.4),
                         (_says(stranger, ACTIONS[(a + 5) % len(ACTIONS)][2]), 0.2)][i % 4]
        score = min(5.0, score + rng.choice((0.0, 0.2, 0.4, 0.6, 0.8)))
        pairs.append("\t".join(("main-captions", "MSRvid", "2012train", f"{i:04d}", f"{score:.3f}", first, second)))
    (folder / "sts-train.csv").write_text("\n".join(pairs) + "\n", encoding="utf-8")


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


if __name__ == "__main__":  # python -m tests.reproduce.reproduce_root [FOLDER]: (re)write the chains' fixtures
    write_chain_fixtures(Path(sys.argv[1]) if len(sys.argv) > 1 else CHAINS)
