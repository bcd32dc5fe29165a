"""Issue 40, item 2: frames carry the model, subset rows do not repeat the task's own metrics, usebench.table keeps
models apart (and never averages two into one cell), aggregate accepts usebench.evaluate's frame."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import usebench
from usebench.errors import BenchError

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def lengths(texts):
    return np.array([[len(t), t.count("e") + 1.0, 1.0] for t in texts])


def vowels(texts):
    return np.array([[t.count("a") + 1.0, t.count("o") + 1.0, len(t)] for t in texts])


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("store")
    for fn, name in ((lengths, "lengths"), (vowels, "vowels")):
        usebench.evaluate(fn, ["twitterpara", "stsb"], data_root=ASSETS, results_dir=root, name=name,
                          show_progress=False)
    return root


def test_the_frame_names_the_model_and_each_score_once():
    frame = usebench.evaluate(lengths, ["twitterpara", "stsb"], data_root=ASSETS, name="lengths", revision="r1",
                              show_progress=False)
    assert set(frame["model"]) == {"lengths"} and set(frame["revision"]) == {"r1"}
    mains = frame[frame["main"]]
    assert list(mains["task"]) == ["twitterpara", "stsb"] and list(mains["subset"]) == ["", ""]
    pit = frame[(frame["task"] == "twitterpara") & (frame["subset"] == "pit")]
    assert set(pit["metric"]) == {"pearson"}  # ap and spearman are the task's own ap_pit, spearman_pit
    assert not frame.duplicated(["task", "subset", "metric"]).any()


def test_aggregate_and_table_accept_an_evaluate_frame():
    frame = usebench.evaluate(lengths, "stsb", data_root=ASSETS, name="lengths", show_progress=False)
    stats = usebench.aggregate(frame)
    main = stats[stats["main"]]
    assert main["mean"].item() == frame.loc[frame["main"], "value"].item() and main["n"].item() == 1
    table = usebench.table(frame)
    assert table.loc["lengths", "stsb"] == round(frame.loc[frame["main"], "value"].item() * 100, 2)


def test_table_keeps_models_apart(store):
    table = usebench.table(usebench.load_results(store))
    assert sorted(table.index) == ["lengths", "vowels"] and list(table.columns) == ["stsb", "twitterpara"]
    frame = usebench.load_results(store)
    assert set(frame["setting"]) == {"external"}  # a function usebench did not train: not "unsupervised"


def test_table_shows_missing_values_instead_of_dropping_rows(store):
    frame = usebench.load_results(store)
    assert frame["corpus_size"].isna().all()
    table = usebench.table(frame, index=["model", "corpus_size"])
    assert len(table) == 2 and set(table.index.get_level_values("corpus_size")) == {""}


def test_table_refuses_to_average_two_results_into_one_cell():
    a = usebench.evaluate(lengths, "stsb", data_root=ASSETS, name="same", show_progress=False)
    b = usebench.evaluate(vowels, "stsb", data_root=ASSETS, name="same", show_progress=False)
    with pytest.raises(BenchError, match="appears twice|share a cell"):
        usebench.table(pd.concat([a, b]))


def test_table_says_what_is_missing(store):
    frame = usebench.load_results(store)
    with pytest.raises(ValueError, match="no 'map' score on split 'test'"):
        usebench.table(frame, metric="map")
    with pytest.raises(ValueError, match="index: no column"):
        usebench.table(frame, index=["nope"])
