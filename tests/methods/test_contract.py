"""Contract tests run for every registered method (the later plugins get them for free).

Each method trains ~20 steps on the tiny random BERT (its smoke preset + ``helpers.TINY_RUN`` + its own
``test_overrides``): the loss falls, the exported encoder's embeddings differ from the base model's, and the
checkpoint reloads with its declared pooling, giving the same embeddings through ``SentenceTransformer(path)``
and through the suite's encoder.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.registry import METHODS
from tests.methods.helpers import one_thread, tiny_config, toy_data

PROBE = ["the river runs past the house", "a dog and a fish", "mountain night ocean", "kite"]


@pytest.fixture(scope="module")
def trained(tiny_bert_dir, tmp_path_factory):
    """name -> (method, cfg, TrainResult), each method trained once per module."""
    from usebench.train.loop import train

    cache: dict = {}

    def get(name: str):
        if name not in cache:
            method = METHODS.get(name)
            cfg = tiny_config(method, tiny_bert_dir)
            with one_thread():
                result = train(method, cfg, toy_data(method), tmp_path_factory.mktemp(name), seed=0,
                               show_progress=False, device="cpu")
            cache[name] = (method, cfg, result)
        return cache[name]

    return get


@pytest.mark.parametrize("name", METHODS.names())
def test_presets_build_valid_configs(name):
    """paper, official and smoke exist and construct the method's own config; check_presets() (what the suite's own
    contract checks call) passes, and it refuses a method that lacks one of them."""
    import copy

    from usebench.errors import ConfigError
    from usebench.train.presets import PRESET_NAMES, check_presets

    method = METHODS.get(name)
    check_presets(method)
    assert set(PRESET_NAMES) <= set(method.presets)
    for preset in method.presets:
        assert isinstance(method.config(preset), method.Config), preset
    lacking = copy.copy(method)
    lacking.presets = {k: v for k, v in method.presets.items() if k != "official"}
    with pytest.raises(ConfigError, match=r"lacks presets \['official'\]"):
        check_presets(lacking)


@pytest.mark.parametrize("name", METHODS.names())
def test_loss_falls(trained, name):
    _, _, result = trained(name)
    losses = [line["loss"] for line in result.history if "loss" in line]
    assert len(losses) >= 4 and all(np.isfinite(losses))
    assert np.mean(losses[-2:]) < np.mean(losses[:2]), losses


@pytest.mark.parametrize("name", METHODS.names())
def test_export_declares_pooling_and_reloads_identically(trained, name):
    from sentence_transformers import SentenceTransformer

    from usebench.eval.encoder import HFEncoder
    from usebench.eval.pooling import POOLERS

    method, cfg, result = trained(name)
    meta = json.loads((result.checkpoint / "method.json").read_text())
    assert meta["method"] == name and meta["pooling"] == method.eval_pooling(cfg)
    # The method's evaluation length, else the tiny BERT's 512 capped at its 128 positions.
    assert meta["max_length"] == min(cfg.eval_max_length or 512, 128) and meta["base_model"] == cfg.model
    if meta["pooling"] not in POOLERS:  # a pooling with state: the checkpoint names the code that builds it
        assert meta["pooler"].startswith(f"usebench.methods.{name}:"), meta.get("pooler")
    with one_thread():
        ours = HFEncoder(str(result.checkpoint), device="cpu", show_progress=False).encode(PROBE)
        st = SentenceTransformer(str(result.checkpoint), device="cpu",
                                 trust_remote_code=method.st_trust_remote_code).encode(PROBE, convert_to_numpy=True)
    assert ours.shape == st.shape
    np.testing.assert_allclose(ours, st, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("name", METHODS.names())
def test_training_changes_the_embeddings(trained, tiny_bert_dir, tmp_path, name):
    """The exported encoder differs from the untrained one *under the same pooling*."""
    import shutil

    from usebench.eval.encoder import HFEncoder
    from usebench.eval.pooling import POOLERS

    method, cfg, result = trained(name)
    pooling = method.eval_pooling(cfg)
    if pooling in POOLERS:
        before_model, before_pooling = str(tiny_bert_dir), pooling
    elif hasattr(cfg, "base_pooling"):
        # A flow over a frozen encoder (BERT-flow): its z must differ from the pooled u it maps.
        before_model, before_pooling = str(tiny_bert_dir), cfg.base_pooling
    else:
        # A pooling with checkpoint state (DenoSent's prompt + [MASK]): the same checkpoint with the base
        # model's transformer weights put back is the untrained encoder under that pooling.
        untrained = tmp_path / "untrained"
        shutil.copytree(result.checkpoint, untrained)
        shutil.copy(tiny_bert_dir / "model.safetensors", untrained / "model.safetensors")
        before_model, before_pooling = str(untrained), None
    with one_thread():
        after = HFEncoder(str(result.checkpoint), device="cpu", show_progress=False).encode(PROBE)
        before = HFEncoder(before_model, pooling=before_pooling, device="cpu", show_progress=False).encode(PROBE)
    assert after.shape == before.shape
    assert np.abs(after - before).max() > 1e-3
