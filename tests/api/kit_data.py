"""A data-eval folder in the useb kit's layout that the kit itself can run on, built from the test fixtures.

tests/assets/useb/data-eval holds the four tasks in the kit's file layout, but two of them trip the kit: the
TwitterPara fixture (as the real release in $BENCH_DATA) keeps the release's blank lines between URL groups (the kit splits every line into three
fields; usebench skips blank lines), and the CQADupStack fixture's forums have fewer than 100 questions (the
kit takes a top-100 with torch.topk, which fails on a smaller pool). This copy drops the blank lines and
replaces CQADupStack with a generated corpus of 130 titles per forum (deterministic; built from a small
vocabulary so that titles share words and rankings are not trivial).
"""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "useb" / "data-eval"
WORDS = ("install", "error", "boot", "driver", "update", "wifi", "screen", "battery", "kernel", "package", "disk",
         "sound", "network", "login", "password", "graphics", "terminal", "python", "server", "backup")


def cqadupstack(folder: Path, forums: tuple[str, ...] = ("android", "gaming"), size: int = 130) -> None:
    """corpus.json + retrieval_split.json: ``size`` titles per forum; 6 test and 3 valid queries, each with
    one to three duplicates."""
    rng = random.Random(31)
    corpus: dict[str, dict[str, str]] = {}
    split: dict[str, dict[str, dict[str, list[str]]]] = {"valid": {}, "test": {}}
    for forum in forums:
        ids = [f"{forum[0]}{i}" for i in range(size)]
        corpus[forum] = {qid: " ".join(rng.sample(WORDS, rng.randint(3, 6))) for qid in ids}
        queries = rng.sample(ids, 9)
        rest = [i for i in ids if i not in queries]
        for name, chosen in (("test", queries[:6]), ("valid", queries[6:])):
            split[name][forum] = {q: rng.sample(rest, rng.randint(1, 3)) for q in chosen}
    folder.mkdir(parents=True)
    (folder / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    (folder / "retrieval_split.json").write_text(json.dumps(split), encoding="utf-8")


def kit_data_eval(root: Path) -> Path:
    """``root/useb/data-eval`` with the four datasets (see the module docstring); returns that folder."""
    out = root / "useb" / "data-eval"
    for name in ("askubuntu", "scidocs"):
        shutil.copytree(ASSETS / name, out / name)
    kit_twitterpara(ASSETS / "twitterpara", out / "twitterpara")
    cqadupstack(out / "cqadupstack")
    return out


def kit_twitterpara(source: Path, folder: Path) -> Path:
    """A copy of a TwitterPara folder that the kit can read: the release's blank lines between URL groups
    dropped from Twitter_URL_Corpus_test.txt (the same pairs: usebench skips blank lines)."""
    shutil.copytree(source, folder)
    url = folder / "Twitter_URL_Corpus_test.txt"
    url.write_text("".join(line for line in url.read_text(encoding="utf-8").splitlines(keepends=True)
                           if line.strip()), encoding="utf-8")
    return folder
