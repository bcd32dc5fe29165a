"""`bench compare A B` and ``usebench.compare`` (usebench/stats/compare.py) on a small store written by the store's
own writer: how A and B are named, what is compared and what is refused, the output and the exit codes."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import usebench
from tests.stats.store_fakes import gold_labels, save
from usebench.cli.main import main
from usebench.errors import BenchError
from usebench.store.mteb_results import all_results
from usebench.stats.compare import compare_sides, comparison_lines, resolve
from usebench.stats.intervals import Resampler

MEAN, CLS = "base__minilm__aaaa1111__s0", "base__minilm__bbbb2222__s0"


@pytest.fixture()
def store(tmp_path):
    results = tmp_path / "results"
    for task in ("twitterpara", "stsb"):
        save(results, MEAN, "base", "mean", 0, 0.8, task=task)
        save(results, CLS, "base", "cls", 0, 2.5, task=task)
        for seed in (0, 1, 2):
            save(results, f"tsdae__minilm__cccc3333__s{seed}", "tsdae", "cls", seed, 1.0 + 0.1 * seed, task=task)
    return results


def test_a_and_b_are_named_by_run_id_configuration_row_label_or_method(store):
    results = all_results(store)
    assert resolve(MEAN, results).how == "run" and resolve(MEAN, results).seeds == [0]
    config = resolve("tsdae__minilm__cccc3333", results)
    assert config.how == "configuration" and config.seeds == [0, 1, 2]
    row = resolve("minilm (cls)", results)
    assert row.how == "row" and {r.record["run_id"] for r in row.results} == {CLS}
    assert resolve("tsdae", results).seeds == [0, 1, 2]  # a method that names one row
    with pytest.raises(BenchError, match=r"'base' names 2 rows of the store: minilm \(cls\) \[base__minilm__bbbb2222"
                                         r"__s0\]; minilm \(mean\) \[base__minilm__aaaa1111__s0\]"):
        resolve("base", results)
    with pytest.raises(BenchError, match="'tsdea' is no run id, configuration, row label or method name of the store "
                                         "\\(did you mean 'tsdae'"):
        resolve("tsdea", results)


def test_every_shared_task_is_compared_with_holm_over_them(store):
    results = all_results(store)
    comp = compare_sides(resolve("minilm (mean)", results), resolve("minilm (cls)", results),
                         resampler=Resampler(resamples=500))
    assert [t.task for t in comp.tasks] == ["stsb", "twitterpara"]
    for t in comp.tasks:
        assert t.result.delta < 0 and t.result.high < 0 and t.p_holm >= t.result.p_value
        assert t.verdict.startswith("distinguishable from 0: A is higher")
    lines = comparison_lines(comp)
    assert lines[0] == "A: minilm (mean) (row; seeds 0)"
    assert any(line.startswith("twitterpara/test ap_avg: A ") and "paired permutation test over items" in line
               for line in lines)
    assert any("Holm's correction over the 2 task(s) compared" in line for line in lines)


def test_several_seeds_pair_within_seeds(store):
    results = all_results(store)
    comp = compare_sides(resolve(MEAN, results), resolve("tsdae", results), tasks=["twitterpara"],
                         resampler=Resampler(resamples=300))
    (t,) = comp.tasks
    assert (t.result.seeds_a, t.result.seeds_b) == (1, 3) and t.result.test == "paired bootstrap test (two-level)"
    assert "two-level" in comp.notes()[0]


def test_what_cannot_be_paired_is_refused_with_its_reason(store):
    save(store, "other__minilm__dddd4444__s0", "other", "mean", 0, 0.9, task="twitterpara", sha="sha-other")
    save(store, "old__minilm__eeee5555__s0", "old", "mean", 0, 0.9, task="twitterpara", items=False)
    results = all_results(store)
    comp = compare_sides(resolve(MEAN, results), resolve("other", results), resampler=Resampler(resamples=50))
    assert "not compared: twitterpara/test: cannot pair A and B: the data differ" in comp.tasks[0].reason
    comp = compare_sides(resolve(MEAN, results), resolve("old", results), resampler=Resampler(resamples=50))
    assert "stored without per-item outcomes" in comp.tasks[0].reason and "--reevaluate TASK" in comp.tasks[0].reason
    assert comp.only_one_side == ("stsb",)
    with pytest.raises(BenchError, match="are the same results"):
        compare_sides(resolve(MEAN, results), resolve("minilm (mean)", results))


def test_the_command_prints_each_task_and_exits_by_what_it_could_compare(store, tmp_path):
    runner = CliRunner()
    out = runner.invoke(main, ["compare", "minilm (mean)", "minilm (cls)", "--results-dir", str(store),
                               "--resamples", "200", "--json", str(tmp_path / "c.json")])
    assert out.exit_code == 0, out.output
    assert "-> distinguishable from 0: A is higher" in out.output
    saved = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert [t["task"] for t in saved["tasks"]] == ["stsb", "twitterpara"] and saved["tasks"][0]["distinguishable"]
    save(store, "old__minilm__eeee5555__s0", "old", "mean", 0, 0.9, task="twitterpara", items=False)
    refused = runner.invoke(main, ["compare", MEAN, "old", "--results-dir", str(store), "--tasks", "twitterpara"])
    assert refused.exit_code == 1 and "no task could be compared" in refused.output
    bad = runner.invoke(main, ["compare", MEAN, CLS, "--results-dir", str(store), "--level", "1.5"])
    assert bad.exit_code == 2 and "the level in (0, 1)" in bad.output


def test_the_python_api_returns_a_frame(store):
    frame = usebench.compare("minilm (mean)", CLS, store, tasks=["twitterpara"], resamples=200)
    from usebench.api.comparison import COMPARE_COLUMNS

    assert list(frame.columns) == list(COMPARE_COLUMNS) and len(frame) == 1
    row = frame.iloc[0]
    assert row["delta"] == pytest.approx(row["b_score"] - row["a_score"]) and row["ci_low"] <= row["delta"]
    labelled = sum(int((votes != 3).sum()) for votes in gold_labels()[0].values())  # the pairs AP is computed over
    assert bool(row["distinguishable"]) and row["n_items"] == labelled < 520 and frame.attrs["notes"]
