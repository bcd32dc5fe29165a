"""`bench check`: a fake runner (fast) for pass / drift / missing / failed unit / changed data, the CLI exit
codes, and the committed reference's rows. The command itself on the real CI subset (real engines, 10K TwitterPara
sentences encoded: 90 s of CPU) is a step of .ci/run, not a test of the README's command."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.errors import BenchError
from usebench.reproduce.check import (
    SUBSETS,
    EvalUnit,
    Subset,
    TrainUnit,
    compare_stores,
    restrict,
    run_check,
    update_reference,
)
from usebench.store import iter_results
from tests.report.synthetic_results import TASK_METRICS, add_result
from tests.report.conftest import synthetic_releases  # noqa: F401  (tests/report's autouse pin of the synthetic
# records' releases, which this file ran under in tests/report)

REPO = Path(__file__).resolve().parents[2]
SUBSET = Subset("fake", (EvalUnit("base", model="minilm", tasks=("twitterpara", "stsb")),
                         TrainUnit("smoke", method="simcse", model="minilm", tasks=("stsb",), corpus="c.txt",
                                   corpus_size=16)))


class FakeRunner:
    """Writes deterministic scores for each unit's tasks; can skip a task, fail a unit or change data."""

    def __init__(self, skip: str | None = None, fail: str | None = None, sha: str | None = None):
        self.skip, self.fail, self.sha, self.calls = skip, fail, sha, []

    def __call__(self, unit, data_root: Path, results_dir: Path) -> None:
        self.calls.append(unit.name)
        if unit.name == self.fail:
            raise BenchError(f"unit {unit.name} broke")
        method = unit.method if isinstance(unit, TrainUnit) else "base"
        for i, task in enumerate(unit.tasks):
            if task == self.skip:
                continue
            scores = {m: 0.5 + 0.01 * i + 0.001 * j for j, m in enumerate(TASK_METRICS[task][1])}
            add_result(results_dir, method, unit.seed, task, scores, model=unit.model, sha=self.sha)


@pytest.fixture()
def reference(tmp_path) -> Path:
    ref = tmp_path / "reference"
    written = update_reference(SUBSET, tmp_path / "data", ref, runner=FakeRunner())
    assert len(written) == 3 and len(list(iter_results(ref))) == 3
    return ref


def _perturb(ref: Path, task: str, metric: str, delta: float) -> None:
    path = next(p for p in ref.rglob(f"{task}/test.json") if "simcse" not in str(p))
    record = json.loads(path.read_text())
    record["scores"][metric] += delta
    path.write_text(json.dumps(signed(record)))


def signed(record: dict) -> dict:
    """A record changed by a test as `bench check --update` would have written it (its digest made anew): another
    reference, not one edited by hand (that one is stale: test_a_stale_reference_fails_and_says_why)."""
    from usebench.store import DIGEST_KEY, record_digest

    return {**record, DIGEST_KEY: record_digest(record)}


def test_passes_against_its_own_fresh_results(reference, tmp_path):
    runner = FakeRunner()
    out = run_check(SUBSET, tmp_path / "data", reference, 0.5, runner=runner)
    assert out.ok and runner.calls == ["base", "smoke"]
    assert {d.status for d in out.diffs} == {"ok"} and len(out.diffs) == 3 + 1 + 1  # TwitterPara 3, STSb 1 + 1


def test_fails_on_drift_beyond_tolerance_only(reference, tmp_path):
    _perturb(reference, "twitterpara", "ap_pit", 0.004)  # 0.4 points: within 0.5
    assert run_check(SUBSET, tmp_path / "data", reference, 0.5, runner=FakeRunner()).ok
    _perturb(reference, "twitterpara", "ap_pit", 0.004)  # 0.8 points in all
    out = run_check(SUBSET, tmp_path / "data", reference, 0.5, runner=FakeRunner())
    bad = [d for d in out.diffs if d.status != "ok"]
    assert not out.ok and [(d.metric, d.status) for d in bad] == [("ap_pit", "drift")]
    assert bad[0].delta == pytest.approx(-0.8)


def test_fails_on_a_missing_result(reference, tmp_path):
    out = run_check(SUBSET, tmp_path / "data", reference, 0.5, runner=FakeRunner(skip="twitterpara"))
    assert not out.ok and {d.metric for d in out.diffs if d.status == "missing"} == {
        "ap_twitterurl", "ap_pit", "ap_avg"}


def test_fails_when_a_unit_fails(reference, tmp_path):
    out = run_check(SUBSET, tmp_path / "data", reference, 0.5, runner=FakeRunner(fail="smoke"))
    assert not out.ok and out.failed_units == [("smoke", "unit smoke broke")]
    assert [d.status for d in out.diffs if "simcse" in d.where] == ["missing"]


def test_fails_when_the_data_changed(reference, tmp_path):
    out = run_check(SUBSET, tmp_path / "data", reference, 0.5, runner=FakeRunner(sha="new-data"))
    assert not out.ok and {d.status for d in out.diffs} == {"ok", "data"}


