"""The dry run's cost (issue 53, item 2): one estimate of the work that remains in the store, on the device it will
run on, with its basis and a range; "nothing to train" when nothing remains; the other cost models only with -v."""
from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.reproduce.recipe_cost import parse_profile
from usebench.reproduce.remaining import Remaining, estimate

REPO = Path(__file__).resolve().parents[2]
PROFILE = {"measured_on": "a test machine", "matmul_gflops_one_thread": 100.0, "speedup_all_cores": 1.6,
           "speedup_range": [1.1, 2.0], "step_cpu_s": {"tsdae": 1.0, "simcse": 40.0},
           "eval_cpu_s": {"stsb": 10.0, "sickr": 20.0}, "unit_overhead_cpu_s": 5.0}


def _stage(method: str, steps: int, batch: int = 8):
    return SimpleNamespace(method=method, steps=steps, home=f"{method}-home", data={"kind": "corpus"},
                           identity={"config": {"batch_size": batch, "amp": "off"}})


def test_nothing_remaining_has_no_estimate():
    assert estimate(Remaining([], [(), ()], [()]), None, "cpu", "local") is None


def test_on_a_cpu_the_recipes_measured_units_price_only_what_remains_with_the_speedups_spread():
    work = Remaining([(_stage("tsdae", 100), "minilm")], [("stsb", "sickr"), (), ("stsb",)], [("stsb",)])
    est = estimate(work, parse_profile(PROFILE, "t"), "cpu", "local", measure=False)
    cpu_s = 100 * 1.0 + (10 + 20) + 10 + 10 + 2 * 5.0  # the stage, 3 + 1 evaluations, 2 units that run (set-up)
    assert est.hours == pytest.approx(cpu_s / 1.6 / 3600)
    assert (est.low, est.high) == (pytest.approx(cpu_s / 2.0 / 3600), pytest.approx(cpu_s / 1.1 / 3600))
    assert est.where == "this CPU, all its cores" and "measured on a test machine" in est.basis
    assert "1.1 to 2 CPU seconds per wall second" in est.basis


def test_without_measured_units_the_flop_model_gives_its_utilisations_spread(monkeypatch):
    from usebench.plan import cost

    monkeypatch.setattr(cost, "_matmul_flops", lambda device, p: (1e12, "this CPU (1000 GFLOP/s fp32 measured)"))
    work = Remaining([(_stage("tsdae", 1000), "minilm")], [], [])
    flops = 6 * 22.7e6 * 8 * 32 * 1000  # 6 x parameters x (batch x tokens per sentence) x steps
    est = estimate(work, None, "cpu", "local")
    assert est.hours == pytest.approx(flops / (1e12 * 0.10) / 3600)
    assert (est.low, est.high) == (pytest.approx(flops / (1e12 * 0.24) / 3600),
                                   pytest.approx(flops / (1e12 * 0.03) / 3600))
    assert "evaluation not counted" in est.basis and est.where.startswith("this CPU")


def test_a_store_where_everything_holds_has_nothing_to_train(tiny_bert_dir, tmp_path):
    """The work that remains after a plan ran: none (no stage to train, no result to score), so no estimate; the
    cost line says so. A unit whose result is deleted has one evaluation left and nothing to train."""
    from usebench.plan.planner import plan_run
    from usebench.plan.specs import RunOptions
    from usebench.reproduce.remaining import remaining_work
    from usebench.reproduce.dry_run_view import ReproduceView
    from usebench.run.grid import run_benchmark
    from tests.methods.helpers import one_thread, toy_corpus

    assets = Path(__file__).resolve().parents[1] / "assets"
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    opts = RunOptions(methods=("simcse",), tasks="stsb", seeds=1, preset="smoke", model=str(tiny_bert_dir),
                      corpus=(corpus,), max_steps=2, show_progress=False, device="cpu",
                      overrides=("batch_size=8", "max_length=32"))
    plan, results = plan_run(opts, assets), tmp_path / "r"
    before = remaining_work(plan.units, [], results, assets)
    assert len(before.stages) == 1 and before.steps == 2 and before.unit_evals == [("stsb",)]
    with one_thread():
        run_benchmark(opts, assets, results, plan=plan)
    after = remaining_work(plan.units, [], results, assets)
    assert after.nothing and estimate(after, None, "cpu", "local") is None
    view = ReproduceView([], {}, "", 1, 0, None, None, [], baselines=0, remaining=after)
    assert view.cost_line().startswith("cost: nothing to train and nothing to evaluate")
    (results / plan.units[0].run_id / "stsb" / "test.json").unlink()
    left = remaining_work(plan.units, [], results, assets)
    assert not left.stages and left.unit_evals == [("stsb",)] and left.text() == (
        "nothing to train; 1 evaluation(s) of 1 unit(s) and 0 baseline(s)")


