"""The ``laptop`` preset every method of the CPU-scale recipe shares (usebench/recipes/laptop.toml).

Each method's ``laptop`` preset is its paper's hyper-parameters (batch size, learning rate and schedule, noise,
pooling) on the packaged all-MiniLM-L6-v2, with only the step budget cut so that the recipe's 24 units (8 methods x 3
seeds) and its baselines finish in about 3 hours on a 2-core CPU; each method module says its cut and why. What every
method changes the same way, and why:

- ``model``: the packaged MiniLM (the recipe starts each method from it, as the paper's domain adaptation starts from
  SBERT-base-nli-stsb-v2: ``--nli-sts-model minilm``).
- ``amp``: off. Mixed precision is a GPU speed-up; on a CPU fp16 autocast is slower, so the papers' fp16 runs
  (SimCSE, ConSERT) train in fp32 here, which their reference loops also support.
- no checkpoint selection: the TSDAE paper trains every unsupervised method for a fixed number of steps (App. B,
  ``000`` line 408: early stopping on in-domain labels is impractical), so the methods whose own papers keep the
  best STSb-dev checkpoint (SimCSE, ConSERT, DenoSent, PaSeR) train their fixed budget here too.
- ``log_every`` 10 (the learning curves of the recipe's page) and ``save_every`` 100 (a killed run resumes from its
  last train state: a unit of the recipe trains for minutes).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LAPTOP: dict[str, Any] = {"model": "minilm", "amp": "off", "dev_task": None, "dev_every": 0, "dev_patience": None,
                          "log_every": 10, "save_every": 100}
# The batch-8 methods of the TSDAE paper (TSDAE, CT, BERT-flow, MLM: 100K steps each, App. B) keep one budget among
# them, as the paper does: 500 steps of 8 sentences (4,000 of the corpus' 36,738; 0.5% of the paper's steps).
BATCH8_STEPS = 500


def laptop_note(values: Mapping[str, Any]) -> str:
    """The head every method's ``laptop`` note shares, said from that preset's own ``values`` (a preset that logs
    every 5 steps and saves every 20 says so, not the shared 10 and 100 it overrides)."""
    model = "the packaged MiniLM" if values.get("model") == "minilm" else str(values.get("model"))
    amp = values.get("amp", "off")
    precision = "fp32 (no AMP on a CPU)" if amp == "off" else f"amp={amp}"
    selection = ("no checkpoint selection (TSDAE App. B's fixed steps)" if values.get("dev_task") is None
                 else f"checkpoint selection on {values['dev_task']}")
    return (f"the CPU-scale recipe (usebench/recipes/laptop.toml): the paper's hyper-parameters on {model}, "
            f"{precision}, {selection}, log every {_steps(values['log_every'])}, train state every "
            f"{_steps(values['save_every'])}; ")


def _steps(n: int) -> str:
    return "step" if n == 1 else f"{n:,} steps"
