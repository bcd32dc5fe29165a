"""The laptop recipe's one policy (usebench/recipes/laptop_presets.py): each method's ``laptop`` preset is its
paper preset on the packaged MiniLM, truncated. Checked against the paper presets themselves: the same resolved
config but for what the policy names, and the same learning rate at every step the laptop run takes."""
from __future__ import annotations

import pytest

from usebench import methods  # noqa: F401
from usebench.registry import METHODS
from usebench.train.optim import lr_multiplier
from usebench.train.sampling import run_steps

# Each method's paper preset the laptop one truncates (BERT-flow: App. B's stated mean pooling; DenoSent: its
# 'w/o discrete noise' ablation, the back-translations being absent), and the keys the policy changes besides.
PAPER = {"tsdae": ("paper", ()), "mlm": ("paper", ()), "ct": ("paper", ()), "simcse": ("paper", ()),
         "bertflow": ("paper-mean", ("ddi_batch_size",)), "consert": ("paper", ()),
         "denosent": ("paper-no-bt", ()), "paser": ("paper", ())}
POLICY = ("model", "amp", "stop_at_step", "curve_task", "curve_steps", "log_every", "save_every")
CORPUS = 41_510  # the recipe's corpus: the Twitter URL sides' 36,738 sentences and PIT-2015 dev's 4,772


@pytest.mark.parametrize("name", sorted(PAPER))
def test_the_laptop_preset_is_the_paper_preset_truncated(name):
    method = METHODS.get(name)
    preset, extra = PAPER[name]
    laptop, paper = method.config("laptop"), method.config(preset)
    changed = {k for k in vars(paper) if getattr(paper, k) != getattr(laptop, k)}
    assert changed <= set(POLICY) | set(extra), changed - set(POLICY) - set(extra)
    assert laptop.model == "minilm" and laptop.amp == "off" and laptop.curve_task == "twitterpara"
    horizon = method.total_steps(laptop, CORPUS)
    assert horizon == method.total_steps(paper, CORPUS)  # the schedule's length is the paper's budget
    stop = run_steps(method, laptop, CORPUS)
    assert stop == laptop.stop_at_step < horizon
    ours, theirs = lr_multiplier(laptop, horizon), lr_multiplier(paper, horizon)
    assert [ours(s) for s in range(stop)] == [theirs(s) for s in range(stop)]
    assert all(s < stop for s in laptop.curve_steps[:2]) and list(laptop.curve_steps) == sorted(laptop.curve_steps)


def test_the_truncation_leaves_mlm_and_denosent_in_their_warm_up_and_ct_in_its_first_segment():
    """What the policy means for the methods whose schedules start slowly (the page says it per method)."""
    def last_lr(name: str) -> float:
        cfg = METHODS.get(name).config("laptop")
        horizon = METHODS.get(name).total_steps(cfg, CORPUS)
        return cfg.lr * lr_multiplier(cfg, horizon)(cfg.stop_at_step - 1)

    assert last_lr("mlm") == pytest.approx(5e-5 * 999 / 10_000)  # 1,000 of the 10K warm-up steps
    assert last_lr("denosent") == pytest.approx(5e-5 * 39 / 500)
    assert last_lr("ct") == 1e-5  # steps 1-500 at 1e-5 (App. B's piecewise schedule, in steps)
    assert last_lr("consert") == pytest.approx(5e-7 * 59 / 433)  # 10% of 10 epochs of 433 steps
    assert last_lr("simcse") == pytest.approx(5e-5 * (82 - 9) / 82)  # linear decay over 1 epoch of 82 steps
