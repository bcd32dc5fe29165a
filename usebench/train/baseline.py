"""The untrained baseline of a preset: which backbone `bench run --methods base` evaluates, with which pooling.

The ``base`` row of a results table is the backbone the trained rows start from, evaluated as the paper
evaluates it. For the ``paper`` preset that is the TSDAE paper's Table 2 row "BERT-base-uncased": the
backbone of every unsupervised method there (§4, papers/000 line 118), with mean pooling (line 122: "The
unsupervised baseline of *BERT-base-uncased* with mean pooling"; row values on line 221). ``--model`` replaces
the backbone; the pooling stays the row's, so the baseline is always scored the way the paper scores it.
"""
from __future__ import annotations

from dataclasses import dataclass

from usebench.errors import ConfigError


@dataclass(frozen=True)
class Baseline:
    """One preset's untrained row: backbone, pooling and where both come from."""

    model: str
    pooling: str
    source: str


BASELINES: dict[str, Baseline] = {
    "paper": Baseline("bert-base-uncased", "mean",
                      "TSDAE paper Table 2 row 'BERT-base-uncased': mean pooling (§4.1, papers/000 lines 122, 221)"),
    # The official presets train bert-base-uncased as well (ct-ibn/ct-st name distilbert: pass --model for those).
    "official": Baseline("bert-base-uncased", "mean",
                         "the methods' reference scripts start from bert-base-uncased; mean pooling as Table 2"),
    "smoke": Baseline("minilm", "mean", "the packaged all-MiniLM-L6-v2 with its own (mean) pooling"),
}


def base_encoder(preset: str | None, model: str | None = None) -> tuple[str, str]:
    """(backbone, pooling) that ``base`` evaluates for ``preset`` (None: ``paper``, every method's default).

    ``model`` (``--model``) replaces the backbone but not the pooling. An unknown preset is a ConfigError.
    """
    name = preset or "paper"
    if name not in BASELINES:
        raise ConfigError(f"preset {name!r} has no untrained baseline row (known: {', '.join(BASELINES)}); "
                          f"run `base` with one of those presets or evaluate the model with `bench eval`")
    row = BASELINES[name]
    return model or row.model, row.pooling
