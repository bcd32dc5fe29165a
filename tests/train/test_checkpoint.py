"""Export in sentence-transformers format: same embeddings as the suite's encoder for every built-in pooling."""
from __future__ import annotations

import json

import numpy as np
import pytest

from usebench.train.checkpoint import (
    export_checkpoint,
    finished_checkpoint,
    read_method_json,
)
from usebench.errors import ConfigError
from tests.methods.helpers import one_thread

TEXTS = ["a short one", "a somewhat longer sentence about rivers and mountains", "x"]


@pytest.fixture(scope="module")
def tiny_model(tiny_bert_dir):
    from transformers import AutoModel, AutoTokenizer

    return AutoModel.from_pretrained(tiny_bert_dir), AutoTokenizer.from_pretrained(tiny_bert_dir)


@pytest.mark.parametrize("pooling", ["cls", "mean", "max", "last2avg", "first_last_avg"])
def test_sentence_transformers_reload_matches_hfencoder(tiny_model, tmp_path, pooling):
    from sentence_transformers import SentenceTransformer

    from usebench.eval.encoder import HFEncoder

    model, tok = tiny_model
    out = export_checkpoint(model, tok, tmp_path / "ckpt", method="demo", pooling=pooling, max_length=16,
                            config={"k": 1}, base_model="tiny")
    with one_thread():
        ours = HFEncoder(str(out), device="cpu", show_progress=False).encode(TEXTS)
        st_model = SentenceTransformer(str(out), device="cpu")
        st = st_model.encode(TEXTS, convert_to_numpy=True)
    assert st_model.max_seq_length == 16
    np.testing.assert_allclose(ours, st, atol=1e-5, rtol=1e-4)
    # Independent reference for the layer poolings: the definition in usebench/eval/pooling.py's docstring.
    if pooling in ("last2avg", "first_last_avg"):
        import torch

        enc = tok(TEXTS, padding=True, truncation=True, max_length=16, return_tensors="pt")
        with torch.no_grad():
            hs = model(**enc, output_hidden_states=True).hidden_states
        first = hs[-2] if pooling == "last2avg" else hs[0]
        mask = enc["attention_mask"].unsqueeze(-1).float()
        ref = (((first + hs[-1]) / 2) * mask).sum(1) / mask.sum(1)
        np.testing.assert_allclose(ours, ref.numpy(), atol=1e-5)


def test_method_json_and_overwrite(tiny_model, tmp_path):
    model, tok = tiny_model
    target = tmp_path / "ckpt"
    export_checkpoint(model, tok, target, method="demo", pooling="mean", max_length=8, config={"a": 1},
                      base_model="tiny", extra={"prompt": "{text}"})
    meta = read_method_json(target)
    assert {"method", "pooling", "max_length", "config", "config_hash", "versions", "base_model"} <= meta.keys()
    assert meta["prompt"] == "{text}" and meta["versions"]["torch"]
    assert finished_checkpoint(target, "demo", meta["config_hash"])
    with pytest.raises(ConfigError, match="holds method 'demo'"):
        finished_checkpoint(target, "other", meta["config_hash"])
    export_checkpoint(model, tok, target, method="demo", pooling="cls", max_length=8, config={"a": 2},
                      base_model="tiny")  # replaces the old export as a whole
    assert json.loads((target / "1_Pooling" / "config.json").read_text())["pooling_mode_cls_token"] is True
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]  # no temp or backup dirs left behind


def test_unknown_pooling_is_refused_before_writing(tiny_model, tmp_path):
    model, tok = tiny_model
    with pytest.raises(ConfigError, match="no sentence-transformers export"):
        export_checkpoint(model, tok, tmp_path / "c", method="d", pooling="weird", max_length=8, config={},
                          base_model="t")
    assert not (tmp_path / "c").exists()


def test_checkpoints_and_train_states_honour_the_umask(tiny_model, tmp_path):
    """A shared results store (umask 002): every file of an export and of a train state is group-readable;
    mkstemp-written JSON (method.json, modules.json, ...) used to be 0600."""
    import os

    from usebench.train.checkpoint import save_train_state

    model, tok = tiny_model
    old = os.umask(0o002)
    try:
        out = export_checkpoint(model, tok, tmp_path / "ckpt", method="demo", pooling="max", max_length=16,
                                config={"k": 1}, base_model="tiny")
        state = save_train_state(tmp_path / "train_state", {"step": 1})
    finally:
        os.umask(old)
    files = [p for p in out.rglob("*") if p.is_file()] + [state]
    assert {"method.json", "modules.json", "config.json"} <= {p.name for p in files}
    modes = {str(p.relative_to(tmp_path)): oct(p.stat().st_mode & 0o777) for p in files}
    assert set(modes.values()) == {"0o664"}, modes
