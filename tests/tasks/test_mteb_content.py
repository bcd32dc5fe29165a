"""Local builds of MTEB tasks are checked by their content, not only by counts (issue 28, item 8).

A build carries an ``mteb:`` name only if every statistic MTEB publishes equals it and its text and scores hash to
the pinned release's; SentEval's STS12-16 files, whose characters differ from MTEB's statistics, never carry one.
MTEB's published statistics are typed in from embeddings-benchmark/mteb@c67a677
``mteb/descriptive_stats/STS/STS12.json``; the pinned hashes are recomputed here from the real data root by a reader
written for this test (not the suite's), over the files whose git blobs equal the SentEval tree of
amao0o0/SynWMD@59042a9 (``data/downstream/STS``) and castorini/data's SICK files (the data root's SOURCES.md).
"""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from usebench.errors import ReleaseMismatchError
from usebench.tasks.mteb_data import (
    CONTENT_SHA256,
    EVALUATOR_BUILDS,
    LOCAL_BUILDS,
    SENTEVAL_THROUGH_MTEB,
    LocalBuild,
    check_build,
    check_content,
    content_sha256,
    differences,
    sts_statistics,
)
from usebench.tasks.pairs import PairSet

# mteb/descriptive_stats/STS/STS12.json (test split), in the nested form mteb 2 reports
MTEB_STS12 = {"num_samples": 3108, "number_of_characters": 402118,
              "text1_statistics": {"min_text_length": 3, "max_text_length": 220, "unique_texts": 2236},
              "text2_statistics": {"min_text_length": 7, "max_text_length": 204, "unique_texts": 2797},
              "label_statistics": {"min_score": 0.0, "avg_score": 3.5060643500643507, "max_score": 5.0}}


def _pairs(s1, s2, gold) -> PairSet:
    return PairSet("t", tuple(s1), tuple(s2), np.asarray(gold, dtype=np.float64))


def test_content_hash_is_the_documented_serialisation():
    pairs = _pairs(["a b", "x"], ["c", "y z"], [4.0, 3.8])
    assert content_sha256(pairs) == hashlib.sha256("a b\tc\t4.0\nx\ty z\t3.8\n".encode()).hexdigest()
    assert content_sha256(_pairs(["a b", "x"], ["c", "y z"], [4.0, 3.9])) != content_sha256(pairs)  # a score


def _build(pairs: PairSet) -> LocalBuild:
    return LocalBuild(("f.txt",), lambda root: pairs, "sts", "a test build", content_sha256(pairs), "the test release")


def test_one_character_changed_with_every_statistic_equal_is_refused():
    """Same pairs, same lengths, same counts and scores, one letter different: the statistics cannot see it (the
    old check passed it as MTEB's data), the content hash can."""
    original = _pairs(["a man is playing a guitar .", "a dog runs"], ["a man plays guitar .", "the dog is running"],
                      [4.2, 3.0])
    edited = _pairs(["a man is playing a guitar .", "a dog runs"], ["a man plays guitbr .", "the dog is running"],
                    [4.2, 3.0])
    build = _build(original)
    metadata = SimpleNamespace(descriptive_stats={"test": sts_statistics(original.s1, original.s2, [4.2, 3.0])},
                               dataset={"path": "mteb/test", "revision": "r"})
    assert differences(metadata.descriptive_stats["test"], sts_statistics(edited.s1, edited.s2, [4.2, 3.0])) == []
    check_build("T", "test", metadata, build, original)  # the genuine build passes both checks
    with pytest.raises(ReleaseMismatchError, match=r"mteb:T \(test\) refused: .* is not the test release: its "
                                                   r"content sha256 \(text and scores\) is [0-9a-f]{16}"):
        check_build("T", "test", metadata, build, edited)


def test_every_mteb_named_build_pins_its_content_and_senteval_sts_is_not_one():
    assert set(LOCAL_BUILDS) == {"STSBenchmark", "SICK-R"}
    assert all(len(b.sha256) == 64 for b in LOCAL_BUILDS.values())
    assert {k: m for k, (m, _) in SENTEVAL_THROUGH_MTEB.items()} == {
        f"senteval-sts1{y}": f"STS1{y}" for y in "23456"}
    assert all(len(b.sha256) == 64 and b.dataset == "sts" for _, b in SENTEVAL_THROUGH_MTEB.values())
    assert set(SENTEVAL_THROUGH_MTEB) <= set(EVALUATOR_BUILDS)


