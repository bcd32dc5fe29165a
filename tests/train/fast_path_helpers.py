"""What the fast-path tests share (tests/train/test_fast_path.py, test_static_shapes.py, test_fast_path_runtime.py):
the tolerance of a loss-curve comparison, the methods every run compiles, a tiny run without dropout."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.train import loop
from tests.methods.helpers import one_thread, tiny_config, toy_data

RTOL = 1e-4  # per logged loss, fp32
LONG = pytest.mark.skipif(not os.environ.get("USEBENCH_LONG_TESTS"),
                          reason="minutes of inductor compiles on a CPU: set USEBENCH_LONG_TESTS=1 to run")
REPRESENTATIVE = ["tsdae", "simcse", "mlm"]  # a decoder + labelled head, dropout views, BertAdam (CT: the sweep)
PROBE = ["the river runs past the house", "a dog and a fish", "mountain night ocean", "kite"]


def no_dropout_config(method, model_dir: Path, **overrides):
    """The tiny-run config with every dropout of the config off (DenoSent's noise and decoder too)."""
    extra = {"noise_dropout": 0.0, "decoder_dropout": 0.0} if method.name == "denosent" else {}
    return tiny_config(method, model_dir, dropout=False, **{**extra, **overrides})


def losses(result) -> list[float]:
    return [line["loss"] for line in result.history if "loss" in line]


def run(method, cfg, out: Path, fast_path: str, **kwargs):
    with one_thread():
        return loop.train(method, cfg, toy_data(method), out, seed=3, show_progress=False, resume=False,
                          device="cpu", workers=0, fast_path=fast_path, **kwargs)


def assert_same_curve(a: list[float], b: list[float]) -> None:
    assert len(a) == len(b) >= 3
    np.testing.assert_allclose(b, a, rtol=RTOL, atol=0)

