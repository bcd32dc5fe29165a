"""The bookkeeping keys (usebench.train.config.BOOKKEEPING_KEYS: how often the loss is logged and a train state is
saved) change no trained weight: the reason they stay out of a run's identity (issue 53, item 3)."""
from __future__ import annotations

import pytest
import torch

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.registry import METHODS
from usebench.train.config import BOOKKEEPING_KEYS, TrainConfig
from usebench.train.loop import train
from tests.methods.helpers import one_thread, tiny_config, toy_corpus


def _weights(checkpoint) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(checkpoint / "model.safetensors"))


def test_the_bookkeeping_keys_are_the_configs_logging_and_checkpoint_cadence():
    assert set(BOOKKEEPING_KEYS) == {"log_every", "save_every"}
    assert all(k in TrainConfig.__dataclass_fields__ for k in BOOKKEEPING_KEYS)


@pytest.mark.parametrize("method_name", ["tsdae", "simcse"])  # deletion noise; dropout as the noise
def test_log_every_and_save_every_leave_the_weights_bit_for_bit(tiny_bert_dir, tmp_path, method_name):
    method = METHODS.get(method_name)
    corpus = toy_corpus(32)
    runs = {}
    with one_thread():
        for name, cadence in {"a": {"log_every": 1, "save_every": 2}, "b": {"log_every": 5, "save_every": 0}}.items():
            cfg = tiny_config(method, tiny_bert_dir, max_steps=6, max_length=16, **cadence)
            runs[name] = train(method, cfg, corpus, tmp_path / name, seed=3, show_progress=False, device="cpu")
    a, b = _weights(runs["a"].checkpoint), _weights(runs["b"].checkpoint)
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0, msg=k)
    lines = {n: len((tmp_path / n / "log.jsonl").read_text().splitlines()) for n in runs}
    assert lines["a"] > lines["b"]  # the cadence did change: it is bookkeeping, not a no-op option