# --- the real data root ----------------------------------------------------------------------------------------

def _lines(path: Path) -> list[str]:
    lines = [line.rstrip("\r") for line in path.read_bytes().decode("utf-8").split("\n")]
    return lines[:-1] if lines and lines[-1] == "" else lines


def _independent_pairs(key: str, build: LocalBuild, root: Path) -> PairSet:
    """The documented transform, re-implemented: SentEval's input/gold files (blank gold = unscored, whitespace runs
    joined by one space); STSb's fields 6, 7 and 5 as written; SICK's fields 2, 3 and 4 after each header."""
    s1, s2, gold = [], [], []
    if key.startswith("senteval-"):
        for inp, gs in zip(build.files[::2], build.files[1::2]):
            for line, g in zip(_lines(root / inp), _lines(root / gs), strict=True):
                if g.strip():
                    a, b = line.split("\t")
                    s1.append(" ".join(a.split()))
                    s2.append(" ".join(b.split()))
                    gold.append(float(g))
    elif key == "STSBenchmark":
        for line in _lines(root / build.files[0]):
            fields = line.split("\t")
            s1.append(fields[5])
            s2.append(fields[6])
            gold.append(float(fields[4]))
    else:
        for rel in build.files:
            for line in _lines(root / rel)[1:]:
                fields = line.split("\t")
                s1.append(fields[1])
                s2.append(fields[2])
                gold.append(float(fields[3]))
    return _pairs(s1, s2, gold)


ALL_BUILDS = {**LOCAL_BUILDS, **{k: b for k, (_, b) in SENTEVAL_THROUGH_MTEB.items()}}
PINNED = {**{k: CONTENT_SHA256[k] for k in LOCAL_BUILDS},
          **{k: CONTENT_SHA256[k.removeprefix("senteval-")] for k in SENTEVAL_THROUGH_MTEB}}


@pytest.mark.slow
@pytest.mark.parametrize("key", list(ALL_BUILDS))
def test_pinned_hashes_are_the_releases_read_independently(key, real_data):
    build = ALL_BUILDS[key]
    assert content_sha256(_independent_pairs(key, build, real_data)) == PINNED[key] == build.sha256
    check_content(key, build, build.read(real_data))  # the suite's reader gives the same content


@pytest.mark.slow
def test_senteval_sts12_is_not_mtebs_text(real_data):
    """The same 3,108 pairs, unique texts and scores as MTEB's STS12, 494 characters more and a longest second
    sentence one character longer: another tokenisation, so no mteb: name (the old check accepted it within a 0.3%
    tolerance and 4 characters of slack)."""
    _, build = SENTEVAL_THROUGH_MTEB["senteval-sts12"]
    pairs = build.read(real_data)
    ours = sts_statistics(pairs.s1, pairs.s2, [float(g) for g in pairs.gold])
    assert differences(MTEB_STS12, ours) == ["number_of_characters 402,612 here, 402,118 in MTEB's metadata",
                                             "text2.max_text_length 205 here, 204 in MTEB's metadata"]


@pytest.mark.slow
def test_a_release_file_edited_in_one_character_is_refused(real_data, tmp_path):
    """STSb's test file with one letter changed (same length, same counts): the build is refused by content."""
    build = LOCAL_BUILDS["STSBenchmark"]
    path = tmp_path / build.files[0]
    path.parent.mkdir(parents=True)
    shutil.copy(real_data / build.files[0], path)
    text = path.read_bytes()
    i = text.index(b"\ta ") + 1  # the first sentence that starts with "a "
    path.write_bytes(text[:i] + b"A" + text[i + 1:])
    edited = build.read(tmp_path)
    genuine = build.read(real_data)
    assert len(edited) == len(genuine) and sum(map(len, edited.s1)) == sum(map(len, genuine.s1))
    with pytest.raises(ReleaseMismatchError, match="is not the STS-benchmark release's sts-test.csv"):
        check_content("mteb:STSBenchmark (test)", build, edited)
