"""An export carries the backbone's dropout rates, whatever the method trained with: CT and ConSERT switch
dropout off in the model config, and a stage that starts from their export (ct>nli-sts, ct>sbert-mnrl) must
train with the backbone's dropout, as it would from any checkpoint the reference saves."""
from __future__ import annotations

import json

import torch
from torch import nn

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.registry import METHODS
from usebench.train.loop import train
from tests.methods.helpers import one_thread, tiny_config, toy_corpus


def test_ct_then_a_supervised_stage_trains_with_dropout(tiny_bert_dir, tmp_path):
    original = json.loads((tiny_bert_dir / "config.json").read_text())
    assert original["hidden_dropout_prob"] == 0.1 and original["attention_probs_dropout_prob"] == 0.1
    ct = METHODS.get("ct")
    cfg = tiny_config(ct, tiny_bert_dir, max_steps=2)
    assert cfg.dropout is False  # CT trains without dropout (its reference does)
    with one_thread():
        ckpt = train(ct, cfg, toy_corpus(40), tmp_path / "ct", seed=0, show_progress=False, device="cpu").checkpoint
    exported = json.loads((ckpt / "config.json").read_text())
    assert exported["hidden_dropout_prob"] == 0.1 and exported["attention_probs_dropout_prob"] == 0.1
    assert json.loads((ckpt / "method.json").read_text())["dropout_restored_from"] == str(tiny_bert_dir)
    mnrl = METHODS.get("sbert-mnrl")
    module = mnrl.build(tiny_config(mnrl, ckpt), torch.device("cpu"))
    rates = [m.p for m in module.modules() if isinstance(m, nn.Dropout)]
    assert rates and all(p == 0.1 for p in rates)  # the supervised stage trains with dropout


def test_an_export_written_before_the_fix_is_repaired_before_a_stage_starts_from_it(tiny_bert_dir, tmp_path):
    from usebench.run.unit import repair_dropout

    ct = METHODS.get("ct")
    with one_thread():
        ckpt = train(ct, tiny_config(ct, tiny_bert_dir, max_steps=1), toy_corpus(40), tmp_path / "ct", seed=0,
                     show_progress=False, device="cpu").checkpoint
    config, meta = json.loads((ckpt / "config.json").read_text()), json.loads((ckpt / "method.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # as older exports were written
    meta.pop("dropout_restored_from")
    (ckpt / "config.json").write_text(json.dumps(config))
    (ckpt / "method.json").write_text(json.dumps(meta))
    repair_dropout(ckpt)
    assert json.loads((ckpt / "config.json").read_text())["hidden_dropout_prob"] == 0.1
