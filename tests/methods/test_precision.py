"""Each paper/official preset trains in the precision of its reference, says so in `bench methods --preset`, and
records it in the run config; bf16 is only ever an explicit choice.

Sources (METHODS.md tags; checked in the scripts named): [SC] run_unsup_example.sh passes --fp16; [CS]
scripts/unsup-consert-base.sh passes --use_apex_amp --apex_amp_opt_level O1 (fp16 autocast + loss scaling); [ST]
train_stsb_simcse.py and train_stsb_ct-improved.py fit(use_amp=True); [ST] train_stsb_ct.py use_amp=False and
train_mlm.py use_fp16=False; [ST v0.3.8] fit(use_amp=False) (App. B's supervised runs, TSDAE's README fit call;
training_nli_v2.py / continue_training at v2.2.2 use_amp=False); [CTo] TensorFlow without mixed precision;
[PF] pytorch-bertflow without amp; [DS] README command without --fp16/--bf16; [PS] run_unsup_example.sh without
--fp16. "off" = fp32.
"""
from __future__ import annotations

import pytest
import torch

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.registry import METHODS
from usebench.train.config import TrainConfig
from usebench.train.loop import train
from usebench.train.catalog_text import describe_method
from usebench.train.runtime import autocast_context
from tests.methods.helpers import one_thread, tiny_config, toy_corpus

FP32, FP16 = "off", "fp16"
REFERENCE: dict[tuple[str, str], tuple[str, str]] = {
    ("tsdae", "paper"): (FP32, "[ST] fit use_amp=False"), ("tsdae", "official"): (FP32, "[ST] TSDAE README fit"),
    ("simcse", "paper"): (FP16, "[SC] --fp16"), ("simcse", "official"): (FP16, "[SC] --fp16"),
    ("simcse", "st"): (FP16, "[ST] train_stsb_simcse.py use_amp=True"),
    ("ct", "paper"): (FP32, "[CTo]/[ST] fp32"), ("ct", "official"): (FP32, "[CTo] TF fp32"),
    ("ct", "st"): (FP32, "[ST] train_stsb_ct.py use_amp=False"),
    ("ct-ibn", "paper"): (FP16, "[ST] train_stsb_ct-improved.py use_amp=True"),
    ("ct-ibn", "official"): (FP16, "[ST] train_stsb_ct-improved.py use_amp=True"),
    ("mlm", "paper"): (FP32, "BERT's setup"), ("mlm", "official"): (FP32, "[ST] train_mlm.py use_fp16=False"),
    ("consert", "paper"): (FP16, "[CS] apex O1"), ("consert", "official"): (FP16, "[CS] apex O1"),
    ("bertflow", "paper"): (FP32, "[PF]"), ("bertflow", "paper-mean"): (FP32, "[PF]"),
    ("bertflow", "official"): (FP32, "[PF]"),
    ("denosent", "paper"): (FP32, "[DS]"), ("denosent", "official"): (FP32, "[DS]"),
    ("denosent", "paper-no-bt"): (FP32, "[DS]"),
    ("paser", "paper"): (FP32, "[PS]"), ("paser", "paper-eq2"): (FP32, "[PS]"), ("paser", "official"): (FP32, "[PS]"),
    **{(m, p): (FP32, "[ST v0.3.8] / v2.2.2 examples use_amp=False")
       for m in ("sbert-mnrl", "sbert-cosine", "sbert-nli", "sbert-stsb") for p in ("paper", "official")},
    ("tsdae", "app-a"): (FP32, "[ST v0.3.8] fit use_amp=False (App. A's runs)"),
    # R. Wang 2022: no training precision stated anywhere in the thesis; fp32, the suite's default, said in the note
    ("simcse", "thesis"): (FP32, "thesis: not stated"), ("consert", "thesis"): (FP32, "thesis: not stated"),
    ("consert", "thesis2"): (FP32, "thesis: not stated"),
    **{(m, p): (FP32, "thesis: not stated") for m in ("clm-ae", "mlm-ae", "simcse-clm", "simcse-mlm", "consert-clm",
                                                       "consert-mlm") for p in ("paper", "official", "thesis")},
    # the laptop recipe's presets: fp32 on a CPU, where autocast buys nothing and fp16 does not run
    **{(m, "laptop"): (FP32, "laptop: CPU fp32") for m in ("tsdae", "mlm", "ct", "simcse", "bertflow", "consert",
                                                            "denosent", "paser")},
}


def test_every_reference_preset_is_listed():
    listed = {(m, p) for m in METHODS.names() for p in METHODS.get(m).presets if p != "smoke"}
    assert listed == set(REFERENCE)


@pytest.mark.parametrize("key", list(REFERENCE))
def test_reference_presets_train_in_their_references_precision(key):
    name, preset = key
    value, source = REFERENCE[key]
    method = METHODS.get(name)
    assert method.presets[preset].get("amp") == value, f"{name} {preset}: the preset must say amp={value} ({source})"
    shown = "\n".join(describe_method(method, preset=preset))
    assert f"{preset} trains in: {'fp32' if value == FP32 else 'fp16 autocast'}" in shown


def test_bf16_only_when_asked():
    cpu = torch.device("cpu")
    assert TrainConfig().amp == "off" and not isinstance(autocast_context(TrainConfig(), cpu), torch.autocast)
    assert all(m.config("smoke").amp == "off" for m in (METHODS.get(n) for n in METHODS.names()))
    ctx = autocast_context(TrainConfig(amp="bf16"), cpu)
    assert isinstance(ctx, torch.autocast) and ctx.fast_dtype == torch.bfloat16
    assert autocast_context(TrainConfig(amp="fp16"), cpu).fast_dtype == torch.float16


def test_fp16_trains_with_loss_scaling_and_records_amp(tiny_bert_dir, tmp_path):
    """amp=fp16 runs the loop with a GradScaler (its state saved for resume) and the config records amp."""
    import json

    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, amp="fp16", max_steps=4, save_every=2)
    seen: dict = {}

    def peek(step: int) -> None:  # the train state saved at step 2 (removed once the run is finished)
        if step == 3:
            seen.update(torch.load(tmp_path / "train_state" / "state.pt", weights_only=False))

    with one_thread():
        result = train(method, cfg, toy_corpus(40), tmp_path, show_progress=False, on_step=peek, device="cpu")
    assert result.steps == 4 and result.final_loss is not None and result.final_loss == result.final_loss
    assert seen["scaler"]["scale"] > 0  # the scaler's state travels with the train state
    meta = json.loads((tmp_path / "checkpoint" / "method.json").read_text())
    assert json.dumps(meta).count('"amp": "fp16"') >= 1
