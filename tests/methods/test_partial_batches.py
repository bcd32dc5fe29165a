"""An epoch ends as the method's reference loader ends it: with its last, smaller batch (a DataLoader with
drop_last=False: the HF Trainer of SimCSE, MLM, DenoSent, PaSeR and the thesis' SimCSE-based code; the
sentence-transformers TSDAE README's DataLoader) or without it (the default, drop_last=True); ``drop_last``
overrides either (the thesis' presets: its tables count floor(n / batch) steps)."""
from __future__ import annotations

import pytest

from usebench import methods  # noqa: F401
from usebench.registry import METHODS
from usebench.train.plugin import Method

KEEP = ("tsdae", "simcse", "mlm", "denosent", "paser")


@pytest.mark.parametrize("name", KEEP)
def test_an_epoch_of_20_sentences_at_batch_8_is_3_steps_covering_every_sentence(name):
    method = METHODS.get(name)
    cfg = method.config("smoke", {"epochs": 1.0, "max_steps": None, "batch_size": 8})
    assert method.total_steps(cfg, 20) == 3  # ceil(20 / 8): 8 + 8 + 4
    batches = [method.batch_indices(cfg, 20, step, seed=0) for step in range(3)]
    assert [len(b) for b in batches] == [8, 8, 4]
    assert sorted(i for b in batches for i in b) == list(range(20))
    assert len(method.batch_indices(cfg, 20, 3, seed=0)) == 8  # the next epoch starts with a whole batch


def test_the_default_drops_the_partial_batch():
    assert Method.keep_partial_batch is False


def test_drop_last_overrides_the_reference_loader():
    simcse = METHODS.get("simcse")
    cfg = simcse.config("thesis", {"epochs": 1.0, "batch_size": 64})
    assert cfg.drop_last is True and simcse.total_steps(cfg, 100_000) == 1562  # thesis Table 5.11's 1562
    assert simcse.total_steps(cfg.replace(drop_last=None), 100_000) == 1563  # the HF Trainer's ceil
