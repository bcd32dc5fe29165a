"""Data that is not the release is refused before scoring (issue 14, item 1): counts per file, recorded checksums,
the fixture root's own declared counts, and --allow-partial recorded in the result.

Expected counts in these tests are written by hand (the published numbers of SOURCES.md and the papers, or the
lines left after the test's own cut), never read back from the adapters.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.errors import BenchError, ReleaseMismatchError
from usebench.eval.evaluate import evaluate, to_record
from usebench.registry import TASKS
from tests.tasks.pair_fakes import AngleScorer

ASSETS = Path(__file__).resolve().parents[1] / "assets"
STSB_TEST = "sts/senteval/STSBenchmark/sts-test.csv"


@pytest.fixture()
def root(tmp_path) -> Path:
    """A writable copy of the fixture data root (with its usebench-counts.json)."""
    shutil.copytree(ASSETS, tmp_path / "data")
    return tmp_path / "data"


def keep_lines(path: Path, n: int) -> None:
    """Cut a file after its first ``n`` lines, as `head -n` would."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:n]), encoding="utf-8")


def declare(root: Path, **changes: int) -> None:
    """Change the counts the fixture root declares (file under the root -> count)."""
    path = root / "usebench-counts.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw["counts"].update({k.replace("__", "/"): v for k, v in changes.items()})
    path.write_text(json.dumps(raw), encoding="utf-8")


def test_a_truncated_file_is_refused_naming_file_expected_and_found(root):
    keep_lines(root / STSB_TEST, 2)  # the fixture has 4 pairs
    with pytest.raises(ReleaseMismatchError) as err:
        evaluate("stsb", AngleScorer(), "test", root)
    msg = str(err.value)
    assert str(root / STSB_TEST) in msg and "expected 4 scored pairs" in msg and "found 2" in msg
    assert "--allow-partial" in msg and "bench data download sts" in msg


def test_allow_partial_evaluates_and_the_result_says_so(root):
    keep_lines(root / STSB_TEST, 3)
    ev = evaluate("stsb", AngleScorer(), "test", root, allow_partial=True)
    assert ev.partial and ev.n_queries == 3
    record = to_record(ev, run="r", method={"name": "x"}, seed=0, scorer=AngleScorer(), config={})
    assert record["task"]["partial"] is True
    assert record["task"]["release"]["counts"][STSB_TEST] == {"what": "scored pairs", "expected": 4, "found": 3}
    assert "expected 4 scored pairs" in record["task"]["release"]["partial"][0]


def test_the_full_fixture_is_not_partial_and_records_its_basis():
    ev = evaluate("stsb", AngleScorer(), "test", ASSETS)
    assert not ev.partial and ev.release["basis"].startswith("usebench-counts.json (usebench test fixtures")


def test_without_a_counts_file_the_published_counts_apply(root):
    (root / "usebench-counts.json").unlink()
    with pytest.raises(ReleaseMismatchError, match=r"expected 1379 scored pairs \(STS-benchmark .*found 4"):
        evaluate("stsb", AngleScorer(), "test", root)
    with pytest.raises(ReleaseMismatchError, match=r"STS\.gs\.MSRpar\.txt: expected 750 scored pairs.*found 3"):
        evaluate("sts12", AngleScorer(), "test", root)
    with pytest.raises(ReleaseMismatchError, match=r"Twitter_URL_Corpus_test\.txt: expected 10120 pairs.*found 7"):
        evaluate("twitterpara", AngleScorer(), "test", root)


@pytest.mark.parametrize("task, split, file, cut", [
    ("sickr", "test", "sick/SICK_test_annotated.txt", 3),  # header + 2 of 4 pairs
    ("sickr", "dev", "sick/SICK_trial.txt", 2),
    ("stsb", "dev", "sts/senteval/STSBenchmark/sts-dev.csv", 1),
    ("twitterpara", "test", "useb/data-eval/twitterpara/Twitter_URL_Corpus_test.txt", 4),
    ("askubuntu", "dev", "useb/data-eval/askubuntu/dev.txt", 2),
])
def test_every_pair_and_rerank_task_checks_its_counts(root, task, split, file, cut):
    keep_lines(root / file, cut)
    with pytest.raises(ReleaseMismatchError, match=str(root / file)):
        evaluate(task, AngleScorer(), split, root)


def test_sts_subsets_and_pit_are_counted_per_file(root):
    for name in ("STS.input.MSRvid.txt", "STS.gs.MSRvid.txt"):  # cut both: aligned, so only the count can tell
        keep_lines(root / "sts/senteval/STS12-en-test" / name, 2)
    with pytest.raises(ReleaseMismatchError, match=r"STS\.gs\.MSRvid\.txt: expected 3 scored pairs.*found 2"):
        evaluate("sts12", AngleScorer(), "test", root)
    for name in ("test.data", "test.label"):
        keep_lines(root / "useb/data-eval/twitterpara" / name, 5)
    with pytest.raises(ReleaseMismatchError, match=r"test\.data: expected 6 pairs.*found 5"):
        evaluate("twitterpara", AngleScorer(), "test", root)


