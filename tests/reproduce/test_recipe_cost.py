"""usebench/reproduce/recipe_cost.py: a CPU-scale recipe's time from its own measured units (issue 47)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from usebench.errors import ConfigError
from usebench.reproduce.recipe_cost import parse_profile, profile_cost
from usebench.reproduce.recipes import load_recipe, recipe_path

PROFILE = {"measured_on": "a test machine", "matmul_gflops_one_thread": 100.0, "speedup_all_cores": 2.0,
           "step_cpu_s": {"tsdae": 1.0, "simcse": 40.0}, "eval_cpu_s": {"stsb": 10.0, "sickr": 20.0},
           "unit_overhead_cpu_s": 5.0}


def _unit(method: str, steps: int, home: str, evals=("stsb", "sickr")):
    return SimpleNamespace(stages=(SimpleNamespace(method=method, steps=steps, home=home),), evals=evals)


def test_the_cost_adds_each_distinct_stage_once_every_evaluation_and_a_setup_per_unit():
    profile = parse_profile(PROFILE, "t.toml: cost")
    units = [_unit("tsdae", 100, "a"), _unit("tsdae", 100, "a"), _unit("simcse", 10, "b", ("stsb", "quora"))]
    baselines = [SimpleNamespace(name="base", evals=("stsb",)), SimpleNamespace(name="bm25", evals=("stsb",))]
    cost = profile_cost(profile, units, baselines, measure=False)
    assert cost.train_cpu_s == 100 * 1.0 + 10 * 40.0  # the shared stage "a" once
    assert cost.eval_cpu_s == 30 + 30 + 10 + 10  # three units, then the base row (BM25 encodes nothing)
    assert cost.overhead_cpu_s == 15 and cost.unknown == ["quora"]
    assert cost.hours == pytest.approx((500 + 80 + 15) / 2.0 / 3600)
    assert "no figure for quora (not counted)" in cost.text() and "/ 2 for all cores" in cost.text()
    cost.here_gflops = 50.0  # a machine half as fast on one thread takes twice as long
    assert cost.hours == pytest.approx(2 * (500 + 80 + 15) / 2.0 / 3600)


@pytest.mark.parametrize("change, message", [
    ({"speedup": 2}, "unknown key(s) speedup"),
    ({"step_cpu_s": {}}, "step_cpu_s: expected a table"),
    ({"eval_cpu_s": {"stsb": -1}}, "eval_cpu_s.stsb: expected a positive number"),
    ({"matmul_gflops_one_thread": "fast"}, "matmul_gflops_one_thread: expected a positive number"),
])
def test_a_bad_cost_table_names_its_key(change, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_profile({**PROFILE, **change}, "t.toml: cost")
    missing = {k: v for k, v in PROFILE.items() if k != "unit_overhead_cpu_s"}
    with pytest.raises(ConfigError, match="missing key"):
        parse_profile(missing, "t.toml: cost")


def test_the_laptop_recipe_has_a_figure_for_every_method_and_task_it_runs():
    recipe = load_recipe(recipe_path("laptop"))
    assert recipe.cost is not None
    *runs, bm25 = recipe.tables[0].runs
    assert set(bm25.methods) == {"bm25"}
    assert {m for run in runs for m in run.methods} == set(recipe.cost.step_cpu_s)
    from usebench import tasks  # noqa: F401
    from usebench.tasks import expand_tasks

    for run in runs:
        assert set(expand_tasks(f"{run.tasks},{run.eval_tasks}")) == set(recipe.cost.eval_cpu_s)
