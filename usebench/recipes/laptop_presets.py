"""The ``laptop`` preset every method of the CPU-scale recipe shares (usebench/recipes/laptop.toml, beside it).

One policy for every method: **the paper's run, truncated**. Each method's ``laptop`` preset is its ``paper``
preset (batch size, optimizer, learning rate *and its schedule over the paper's whole budget*, noise, pooling,
checkpoint selection) on the packaged all-MiniLM-L6-v2, stopped early with ``stop_at_step``. The schedule is never
rescaled to the short run: MLM's 10K warm-up stays 10K steps (1,000 steps stay inside it, at most 10% of the peak
learning rate, as CT's piecewise rate stays in its first segment), DenoSent's 500-step warm-up stays 500, and the
epoch-based schedules (SimCSE 1 epoch, ConSERT 10 epochs with 10% warm-up, PaSeR 5 epochs) are laid out over those
epochs of this corpus. What the truncation leaves of each method is therefore its paper's first steps, which the
recipe's page states per method (and the loss of each new head at the last step). Besides the cut, every method
changes the same way:

- ``model``: the packaged MiniLM (the recipe starts each method from it, as the paper's domain adaptation starts from
  SBERT-base-nli-stsb-v2: ``--nli-sts-model minilm``).
- ``amp``: off. Mixed precision is a GPU speed-up; on a CPU fp16 autocast is slower, so the papers' fp16 runs
  (SimCSE, ConSERT) train in fp32 here, which their reference loops also support.
- checkpoint selection: each paper's own, truncated with the run. TSDAE, MLM, CT and BERT-flow train a fixed
  number of steps (TSDAE paper App. B, ``000`` line 408); SimCSE keeps its official STSb-dev evaluation every 125
  steps (App. B's footnote 8, line 434), ConSERT, DenoSent and PaSeR their papers' (every 200 steps of an epoch and
  at its end, every 50, every 125): no such evaluation falls inside the laptop budget, so every unit is its last
  step, as it would be for SimCSE in the paper's own TwitterPara run (one epoch of its 53K sentences at batch 512 is
  104 steps, fewer than 125).
- ``curve_task`` TwitterPara: its test AP scored at :data:`BATCH8_CURVE` steps (the batch-8 methods) or at 20% and
  50% of the budget (:func:`fraction_curve`, the methods whose papers train few large steps): a learning curve to
  read beside the loss, never a selection.
- ``log_every`` 10 (the loss curves of the recipe's page) and ``save_every`` 100 (a killed run resumes from its
  last train state: a unit of the recipe trains for minutes).
"""
from __future__ import annotations

from typing import Any

LAPTOP: dict[str, Any] = {"model": "minilm", "amp": "off", "log_every": 10, "save_every": 100,
                          "curve_task": "twitterpara"}
# TSDAE and MLM, the paper's story and the largest seed spread of the first laptop run (1.94 and 1.68 points of
# TwitterPara AP): 1,000 of their 100K steps of 8 sentences. CT and BERT-flow, the paper's other batch-8 methods:
# 500 (4,000 of the corpus' sentences; 0.5% of the paper's steps).
LONG_STEPS = 1000
BATCH8_STEPS = 500
# The batch-8 methods' curve: 100 and 250 steps (20% and 50% of 500; 10% and 25% of 1,000), and 500 for the two
# that run 1,000 (a point at a run's last step is the unit's own result).
BATCH8_CURVE = (100, 250, 500)
def laptop_note(cfg: Any) -> str:
    """The head every method's ``laptop`` note shares, said from that preset's resolved config ``cfg`` (a preset that
    logs every 5 steps and saves every 20 says so, not the shared 10 and 100 it overrides; a method whose paper
    selects on a dev set says where, and that no such evaluation falls inside the budget)."""
    model = "the packaged MiniLM" if cfg.model == "minilm" else str(cfg.model)
    precision = "fp32 (no AMP on a CPU)" if cfg.amp == "off" else f"amp={cfg.amp}"
    stop = cfg.stop_at_step
    selection = ("no checkpoint selection (TSDAE App. B's fixed steps)" if cfg.dev_task is None else
                 f"the paper's selection on {cfg.dev_task} dev every {cfg.dev_every:,} steps kept (none within "
                 f"{stop:,})")
    curve = ", ".join(f"{s:,}" for s in cfg.curve_steps if stop is None or s < stop)
    return (f"the CPU-scale recipe (usebench/recipes/laptop.toml): the paper preset on {model}, {precision}, "
            f"truncated with stop_at_step={stop} (the paper's LR schedule over its whole budget), {selection}; "
            f"{cfg.curve_task} test scored at steps {curve} (a curve, never a selection); log every "
            f"{_steps(cfg.log_every)}, train state every {_steps(cfg.save_every)}; ")


def _steps(n: int) -> str:
    return "step" if n == 1 else f"{n:,} steps"


def fraction_curve(steps: int) -> tuple[int, int]:
    """The curve of a method whose paper trains few large steps: at 20% and 50% of its laptop budget, the fractions
    the batch-8 methods' 100 and 250 of 500 steps are."""
    return (max(1, round(steps / 5)), max(1, round(steps / 2)))


def laptop_preset(paper: dict[str, Any], stop: int, curve: tuple[int, ...], **more: Any) -> dict[str, Any]:
    """A method's ``laptop`` preset: its ``paper`` preset without the paper's backbone and precision, the shared
    :data:`LAPTOP` values, the run stopped after ``stop`` steps and its TwitterPara curve at ``curve``."""
    own = {k: v for k, v in paper.items() if k not in ("model", "amp")}
    return {**own, **LAPTOP, "stop_at_step": stop, "curve_steps": tuple(curve), **more}