def test_new_metric_is_reported_not_failed(reference, tmp_path):
    path = next(reference.rglob("stsb/test.json"))
    record = json.loads(path.read_text())
    record["scores"].pop("spearman")
    record["scores"]["pearson"] = 0.5
    record["main_metric"] = "pearson"
    record["main_score"] = 0.5
    path.write_text(json.dumps(signed(record)))
    out = run_check(SUBSET, tmp_path / "data", reference, 0.5, runner=FakeRunner())
    assert {d.status for d in out.diffs} == {"ok", "new", "missing"} and not out.ok


def test_a_stale_reference_fails_and_says_why(reference, tmp_path):
    """Issue 46: a reference of an older task version, or one edited by hand, no longer holds; the check fails
    naming it and the command that refreshes it."""
    path = next(p for p in reference.rglob("twitterpara/test.json"))
    record = json.loads(path.read_text())
    path.write_text(json.dumps(signed({**record, "task": {**record["task"], "version": "0"}})))
    out = run_check(SUBSET, tmp_path / "data", reference, 0.5, runner=FakeRunner())
    (stale,) = [d for d in out.diffs if d.status == "stale"]
    assert not out.ok and stale.metric == ("reference: the task's protocol changed (task version 0 when stored, 1 "
                                          "now); refresh it with `bench check --update`")
    record["scores"]["ap_pit"] = 0.9  # by hand
    path.write_text(json.dumps(record))
    (stale,) = [d for d in run_check(SUBSET, tmp_path / "data", reference, 0.5, runner=FakeRunner()).diffs
                if d.status == "stale"]
    assert "changed after it was written" in stale.metric


def test_no_reference_is_an_error(tmp_path):
    with pytest.raises(BenchError, match="bench check --update"):
        compare_stores(tmp_path / "nothing", tmp_path, 0.5)


def test_restrict_keeps_only_the_given_tasks():
    sub = restrict(SUBSET, ("stsb",))
    assert [u.tasks for u in sub.units] == [("stsb",), ("stsb",)]
    assert restrict(SUBSET, ("twitterpara",)).units == (SUBSET.units[0].__class__(
        "base", model="minilm", tasks=("twitterpara",)),)


def test_cli_exit_codes_with_fresh_results(reference, tmp_path):
    from usebench.cli.main import main

    fresh = tmp_path / "fresh"
    for unit in SUBSET.units:
        FakeRunner()(unit, tmp_path, fresh)
    ok = CliRunner().invoke(main, ["check", "--against", str(reference), "--fresh", str(fresh)])
    assert ok.exit_code == 0, ok.output
    assert "OK" in ok.output and "ap_pit" in ok.output
    _perturb(reference, "stsb", "spearman", -0.02)
    bad = CliRunner().invoke(main, ["check", "--against", str(reference), "--fresh", str(fresh), "--tol", "1.5"])
    assert bad.exit_code == 1 and "drift" in bad.output and "FAILED" in bad.output


def test_ci_subset_is_small_and_well_formed():
    ci = SUBSETS.get("ci")
    keys = [(u.method if isinstance(u, TrainUnit) else "base", u.model, u.seed) for u in ci.units]
    assert len(set(keys)) == len(keys)  # results are matched by method/model/seed: units must not collide
    train = [u for u in ci.units if isinstance(u, TrainUnit)]
    assert train and all(u.corpus_size <= 1024 for u in train)
    # each trains a few steps: the smoke preset's, or a recipe preset cut short (the laptop recipe's unit)
    assert all(u.preset == "smoke" or any(o.startswith("max_steps=") and int(o.split("=")[1]) <= 20
                                          for o in u.overrides) for u in train)
    laptop = next(u for u in train if u.preset == "laptop")
    assert (laptop.setting, laptop.nli_sts_model, len(laptop.corpus_files)) == ("adapt-nli-first", "minilm", 2)


def test_the_committed_reference_holds_every_row_of_the_ci_subset():
    """The rows CI's `bench check` (a step of .ci/run, the command itself on the real data) must meet: the base
    model on TwitterPara and STSb, the SimCSE smoke unit and the laptop recipe's TSDAE unit on STSb, each metric
    met by the reference itself within the tolerance (what a fresh run of the same code gives)."""
    ref = REPO / "results" / "reference"
    diffs = compare_stores(ref, ref, 0.5)
    assert diffs and all(d.status == "ok" for d in diffs), [(d.where, d.metric, d.status) for d in diffs]
    assert {d.where.split()[0] for d in diffs} == {"base/minilm/mean", "simcse/minilm/cls",
                                                    "nli-sts[minilm]>tsdae/minilm/cls"}
    assert {d.where.split()[-1].split("/")[0] for d in diffs} == {"twitterpara", "stsb"}
    assert {d.metric for d in diffs} >= {"spearman", "ap_twitterurl", "ap_pit"}


def test_corpus_size_subsample_is_fixed_nested_and_in_order():
    from usebench.errors import ConfigError
    from usebench.plan.corpus import subsample_corpus

    texts = [f"s{i}" for i in range(1000)]
    small, big = subsample_corpus(texts, 128, "x"), subsample_corpus(texts, 256, "x")
    assert len(small) == 128 and len(set(small)) == 128 and small == subsample_corpus(texts, 128, "x")
    assert set(small) <= set(big)  # the 128-sentence corpus is inside the 256 one
    assert small == sorted(small, key=lambda t: int(t[1:]))  # corpus order kept
    with pytest.raises(ConfigError, match="only 1000 distinct sentences"):
        subsample_corpus(texts, 1001, "x")
