from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from usebench.eval.cache import EmbeddingCache
from usebench.errors import BenchError
from usebench.eval.models import ModelInfo, model_fingerprint, resolve_model
from usebench.store.records import model_slug


def test_minilm_alias_resolves_offline_with_its_declared_pooling():
    info = resolve_model("minilm")
    assert info.pooling == "mean" and info.max_length == 256
    assert info.path.endswith("model") and info.local


def test_resolving_the_alias_leaves_the_process_environment_alone(monkeypatch):
    """The alias is a local directory read with local_files_only; it must not switch the hub off for the rest
    of the process (a later HF-id model would silently fail to download)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    before = dict(os.environ)
    resolve_model("minilm")
    assert dict(os.environ) == before
    import usebench.eval.models as models

    monkeypatch.setattr(models, "hub_reachable", lambda endpoint: True)  # as on a machine with a network
    assert not resolve_model("bert-base-uncased").local  # an HF id: the loaders may use the hub


def test_method_json_overrides_pooling(tiny_bert_dir, tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    for f in tiny_bert_dir.iterdir():
        (ckpt / f.name).write_bytes(f.read_bytes())
    (ckpt / "method.json").write_text(json.dumps({"method": "tsdae", "pooling": "cls", "max_length": 75}))
    info = resolve_model(str(ckpt))
    assert (info.pooling, info.max_length, info.method["method"]) == ("cls", 75, "tsdae")
    assert model_fingerprint(info) != model_fingerprint(resolve_model(str(tiny_bert_dir)))


def test_missing_local_dir_and_non_model_dir_are_clear_errors(tmp_path):
    with pytest.raises(BenchError, match="does not exist"):
        resolve_model("./no/such/dir")
    with pytest.raises(BenchError, match="no config.json"):
        resolve_model(str(tmp_path))


def test_hub_ids_pass_through_and_slugs_are_safe():
    assert resolve_model("bert-base-uncased").path == "bert-base-uncased"
    assert model_slug("sentence-transformers/all-MiniLM-L6-v2") == "sentence-transformers-all-MiniLM-L6-v2"


def test_embedding_cache_round_trip(tmp_path):
    cache = EmbeddingCache(tmp_path, "k")
    vecs = np.arange(6, dtype=np.float32).reshape(2, 3)
    cache.put_many(["a", "b"], vecs)
    fresh = EmbeddingCache(tmp_path, "k")  # a new process sees the shard on disk
    got = fresh.get_many(["b", "c", "a"])
    assert set(got) == {"a", "b"} and np.array_equal(got["b"], vecs[1])


def test_encoder_cache_gives_identical_vectors(tiny_bert_dir, tmp_path):
    from usebench.eval.encoder import HFEncoder

    texts = ["a short one", "a somewhat longer sentence here", "a short one"]
    first = HFEncoder(str(tiny_bert_dir), cache_dir=str(tmp_path), show_progress=False).encode(texts)
    second_encoder = HFEncoder(str(tiny_bert_dir), cache_dir=str(tmp_path), show_progress=False)
    second_encoder._encode_unique = None  # any recomputation would now fail: everything must come from the cache
    assert np.array_equal(second_encoder.encode(texts), first)
    assert np.array_equal(first[0], first[2])


@pytest.mark.parametrize("pooling", ["cls", "mean", "max", "first_last_avg", "last2avg"])
def test_poolings_match_a_manual_computation(tiny_bert_dir, pooling):
    import torch
    from transformers import AutoModel, AutoTokenizer

    from usebench.eval.encoder import HFEncoder

    texts = ["one two three four", "five"]
    got = HFEncoder(str(tiny_bert_dir), pooling=pooling, show_progress=False).encode(texts)
    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = AutoModel.from_pretrained(tiny_bert_dir).eval()
    for i, text in enumerate(texts):  # one text at a time: no padding, so plain means are the reference
        with torch.no_grad():
            hs = model(**tok(text, return_tensors="pt"), output_hidden_states=True).hidden_states
        ref = {"cls": hs[-1][0, 0], "mean": hs[-1][0].mean(0), "max": hs[-1][0].max(0).values,
               "first_last_avg": ((hs[0][0] + hs[-1][0]) / 2).mean(0),
               "last2avg": ((hs[-2][0] + hs[-1][0]) / 2).mean(0)}[pooling]
        np.testing.assert_allclose(got[i], ref.numpy(), atol=1e-5)


def test_fingerprint_memo_sees_changed_files(tiny_bert_dir, tmp_path):
    import os
    import shutil

    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny_bert_dir, ckpt)
    before = model_fingerprint(resolve_model(str(ckpt)))
    assert model_fingerprint(resolve_model(str(ckpt))) == before  # memoised, same answer
    config = ckpt / "config.json"
    config.write_text(config.read_text().replace("}", ', "note": 1}', 1))
    os.utime(config, ns=(config.stat().st_atime_ns, config.stat().st_mtime_ns + 10**9))
    assert model_fingerprint(resolve_model(str(ckpt))) != before


# --- issue 14, item 8: an unreachable hub fails fast (or uses the local cache), without touching os.environ ----

@pytest.fixture()
def hub_down(monkeypatch, tmp_path):
    """No HF_HUB_OFFLINE, a hub that does not answer, and an empty local hub cache in tmp_path."""
    import huggingface_hub.constants

    import usebench.eval.models as models

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(models, "hub_reachable", lambda endpoint: False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


def test_unreachable_hub_and_uncached_model_fail_at_once_naming_the_alternatives(hub_down):
    import os
    import time

    env = dict(os.environ)
    t0 = time.perf_counter()
    with pytest.raises(BenchError, match=r"hub .* cannot be reached.*not in the local hub cache.*--model minilm"):
        resolve_model("bert-base-uncased")
    assert time.perf_counter() - t0 < 1.0 and dict(os.environ) == env  # no retries, no environment change


def test_unreachable_hub_uses_the_cached_snapshot(hub_down, tiny_bert_dir):
    import shutil

    from usebench.eval.encoder import HFEncoder

    snapshot = hub_down / "models--org--tiny" / "snapshots" / "0123abcd"
    shutil.copytree(tiny_bert_dir, snapshot)
    (hub_down / "models--org--tiny" / "refs").mkdir()
    (hub_down / "models--org--tiny" / "refs" / "main").write_text("0123abcd")
    info = resolve_model("org/tiny")
    assert Path(info.path) == snapshot and info.hub_id == "org/tiny"
    # Named by its id, from the hub or the cache alike: run ids do not change with the network.
    assert model_fingerprint(info) == model_fingerprint(ModelInfo("org/tiny", "org/tiny", None, None, {}))
    assert HFEncoder("org/tiny", device="cpu", show_progress=False).encode(["a b c"]).shape == (1, 32)


def test_declared_offline_is_left_to_transformers(monkeypatch):
    import usebench.eval.models as models

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(models, "hub_reachable", lambda endpoint: pytest.fail("probed although offline"))
    assert resolve_model("bert-base-uncased").path == "bert-base-uncased"


def test_one_decoder_reads_the_pooling_of_every_sentence_transformers_version():
    """A Pooling config as sentence-transformers 6 writes it (a mode by name, or a list), as earlier versions did
    (boolean flags, joined in their get_pooling_mode_str() order), and a live module's get_config_dict()."""
    from usebench.eval.models import module_pooling_mode, st_pooling_mode

    assert st_pooling_mode({"embedding_dimension": 32, "pooling_mode": "cls"}) == "cls"
    assert st_pooling_mode({"pooling_mode": ["mean", "max"]}) == "mean+max"
    assert st_pooling_mode({"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True}) == "mean"
    assert st_pooling_mode({"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": True,
                            "pooling_mode_lasttoken": True}) == "cls+mean+lasttoken"
    assert st_pooling_mode({"max_seq_length": 128}) == ""

    class Module:
        def __init__(self, config):
            self.get_config_dict = lambda: config

    assert module_pooling_mode(Module({"pooling_mode": ("cls", "mean")})) == "cls+mean"
    assert module_pooling_mode(Module({"do_lower_case": False})) == "" and module_pooling_mode(object()) == ""


def test_a_checkpoint_pooling_with_two_modes_is_not_read_as_one(tmp_path):
    """The engine pools with one mode: a checkpoint that declares two is left to the default, never read as its
    first flag."""
    from usebench.eval.models import _st_pooling

    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    assert _st_pooling(tmp_path) == "cls"
    (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode": "max"}')
    assert _st_pooling(tmp_path) == "max"
    (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode": ["cls", "mean"]}')
    assert _st_pooling(tmp_path) is None
    assert _st_pooling(tmp_path / "missing") is None
