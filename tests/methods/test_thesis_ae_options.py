"""The thesis' autoencoder options (issue 28, item 5): eq. 3.6's ``ae_weight`` exists only where there is a second
loss to weigh it against; the Table 5.17 command `bench report --list` prints is valid; the ``thesis`` presets
reduce the autoencoder loss as the code the thesis built on does.

Sources: R. Wang 2022 (``../shared/papers/004_*``) eq. 3.4 (line 383), eq. 3.5 (line 395), eq. 3.6 (line 414),
Sec. 5.2.3 (line 658: "build the implementation on top of existing SimCSE source code"); princeton-nlp/SimCSE
``simcse/models.py`` (``loss_fct = nn.CrossEntropyLoss()``; ``loss = loss + mlm_weight * masked_lm_loss``).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.errors import ConfigError
from usebench.registry import METHODS
from usebench.report.catalog import TABLE_NEEDS
from usebench.plan.planner import method_overrides
from tests.docs_commands import Shown
from tests.methods.helpers import one_thread, tiny_config, toy_corpus

STANDALONE = ("clm-ae", "mlm-ae")
MULTITASK = ("simcse-clm", "simcse-mlm", "consert-clm", "consert-mlm")


@pytest.mark.parametrize("name", STANDALONE)
def test_a_standalone_autoencoder_refuses_ae_weight(name):
    # Eq. 3.4 / 3.5 are the whole loss: a weight on it would only rescale the learning rate, and a published row
    # could not tell it apart. The old config accepted it and multiplied the whole loss by it.
    method = METHODS.get(name)
    with pytest.raises(ConfigError, match=r"ae_weight"):
        method_overrides(name, method.Config, ["ae_weight=0.001"])
    with pytest.raises(ConfigError, match=r"ae_weight"):
        method.config("thesis", ae_weight=0.001)


@pytest.mark.parametrize("name", MULTITASK)
def test_a_multitask_method_takes_its_own_prefixed_weight(name):
    method = METHODS.get(name)
    items = [f"{name}.ae_weight=0.1", "other-method.ae_weight=0.5"]
    assert method.config("thesis", **method_overrides(name, method.Config, items)).ae_weight == 0.1
    assert method.config("thesis").ae_weight == 0.001  # eq. 3.6's w, the thesis' best CLM weight (Table 5.16)


def test_the_table_5_17_command_of_bench_report_list_is_valid():
    # The old catalog said `--set ae_weight=W` over simcse,clm-ae,mlm-ae,...: "simcse: unknown config key".
    from tests.test_docs import check_names

    run, _, then = TABLE_NEEDS["thesis-table5.17"].partition("; then ")
    assert run.startswith("bench run ") and then.startswith("bench report ")
    shown = Shown("catalog.py thesis-table5.17", run.replace("=W", "=0.001"))
    assert not shown.synopsis  # checked as a concrete command: names, presets and every --set key
    assert check_names(shown) == []
    assert "--user-sample thesis-quora-titles-100k=" in then  # the thesis' unpublished sample pairs on your word


def test_the_thesis_presets_average_the_autoencoder_loss_over_tokens():
    # Inferred (labelled so in the presets' notes): the SimCSE code's auxiliary loss is a token mean.
    for name in STANDALONE + MULTITASK:
        method = METHODS.get(name)
        for preset in ("thesis", "paper", "official"):
            assert method.config(preset).ae_reduction == "token", (name, preset)
        assert "inferred" in " ".join(method.preset_notes.values()), name


def test_a_standalone_autoencoder_loss_is_its_token_mean_nll(tiny_bert_dir):
    """The whole loss of ``clm-ae`` is the decoder's mean token NLL, as transformers' own causal-LM loss computes
    it from the full logits (an independent reference), with no factor."""
    method = METHODS.get("clm-ae")
    cfg = tiny_config(method, tiny_bert_dir, dropout=False)
    assert cfg.ae_reduction == "token"
    with one_thread():
        torch.manual_seed(0)
        module = method.build(cfg, torch.device("cpu"))
        batch = method.collate(cfg, module.tokenizer, toy_corpus(6, seed=3), np.random.default_rng(0))
        out = module(batch)
        ae = batch["ae"]
        s = module.encoder(ae["target_ids"], ae["attention_mask"])
        target = ae["target_ids"]
        labels = target.masked_fill(target == module.tokenizer.pad_token_id, -100)
        ref = module.autoencoder.decoder(input_ids=target, encoder_hidden_states=s[:, None], labels=labels,
                                         encoder_attention_mask=torch.ones(s.shape[0], 1, dtype=torch.long),
                                         use_cache=False).loss
    torch.testing.assert_close(out["loss"], ref, atol=1e-5, rtol=1e-5)
