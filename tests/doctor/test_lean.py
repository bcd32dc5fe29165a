"""usebench/doctor/lean.py: the lean loop steps torch's fused AdamW by default, or the trainer's own optimizer
(``optimizer="trainer"``), so that ours/lean isolates the loop's overhead from the optimizer's kernels."""
from __future__ import annotations

import pytest

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.doctor.common import Size
from usebench.doctor.lean import LeanStep
from usebench.doctor.trainers import method_config
from usebench.registry import METHODS
from usebench.train.blocked_optim import BlockedAdamW
from usebench.train.optim import BertAdam


# on a CPU the trainer's AdamW is torch's per-parameter loop run over cache-sized blocks (the same bits)
@pytest.mark.parametrize("name, trainer_optimizer", [("simcse", BlockedAdamW), ("bertflow", BertAdam)])
def test_the_lean_loop_steps_the_optimizer_it_is_asked_for(tiny_bert_dir, name, trainer_optimizer):
    method = METHODS.get(name)
    cfg = method_config(method, str(tiny_bert_dir), Size(batch=4, seq=16), "off", 2)
    fused = LeanStep(method, cfg, "cpu", "fp32")
    assert fused.optimizer_label == "AdamW fused" and fused.optimizer.defaults["fused"]
    ours = LeanStep(method, cfg, "cpu", "fp32", optimizer="trainer")
    assert type(ours.optimizer) is trainer_optimizer and ours.optimizer_label.endswith("(the trainer's)")
    assert not ours.optimizer.defaults.get("fused")  # the old path's kernels, as `bench run` steps on a CPU
    with pytest.raises(ValueError, match="'fused' or 'trainer'"):
        LeanStep(method, cfg, "cpu", "fp32", optimizer="sgd")
