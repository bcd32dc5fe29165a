"""Fixtures of the training tests."""
from __future__ import annotations

import pytest

from usebench.train.backbone import set_dropout


@pytest.fixture
def without_dropout(monkeypatch):
    """``without_dropout(method)``: ``method`` builds its module with every dropout off (decoders whose rate no
    config field sets: PaSeR's), so that two step paths compare the same math."""
    def patch(method):
        build = type(method).build

        def quiet(self, cfg, device):
            module = build(self, cfg, device)
            set_dropout(module, False)
            return module

        monkeypatch.setattr(type(method), "build", quiet)
        return method

    return patch


@pytest.fixture(scope="session")
def left_padding_bert_dir(tiny_bert_dir, tmp_path_factory):
    """The tiny BERT with a tokenizer that pads on the left (``padding_side: left`` in its tokenizer config)."""
    import shutil

    from transformers import AutoTokenizer

    out = tmp_path_factory.mktemp("tiny-bert-left")
    shutil.copytree(tiny_bert_dir, out, dirs_exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    tokenizer.padding_side = "left"
    tokenizer.save_pretrained(out)
    return out
