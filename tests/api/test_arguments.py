"""Issue 40, item 4: the API's arguments are checked at the call and refused in Python's words
(ValueError / TypeError subclasses of BenchError), with a short did-you-mean."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import usebench
from usebench.api.arguments import python_words
from usebench.errors import BenchError

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def fn(texts):
    return np.array([[len(t), 1.0] for t in texts])


def call(**kwargs):
    args = {"model": fn, "tasks": "stsb", "data_root": ASSETS, "name": "f", "show_progress": False, **kwargs}
    return usebench.evaluate(args.pop("model"), args.pop("tasks"), **args)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"tasks": None}, TypeError, r"tasks: expected a task or group name .* got NoneType None; usebench.list_tasks"),
    ({"tasks": 42}, TypeError, r"tasks: expected a task or group name"),
    ({"tasks": " , "}, ValueError, r"tasks: no task named"),
    ({"tasks": "stbs"}, ValueError, r"unknown task 'stbs'; did you mean .*'stsb'"),
    ({"tasks": ["stsb", "twiterpara"]}, KeyError, r"did you mean 'twitterpara'"),
    ({"batch_size": 0}, ValueError, r"batch_size must be a positive integer or None, got 0"),
    ({"batch_size": 2.5}, TypeError, r"batch_size must be a positive integer or None, got float 2.5"),
    ({"split": "valid"}, ValueError, r"split='valid': the tasks have the splits \['dev', 'test'\]; the useb kit's"),
    ({"precision": "fp16"}, ValueError, r"precision must be one of 'fp32', 'bf16', got 'fp16'"),
    ({"name": 5}, TypeError, r"name must be a non-empty string, got 5"),
    ({"device": "tpu"}, ValueError, r"device=tpu: unknown device|unsupported device type 'tpu'"),
    ({"data_root": 3}, TypeError, r"data_root must be a path"),
    ({"model": "minilm", "name": None, "batch_size": -1}, ValueError, r"batch_size must be a positive integer"),
])
def test_bad_arguments_are_python_errors_at_the_call(kwargs, error, message):
    with pytest.raises(error, match=message) as caught:
        call(**kwargs)
    assert isinstance(caught.value, BenchError) and len(str(caught.value)) < 400
    assert "--" not in str(caught.value)  # no command-line option named to a Python caller


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_missing_gpu_is_said_in_pythons_words():
    with pytest.raises(ValueError, match=r"device=cuda: CUDA is not available .* use device='cpu' or leave device= out"):
        call(model="minilm", name=None, device="cuda")


def test_python_words_spell_the_keywords():
    assert python_words("--batch-size must be a positive integer") == "batch_size= must be a positive integer"
    assert python_words("choose another with --results-dir") == "choose another with results_dir="


def test_load_results_and_aggregate_say_what_they_expected(tmp_path):
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(NotADirectoryError, match=r"x.json is a file; load_results reads a results directory"):
        usebench.load_results(tmp_path / "x.json")
    with pytest.raises(FileNotFoundError, match=r"results directory .*nowhere does not exist"):
        usebench.load_results(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.warns(UserWarning, match=r"no results under .*empty"):
        assert usebench.load_results(tmp_path / "empty").empty
    with pytest.raises(TypeError, match=r"aggregate expects a DataFrame"):
        usebench.aggregate([1, 2])
    import pandas as pd

    with pytest.raises(ValueError, match=r"lacks the columns \['task'"):
        usebench.aggregate(pd.DataFrame({"x": [1]}))
