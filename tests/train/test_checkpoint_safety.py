"""A shared store runs no one's code (issue 32): a train state is loaded with ``torch.load(weights_only=True)``,
so a pickle placed as ``train_state/state.pt`` is refused before anything in it runs, and a state this version
wrote still resumes."""
from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from usebench.errors import BenchError
from usebench.train.checkpoint import STATE_FILE, load_train_state, rng_state, save_train_state, set_rng_state


class _Payload:
    """Unpickling this writes a marker file: what a crafted state would do with os.system instead."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "ran"))


def test_a_crafted_pickle_placed_as_a_train_state_is_refused_without_running(tmp_path):
    marker = tmp_path / "marker"
    state_dir = tmp_path / "train_state"
    state_dir.mkdir()
    torch.save({"method": "tsdae", "config_hash": "x", "step": 1, "hook": _Payload(marker)}, state_dir / STATE_FILE)
    with pytest.raises(BenchError, match="refused to load this train state"):
        load_train_state(state_dir, "tsdae", "x")
    assert not marker.exists()  # the payload never ran
    # the same file, loaded as the old code did, runs it: the test's payload is real
    torch.load(state_dir / STATE_FILE, weights_only=False)
    assert marker.read_text() == "ran"


def test_a_state_this_version_writes_loads_with_its_rng_states(tmp_path):
    random.seed(3)
    np.random.seed(3)
    torch.manual_seed(3)
    saved = rng_state("cpu")
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    save_train_state(tmp_path, {"method": "m", "config_hash": "h", "step": 5, "rng": saved,
                                "module": {"w": torch.ones(2)}, "dev_best": None})
    state = load_train_state(tmp_path, "m", "h")
    assert state is not None and state["step"] == 5
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    set_rng_state(state["rng"], "cpu")
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


def test_a_state_that_is_not_a_dict_is_named(tmp_path):
    torch.save([1, 2], tmp_path / STATE_FILE)
    with pytest.raises(BenchError, match="not a train state"):
        load_train_state(tmp_path, "m", "h")
    assert os.path.isfile(tmp_path / STATE_FILE)
