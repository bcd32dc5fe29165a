"""The planner's shortcuts plan exactly what the long way plans (issue 37): the census of labeled examples against
checking every seed's draw, digests against reading the files, and the work grows with the distinct stages, not
with the seeds that place them."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.reproduce.reproduce_root import build_reproduce_root
from usebench.data import digests
from usebench.errors import BenchError
from usebench.methods.parts.labeled_examples import plainly_clean
from usebench.methods.supervised import SupervisedMethod
from usebench.plan.specs import RunOptions
from usebench.plan.planner import plan_run

NLI_HEADER = "split\tdataset\tfilename\tsentence1\tsentence2\tlabel"
SMALL = ("batch_size=4", "max_length=16")


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """The reproduce fixture root with an AllNLI of 120 rows (so triplets fill batches) and 60 supervised pairs."""
    root = build_reproduce_root(tmp_path_factory.mktemp("plan-caches"))
    rows = [NLI_HEADER]
    for i in range(40):
        rows += [f"train\tsnli\tf\tpremise {i}\thypothesis {i} yes\tentailment",
                 f"train\tsnli\tf\tpremise {i}\thypothesis {i} no\tcontradiction",
                 f"train\tsnli\tf\tpremise {i}\thypothesis {i} maybe\tneutral"]
    (root / "nli" / "AllNLI.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    supervised = root / "useb" / "data-train" / "askubuntu" / "supervised"
    (supervised / "train.org").write_text("".join(f"question {i}\n" for i in range(60)), encoding="utf-8")
    (supervised / "train.para").write_text("".join(f"duplicate {i}\n" for i in range(60)), encoding="utf-8")
    return root


def options(**changes) -> RunOptions:
    base = RunOptions(methods=("tsdae", "simcse"), tasks="askubuntu", seeds=3, preset="smoke", model="minilm",
                      max_steps=2, overrides=SMALL, show_progress=False)
    return dataclasses.replace(base, **changes)


def plan_digest(plan) -> str:
    return json.dumps([dataclasses.asdict(u) for u in plan.units] + [plan.notes, plan.skipped], sort_keys=True,
                      default=str)


GRIDS = {
    "adapt-nli-first (AllNLI triplets, every seed)": dict(setting="adapt-nli-first"),
    "labeled sizes (seeded subsets)": dict(labeled_sizes=(8, 16)),
    "in-domain supervised": dict(setting="supervised"),
}


@pytest.mark.parametrize("grid", GRIDS)
def test_the_census_plans_what_checking_every_draw_plans(grid, root, monkeypatch):
    opts = options(**GRIDS[grid])
    fast = plan_run(opts, root)
    monkeypatch.setattr(SupervisedMethod, "example_census", lambda self, cfg, task, data_root: None)
    assert plan_digest(plan_run(opts, root)) == plan_digest(fast)
    assert len(fast.units) >= 3


def test_a_blank_nli_sentence_takes_the_long_way_with_its_own_error(root, tmp_path, monkeypatch):
    text = (root / "nli" / "AllNLI.tsv").read_text(encoding="utf-8")
    bad = tmp_path / "root"
    import shutil

    shutil.copytree(root, bad)
    (bad / "nli" / "AllNLI.tsv").write_text(text.replace("hypothesis 3 no", " "), encoding="utf-8")
    opts = options(setting="adapt-nli-first")
    with pytest.raises(BenchError) as fast:
        plan_run(opts, bad)
    monkeypatch.setattr(SupervisedMethod, "example_census", lambda self, cfg, task, data_root: None)
    with pytest.raises(BenchError) as slow:
        plan_run(opts, bad)
    assert str(fast.value) == str(slow.value) and "labeled example" in str(fast.value)


def test_checks_grow_with_distinct_stages_not_with_seeds(root, monkeypatch):
    """Three seeds cost the corpus cleaning, the per-example checks and the AllNLI census of one."""
    import usebench.plan.stage_data as stage_data
    import usebench.train.loop as loop

    counts: dict[str, int] = {}

    def counting(name, real):
        def wrapper(*args, **kwargs):
            counts[name] = counts.get(name, 0) + 1
            return real(*args, **kwargs)
        return wrapper

    import usebench.data.labeled as labeled

    monkeypatch.setenv("BENCH_DIGESTS", "off")
    monkeypatch.setattr(stage_data, "clean_corpus", counting("corpus cleanings", loop.clean_corpus))
    monkeypatch.setattr(stage_data, "prepared_corpus_size", counting("corpus checks", loop.prepared_corpus_size))
    monkeypatch.setattr(SupervisedMethod, "example_census", counting("censuses", SupervisedMethod.example_census))
    monkeypatch.setattr(labeled, "_read_allnli", counting("AllNLI parses", labeled._read_allnli))
    per_seeds = {}
    for seeds in (1, 3):
        counts.clear()
        plan = plan_run(options(setting="all", seeds=seeds), root)
        per_seeds[seeds] = (dict(counts), len(plan.units))
    assert per_seeds[3][1] == 3 * per_seeds[1][1]  # three times the placements...
    assert per_seeds[3][0] == per_seeds[1][0]  # ...the same work
    assert per_seeds[1][0] == {"corpus cleanings": 1, "corpus checks": 2, "censuses": 5, "AllNLI parses": 1}


def test_digests_plan_the_same_cold_and_warm_and_notice_a_changed_file(root, tmp_path, monkeypatch):
    store = tmp_path / "digests.json"
    monkeypatch.setenv("BENCH_DIGESTS", str(store))
    opts = options(setting="all")
    cold = plan_digest(plan_run(opts, root))
    saved = json.loads(store.read_text(encoding="utf-8"))
    assert saved["code"] == digests.code_digest() and saved["entries"]
    reads = []
    import usebench.data.corpus as corpus
    import usebench.data.labeled as labeled

    real_lines, real_split = labeled._read_lines, corpus._read_split
    monkeypatch.setattr(labeled, "_read_lines", lambda p: reads.append(Path(p).name) or real_lines(p))
    monkeypatch.setattr(corpus, "_read_split", lambda p, u: reads.append(Path(p).name) or real_split(p, u))
    assert plan_digest(plan_run(opts, root)) == cold
    assert reads == []  # every corpus, census and count came from the digests
    monkeypatch.setenv("BENCH_DIGESTS", "off")
    assert plan_digest(plan_run(opts, root)) == cold


def test_a_changed_corpus_is_read_again(root, tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("BENCH_DIGESTS", str(tmp_path / "digests.json"))
    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    before = plan_run(options(), copy)
    corpus = copy / "useb" / "data-train" / "askubuntu" / "unsupervised" / "train.txt"
    corpus.write_text(corpus.read_text(encoding="utf-8") + "one more distinct sentence\n", encoding="utf-8")
    after = plan_run(options(), copy)
    assert before.units[0].stages[0].data["sentences"] + 1 == after.units[0].stages[0].data["sentences"]


def test_a_digest_file_of_other_code_or_no_writable_home_is_ignored(tmp_path, monkeypatch):
    from usebench.data.memo import planning

    store = tmp_path / "digests.json"
    monkeypatch.setenv("BENCH_DIGESTS", str(store))
    for code, want in (("other code", "fresh"), (digests.code_digest(), "kept")):
        entries = {digests.fact_key("k", 1): {"files": [], "value": "kept", "t": 0}}
        store.write_text(json.dumps({"schema": digests.SCHEMA, "code": code, "entries": entries}), encoding="utf-8")
        with planning():
            assert digests.fact("k", 1, lambda: "fresh", content=True) == want
    def read_only(*args, **kwargs):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(digests.tempfile, "mkstemp", read_only)
    with planning():
        assert digests.fact("k", 2, lambda: (1, 2), content=True) == [1, 2]  # as JSON gives it back
    assert digests.fact_key("k", 2) not in json.loads(store.read_text(encoding="utf-8"))["entries"]


@pytest.mark.parametrize("examples, graded, hard", [
    ([("a", "b"), ("c", "d", "e")], False, False), ([("a", "b", "c")], False, True), ([("a", "b", 0.5)], True, True),
    ([("a", "b", 1)], True, True), ([], False, True),
])
def test_plainly_clean_examples_pass_the_check_one_by_one(examples, graded, hard):
    method = next(m for m in _supervised() if (m.example_kind == "graded") == graded)
    cfg = method.config("smoke").replace(**({"hard_negatives": hard} if not graded else {}))
    assert plainly_clean(examples, graded, hard)
    assert len({len(method._check(cfg, i, ex)) for i, ex in enumerate(examples)}) <= 1


@pytest.mark.parametrize("examples, graded", [
    ([("a", " ")], False), ([("a",)], False), ([("a", "b", "c", "d")], False), ([("a", 1)], False),
    ([("a", "b", True)], True), ([("a", "b", float("nan"))], True), ([("a", "b", 1.5)], True),
    ([("a", "b")], True), ([["a", "b", 10**400]], True), (["ab"], False),
])
def test_anything_less_plain_is_left_to_the_check(examples, graded):
    assert not plainly_clean(examples, graded, True)


def _supervised():
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS

    return [METHODS.get(n) for n in ("sbert-mnrl", "sbert-cosine")]


def test_lazy_sentences_are_read_on_first_use_and_refused_if_not_what_the_digest_said():
    from usebench.plan.corpus import LazySentences
    from usebench.train.plugin import TrainingData

    loads = []

    def load(sha):
        return lambda: loads.append(1) or TrainingData("c", ["a", "b"], sha)

    fresh = LazySentences(2, "abc", load("abc"))
    assert len(fresh) == 2 and not loads  # the count needs no read
    assert list(fresh) == ["a", "b"] and fresh[1] == "b" and len(loads) == 1
    with pytest.raises(BenchError, match="changed on disk without a new size or modification time"):
        list(LazySentences(2, "abc", load("another hash")))
