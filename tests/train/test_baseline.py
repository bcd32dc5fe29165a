"""`bench run --methods base` evaluates the preset's backbone with the paper's pooling for that row."""
from __future__ import annotations

import pytest

from usebench.errors import ConfigError
from usebench.train.baseline import base_encoder


def test_paper_baseline_is_table2_bert_base_uncased_with_mean_pooling():
    # TSDAE paper §4.1: "The unsupervised baseline of BERT-base-uncased with mean pooling" (Table 2 row, 46.3 avg).
    assert base_encoder("paper") == ("bert-base-uncased", "mean")
    assert base_encoder(None) == ("bert-base-uncased", "mean")  # paper is every method's default preset


def test_model_override_keeps_the_rows_pooling():
    assert base_encoder("paper", "minilm") == ("minilm", "mean")
    assert base_encoder("smoke") == ("minilm", "mean")


def test_unknown_preset_is_an_error_naming_the_known_ones():
    with pytest.raises(ConfigError, match="paper, official, smoke"):
        base_encoder("st")
