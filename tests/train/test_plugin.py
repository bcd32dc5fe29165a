"""The pieces every method builds on: loading a backbone with dropout off (usebench.train.backbone), the lines `bench
methods` prints (usebench.train.catalog_text), and the plugin contract itself (usebench.train.plugin)."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from usebench.train.backbone import load_backbone, set_dropout


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_dropout_off_makes_a_train_mode_forward_deterministic(tiny_bert_dir, attn):
    model, tokenizer, _ = load_backbone(str(tiny_bert_dir), dropout=False, attn_implementation=attn)
    model.train()
    enc = tokenizer(["the river runs past the house", "a dog"], padding=True, return_tensors="pt")
    torch.manual_seed(0)
    a = model(**enc).last_hidden_state
    torch.manual_seed(1)  # a different dropout stream: any live dropout would change the output
    b = model(**enc).last_hidden_state
    assert torch.equal(a, b)


def test_dropout_off_is_in_the_config_before_the_model_is_built(tiny_bert_dir):
    """As ConSERT's --no_dropout: transformers 4.4x's SDPA attention copies attention_probs_dropout_prob into a
    float at construction and never reads nn.Dropout.p, so zeroing modules afterwards is not enough."""
    model, _, _ = load_backbone(str(tiny_bert_dir), dropout=False)
    assert model.config.hidden_dropout_prob == 0.0 and model.config.attention_probs_dropout_prob == 0.0
    on, _, _ = load_backbone(str(tiny_bert_dir), dropout=True)
    assert on.config.hidden_dropout_prob == 0.1 and on.config.attention_probs_dropout_prob == 0.1


def test_dropout_on_stays_stochastic(tiny_bert_dir):
    model, tokenizer, _ = load_backbone(str(tiny_bert_dir), dropout=True)
    model.train()
    enc = tokenizer(["the river runs past the house"], return_tensors="pt")
    torch.manual_seed(0)
    a = model(**enc).last_hidden_state
    torch.manual_seed(1)
    assert not torch.equal(a, model(**enc).last_hidden_state)


class _CopiesRateAtInit(nn.Module):
    """Stands for an attention module that reads a dropout rate copied into a float when it was built."""

    def __init__(self, rate: float):
        super().__init__()
        self.dropout_prob = rate
        self.mha = nn.MultiheadAttention(4, 1, dropout=rate, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nn.functional.dropout(x, p=self.dropout_prob, training=self.training)
        return self.mha(y, y, y)[0]


def test_set_dropout_zeroes_rates_stored_as_floats():
    module = _CopiesRateAtInit(0.5).train()
    set_dropout(module, False)
    assert module.dropout_prob == 0.0 and module.mha.dropout == 0.0
    x = torch.randn(2, 3, 4)
    torch.manual_seed(0)
    a = module(x)
    torch.manual_seed(1)
    assert torch.equal(a, module(x))


def test_bench_methods_shows_notes_and_a_presets_resolved_values():
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS
    from usebench.train.catalog_text import describe_method

    lines = describe_method(METHODS.get("bertflow"), preset="paper")
    assert any(line.strip().startswith("note: CONFLICT") for line in lines)
    resolved = next(line for line in lines if "paper resolved:" in line)
    assert "model='bert-base-uncased'" in resolved and "base_pooling='first_last_avg'" in resolved
    assert "eval_pooling='flow'" in resolved and "eps=1e-06" in resolved


def test_the_method_contract_reads_in_one_screen():
    """A trainer must define build and collate (abstract), and nothing else; every other hook says in one line what it
    does by default and when to override it; and the class fits on a screen (helpers live in their own modules)."""
    import inspect

    from usebench.train.plugin import Method

    assert Method.__abstractmethods__ == {"build", "collate"}
    hooks = {n: f for n, f in vars(Method).items() if inspect.isfunction(f) and not n.startswith("_")}
    optional = set(hooks) - {"build", "collate", "config"}
    assert len(optional) >= 15
    for name in optional:
        doc = inspect.getdoc(hooks[name])
        assert doc and "\n" not in doc, name
        assert doc.startswith("Default") and "override" in doc.lower(), (name, doc)
    lines, _ = inspect.getsourcelines(Method)
    assert len(lines) <= 110, len(lines)


def test_the_extending_page_names_every_hook_of_the_contract():
    """docs/extending.md's contract table stays the code's: every hook of Method has its row."""
    import inspect
    from pathlib import Path

    from usebench.train.plugin import Method

    page = (Path(__file__).resolve().parents[2] / "docs" / "extending.md").read_text(encoding="utf-8")
    hooks = [n for n, f in vars(Method).items() if inspect.isfunction(f) and not n.startswith("_") and n != "config"]
    assert [h for h in hooks if f"`{h}" not in page] == []
