"""Issue 40, item 6: tasks listed from Python with their metadata and data status; the `notebook` extra; text
progress bars without ipywidgets (no TqdmWarning)."""
from __future__ import annotations

import tomllib
from pathlib import Path

import usebench
from usebench.api.tasklist import TASK_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "tests" / "assets"


def test_list_tasks_shows_metadata_and_whether_the_data_is_there(tmp_path):
    frame = usebench.list_tasks(ASSETS)
    assert list(frame.columns) == list(TASK_COLUMNS)
    row = frame.set_index("name").loc["twitterpara"]
    assert (row["group"], row["protocol"], row["metric"], row["splits"]) == ("useb", "pairs", "ap_avg", ("test",))
    assert row["data_present"] and row["missing"] == "" and row["fetch"] == "bench data download useb"
    assert "useb" in row["groups"]
    empty = usebench.list_tasks(tmp_path).set_index("name")
    assert not empty["data_present"].any()
    assert empty.loc["askubuntu", "missing"] == "useb/data-eval/askubuntu/text_tokenized.txt"
    assert list(usebench.list_tasks(ASSETS, group="useb")["name"]) == ["askubuntu", "cqadupstack", "twitterpara",
                                                                      "scidocs"]


def test_the_notebook_extra_brings_ipywidgets():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("ipywidgets") for req in extras["notebook"])


def test_progress_bars_are_text_bars_without_ipywidgets(monkeypatch):
    import importlib.util

    import tqdm
    import tqdm.auto

    from usebench.eval.encoder_adapter import progress_bar_class

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ipywidgets" else real(name, *a))
    assert progress_bar_class() is tqdm.tqdm
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "ipywidgets" else real(name, *a))
    assert progress_bar_class() is tqdm.auto.tqdm


def test_with_the_notebook_extra_a_kernel_gets_widget_bars():
    """With ipywidgets installed (the `notebook` extra; CI's extras step), progress bars are tqdm.auto's: a widget
    in a Jupyter kernel, a text bar elsewhere, and no TqdmWarning."""
    import importlib.util
    import warnings

    import pytest

    if importlib.util.find_spec("ipywidgets") is None:
        pytest.skip("needs the `notebook` extra: pip install -e '.[notebook]'")
    import ipywidgets  # noqa: F401
    import tqdm.auto

    from usebench.eval.encoder_adapter import progress_bar_class

    cls = progress_bar_class()
    assert cls is tqdm.auto.tqdm
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bar = cls(total=2, disable=False)
        bar.update(2)
        bar.close()
