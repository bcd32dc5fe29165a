"""The pooling of a supervised stage in a chain (usebench/methods/parts/chain_pooling.py), by hand: a stateless
pooling of the checkpoint it starts from is kept; one with trained state gives its stateless part (SimCSE's MLP on
CLS: CLS) or the default, once noted."""
from __future__ import annotations

import pytest

from usebench.methods.parts.chain_pooling import supervised_pooling


@pytest.mark.parametrize(("start", "expected"), [(None, "mean"), ("cls", "cls"), ("max", "max"),
                                                 ("first_last_avg", "first_last_avg")])
def test_a_stateless_start_is_kept_without_a_note(start, expected):
    notes: list[str] = []
    assert supervised_pooling("sbert-nli", start, "mean", notes) == expected and notes == []


@pytest.mark.parametrize(("start", "expected"), [("cls_mlp", "cls"), ("mask_token", "mean"), ("flow", "mean")])
def test_a_pooling_with_trained_state_gives_its_stateless_part_with_one_note(start, expected):
    notes: list[str] = []
    for _ in range(2):
        assert supervised_pooling("sbert-stsb", start, "mean", notes) == expected
    assert len(notes) == 1 and notes[0].startswith(f"sbert-stsb after a checkpoint with {start} pooling trains and "
                                                   f"exports {expected}")
    assert "--set sbert-stsb.pooling=" in notes[0]