def _laptop_store(tmp_path: Path, data: Path) -> Path:
    """A copy of the committed results/laptop, or a skip when the recipe now trains on other data than the store's
    units did (the recipe changed after the store was made: its units are other units, whatever this suite does)."""
    import json

    from usebench.reproduce.build import Given, build_plan
    from usebench.reproduce.status import load_checked_recipe

    rp = build_plan(load_checked_recipe("laptop"), None, Given(), data)
    planned = {u.stages[0].data.get("sha256") for u in rp.units}
    stored = {json.loads(p.read_text())["corpus"]["sha256"] for p in (REPO / "results" / "laptop").glob("*/config.json")
              if "corpus" in json.loads(p.read_text())}
    if stored and not stored & planned:
        pytest.skip("results/laptop was trained on another corpus than the laptop recipe plans now (the recipe "
                    "changed after the store was made): it holds none of the recipe's units until it is re-run")
    store = tmp_path / "laptop"
    shutil.copytree(REPO / "results" / "laptop", store)
    return store


def _dry_run(store: Path, data: Path, *more: str) -> str:
    out = CliRunner().invoke(main, ["reproduce", "laptop", "--dry-run", "--results-dir", str(store), "--data-root",
                                    str(data), *more])
    assert out.exit_code == 0, out.output
    return out.output


@pytest.mark.slow
def test_a_finished_recipe_says_nothing_remains(real_data, tmp_path):
    store = _laptop_store(tmp_path, real_data)
    text = _dry_run(store, real_data)
    assert "cost: nothing to train and nothing to evaluate (every unit and baseline of the plan holds" in text
    for other in ("GPU-hours", "on all cores", "H200"):  # the other cost models: only with -v
        assert other not in text, other
    verbose = _dry_run(store, real_data, "-v")
    assert "whole plan, every cost model (-v)" in verbose and "GPU-hours" in verbose


@pytest.mark.slow
def test_a_partly_done_recipe_prices_what_remains(real_data, tmp_path):
    store = _laptop_store(tmp_path, real_data)
    unit = store / "denosent__minilm__daf2a772__s0"  # its stage is its own (no other unit reuses it)
    import json

    (home,) = [e["home"] for e in json.loads((unit / "stages.json").read_text())]
    shutil.rmtree(unit)
    shutil.rmtree(store / home)
    text = _dry_run(store, real_data)
    line = next(ln for ln in text.splitlines() if ln.startswith("cost"))
    assert line.startswith("cost of what remains (1 stage(s) to train, 40 optimizer steps; 8 evaluation(s) of 1 "
                           "unit(s) and 0 baseline(s)) on this CPU, all its cores: about "), line
    assert " to " in line and "basis: " in line and "the range: 1.1 to 2 CPU seconds per wall second" in line


def test_the_remaining_cost_counts_the_learning_curve_evaluations_as_the_stored_prediction_does():
    """A stage that scores a learning curve while it trains makes those evaluations too: the dry run's remaining
    cost of an empty store and the prediction `bench reproduce` stores are one number (the laptop recipe's dry run
    said 2.1 h while its stored prediction said 2.6 h, the difference its curve points)."""
    from usebench.reproduce.recipe_cost import profile_cost

    stage = SimpleNamespace(method="tsdae", steps=500, home="tsdae-home", data={"kind": "corpus"},
                            identity={"config": {"batch_size": 8, "amp": "off", "curve_task": "sickr",
                                                 "curve_steps": [100, 250, 500]}})
    profile = parse_profile(PROFILE, "t")
    work = Remaining([(stage, "minilm")], [("stsb",)], [])
    est = estimate(work, profile, "cpu", "local", measure=False)
    cpu_s = 500 * 1.0 + 2 * 20.0 + 10.0 + 5.0  # the steps, two curve points before the last step, the unit's own
    assert est.hours == pytest.approx(cpu_s / 1.6 / 3600)
    whole = profile_cost(profile, [SimpleNamespace(stages=[stage], evals=("stsb",))], [], measure=False)
    assert whole.hours == pytest.approx(est.hours)