def test_cqadupstack_and_bm25_wrappers_check_against_the_declared_counts(root):
    declare(root, **{"useb__data-eval__cqadupstack__corpus.json": 3})  # the fixture has 2 forums
    with pytest.raises(ReleaseMismatchError, match=r"corpus\.json: expected 3 forums .*found 2"):
        evaluate("cqadupstack", AngleScorer(), "test", root)
    keep_lines(root / "useb/data-eval/askubuntu/dev.txt", 2)  # bm25+askubuntu also reads dev, to choose alpha
    with pytest.raises(ReleaseMismatchError, match=r"dev\.txt: expected 3 lines.*found 2"):
        evaluate("bm25+askubuntu", AngleScorer(), "test", root)


def test_beir_counts_documents_and_judged_queries(root):
    from usebench.tasks.beir import BeirTask

    class Tiny(BeirTask):
        name, beir_name, splits, dataset = "tiny", "tiny", ("dev", "test"), "tiny"
        release_documents, release_queries, release_source = 6, {"test": 3}, "the test's own count"

    data = Tiny().load("test", root)
    counts = {c.file: (c.found, c.expected) for c in Tiny().release_counts("test", data)}
    assert counts["beir/tiny/corpus.jsonl"][1] == 6 and counts["beir/tiny/qrels/test.tsv"][1] == 3
    found_docs = sum(1 for line in (root / "beir/tiny/corpus.jsonl").read_text().splitlines() if line.strip())
    assert counts["beir/tiny/corpus.jsonl"][0] == found_docs
    quora = TASKS.get("quora")
    assert (quora.release_documents, quora.release_queries) == (522931, {"dev": 5000, "test": 10000})


def test_a_file_changed_since_bench_data_recorded_it_is_refused(root):
    from usebench.data.download import file_digests
    from usebench.data.sources import ChecksumStore

    path = root / STSB_TEST
    ChecksumStore(root).record("stsbenchmark", "import", "test", {STSB_TEST: file_digests(path).sha256})
    assert not evaluate("stsb", AngleScorer(), "test", root).partial  # unchanged: accepted
    text = path.read_text(encoding="utf-8").replace("\t2.500\t", "\t4.500\t", 1)  # same pairs, one score edited
    assert text != path.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ReleaseMismatchError, match=r"sts-test\.csv: expected sha256 .*recorded in .*found"):
        evaluate("stsb", AngleScorer(), "test", root)


def test_a_malformed_counts_file_is_an_error_naming_it(root):
    (root / "usebench-counts.json").write_text('{"release": "x", "counts": {"a": -1}}', encoding="utf-8")
    with pytest.raises(BenchError, match="usebench-counts.json: expected"):
        evaluate("stsb", AngleScorer(), "test", root)


@pytest.mark.slow
def test_the_real_releases_have_their_published_counts(real_data):
    """The published numbers (SOURCES.md, the papers) equal what the real files hold, task by task."""
    for name in ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr", "twitterpara"):
        task = TASKS.get(name)
        for split in task.splits:
            data = task.load(split, real_data)
            block = task.check_release(split, data, real_data, task.data_digests(real_data, split)[1])
            assert block["basis"] == "published" and not block["partial"], (name, split)
            assert all(c["found"] == c["expected"] for c in block["counts"].values())
    totals = {name: sum(c["found"] for c in TASKS.get(name).check_release(
        "test", TASKS.get(name).load("test", real_data), real_data, {})["counts"].values())
        for name in ("sts12", "sts13", "sts14", "sts15", "sts16")}
    assert totals == {"sts12": 3108, "sts13": 1500, "sts14": 3750, "sts15": 3000, "sts16": 1186}  # SOURCES.md


@pytest.mark.slow
@pytest.mark.parametrize("task, rel, cut, expected", [
    ("stsb", STSB_TEST, ("bytes", 100_000), "expected 1379 scored pairs"),  # the issue's STSb file cut at 100 KB
    ("twitterpara", "useb/data-eval/twitterpara/Twitter_URL_Corpus_test.txt", ("lines", 4000), "expected 10120 pairs"),
])
def test_the_issues_truncated_real_files_are_refused(real_data, tmp_path, task, rel, cut, expected):
    root = tmp_path / "data"
    for f in TASKS.get(task).files("test"):
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(real_data / f, root / f)
    raw = (real_data / rel).read_bytes()
    kind, n = cut
    (root / rel).write_bytes(raw[:n] if kind == "bytes" else b"".join(raw.splitlines(keepends=True)[:n]))
    with pytest.raises(ReleaseMismatchError, match=expected):
        evaluate(task, AngleScorer(), "test", root)
