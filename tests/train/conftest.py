"""Fixtures of the training tests."""
from __future__ import annotations

import pytest

from usebench.train.plugin import set_dropout


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
