"""Learning curves on a task's metric (``curve_task`` / ``curve_steps``): scored while training, written to the
stage's log.jsonl, resumable, and a reading only: the run's weights are those of a run without them."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.errors import BenchError, ConfigError
from usebench.registry import METHODS
from usebench.run.curve import curve_evaluator, curve_points
from usebench.train.loop import train
from tests.methods.helpers import one_thread, tiny_config, toy_corpus


class Crash(Exception):
    pass


def _weights(checkpoint: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(checkpoint / "model.safetensors"))


def _lines(home: Path) -> list[dict]:
    return [json.loads(line) for line in (home / "log.jsonl").read_text().splitlines()]


def noisy_evaluator(seen: list[str]):
    """A curve scorer that draws from every global RNG (as loading a model may): the run must not notice."""
    import random

    import numpy as np

    def score(checkpoint: Path) -> dict[str, Any]:
        seen.append(json.loads((checkpoint / "method.json").read_text())["steps"])
        torch.rand(5), np.random.rand(3), random.random()
        return {"curve_task": "fake", "curve_score": 0.5 + len(seen) / 100}

    return score


def test_curve_points_are_log_lines_and_leave_the_weights_of_a_run_without_them(tiny_bert_dir, tmp_path):
    method = METHODS.get("tsdae")  # dropout, deletion noise, a tied decoder: every RNG the loop draws from
    plain = tiny_config(method, tiny_bert_dir, max_steps=6, log_every=2, max_length=16)
    curved = plain.replace(curve_task="twitterpara", curve_steps=(2, 4, 6, 9))
    seen: list = []
    with one_thread():
        a = train(method, plain, toy_corpus(32), tmp_path / "a", seed=3, show_progress=False, device="cpu")
        b = train(method, curved, toy_corpus(32), tmp_path / "b", seed=3, show_progress=False, device="cpu",
                  curve_eval=noisy_evaluator(seen))
    assert seen == [2, 4]  # 6 is the run's last step (its own result), 9 is past it
    points = curve_points(_lines(tmp_path / "b"))
    assert sorted(points) == [2, 4] and points[4]["curve_score"] == pytest.approx(0.52)
    assert not (tmp_path / "b" / ".curve_probe").exists()
    wa, wb = _weights(a.checkpoint), _weights(b.checkpoint)
    for k in wa:
        torch.testing.assert_close(wa[k], wb[k], rtol=0, atol=0, msg=k)
    losses = [ln["loss"] for ln in _lines(tmp_path / "a")]
    assert [ln["loss"] for ln in _lines(tmp_path / "b") if "loss" in ln] == losses


def test_a_resumed_run_keeps_its_curve_points_and_scores_the_lost_ones_again(tiny_bert_dir, tmp_path):
    method = METHODS.get("tsdae")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=8, save_every=2, log_every=1, max_length=16,
                      curve_task="twitterpara", curve_steps=(2, 5))
    seen: list = []

    def crash_at_5(step: int) -> None:
        if step == 5:
            raise Crash

    with one_thread():
        with pytest.raises(Crash):  # after the point at 5 was written; the last train state is step 4's
            train(method, cfg, toy_corpus(32), tmp_path / "a", seed=1, show_progress=False, device="cpu",
                  curve_eval=noisy_evaluator(seen), on_step=crash_at_5)
        train(method, cfg, toy_corpus(32), tmp_path / "a", seed=1, show_progress=False, device="cpu",
              curve_eval=noisy_evaluator(seen))
    assert seen == [2, 5, 5]  # 2 kept from before the crash, 5 scored again after the resume at 4
    steps = [ln["step"] for ln in _lines(tmp_path / "a") if "curve_score" in ln]
    assert steps == [2, 5]


def test_curve_settings_are_checked_and_a_run_without_a_scorer_is_refused(tiny_bert_dir, tmp_path):
    method = METHODS.get("tsdae")
    with pytest.raises(ConfigError, match="go together"):
        tiny_config(method, tiny_bert_dir, curve_steps=(10,))
    with pytest.raises(ConfigError, match="increasing steps >= 1"):
        tiny_config(method, tiny_bert_dir, curve_task="twitterpara", curve_steps=(20, 10))
    cfg = tiny_config(method, tiny_bert_dir, max_steps=4, curve_task="twitterpara", curve_steps=(2,))
    with pytest.raises(BenchError, match="needs a curve evaluator"):
        train(method, cfg, toy_corpus(32), tmp_path / "a", seed=0, show_progress=False, device="cpu")


def test_the_curve_scorer_gives_the_tasks_test_result_of_that_checkpoint(tiny_bert_dir, grid_root):
    """A point is what `bench eval` stores for the same checkpoint: the test split's metrics and data hash."""
    from usebench import tasks  # noqa: F401
    from usebench.eval.encoder import HFEncoder
    from usebench.eval.evaluate import evaluate
    from usebench.eval.scorer import DenseScorer

    @dataclass
    class Spec:
        batch_size: int = 16
        device: str = "cpu"

    cfg = tiny_config(METHODS.get("tsdae"), tiny_bert_dir, curve_task="twitterpara", curve_steps=(2,))
    with one_thread():
        point = curve_evaluator(cfg, Spec(), grid_root)(tiny_bert_dir)
        again = curve_evaluator(cfg, Spec(), grid_root)(tiny_bert_dir)
        ev = evaluate("twitterpara", DenseScorer(HFEncoder(str(tiny_bert_dir), show_progress=False)), "test",
                      grid_root)
    assert point == again
    assert point["curve_score"] == pytest.approx(ev.main_score, abs=1e-6) and point["curve_metric"] == "ap_avg"
    assert point["curve_split"] == "test" and point["curve_data_sha256"] == ev.data_sha256
    assert point["curve_scores"].keys() == ev.scores.keys()


def test_the_recipe_cost_counts_the_curve_points_a_stage_scores_while_training():
    from usebench.reproduce.recipe_cost import CpuProfile, curve_points_of, profile_cost

    @dataclass
    class Stage:
        method: str
        home: str
        steps: int
        identity: dict = field(default_factory=dict)

    @dataclass
    class Unit:
        stages: tuple
        evals: tuple = ("twitterpara",)

    curve = {"config": {"curve_task": "twitterpara", "curve_steps": [100, 250, 500]}}
    long, short = Stage("tsdae", "a", 1000, curve), Stage("tsdae", "b", 500, curve)
    assert curve_points_of(long) == 3 and curve_points_of(short) == 2  # 500 of 500 is the unit's own result
    assert curve_points_of(Stage("tsdae", "c", 0, curve)) == 0  # a step-0 unit scores no curve
    profile = CpuProfile("m", 100.0, 1.0, {"tsdae": 1.0}, {"twitterpara": 10.0}, 0.0)
    cost = profile_cost(profile, [Unit((long,)), Unit((long,)), Unit((short,))], [], measure=False)
    # the stage shared by two units trains and draws its curve once: 1000 + 500 steps, 3 + 2 points, 3 results
    assert cost.train_cpu_s == 1500 and cost.eval_cpu_s == (3 + 2 + 3) * 10.0
