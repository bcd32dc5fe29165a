"""Every method on the backbones the TSDAE paper ran it on (Table 9: ELECTRA, DistilRoBERTa/RoBERTa, DistilBERT,
BERT; Table 4: TSDAE from BART, T5 and BERT from scratch), each a tiny random model built from its config:
a few steps train with a finite loss and the export embeds through the suite's encoder."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.registry import METHODS
from tests.methods.helpers import one_thread, tiny_config, toy_corpus
from tests.methods.tiny_models import build_tiny

PROBE = ["the river runs past the house", "a dog and a fish"]
TABLE9 = [(m, a) for m in ("tsdae", "ct", "simcse", "bertflow") for a in ("electra", "roberta", "distilbert", "bert")]
TABLE4 = [("tsdae", "bart"), ("tsdae", "t5"), ("tsdae", "bert-scratch")]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    cache: dict = {}

    def get(arch: str):
        if arch not in cache:
            cache[arch] = build_tiny(arch, tmp_path_factory.mktemp(arch))
        return cache[arch]

    return get


def _overrides(method: str, arch: str, tiny) -> dict:
    values: dict = {"max_steps": 4, "log_every": 1}
    if method == "tsdae" and arch in ("bart", "t5"):
        values["tie_encoder_decoder"] = False  # their own decoder (paper §8)
    if method == "tsdae" and arch == "distilbert":  # no DistilBERT causal LM: an untied BERT decoder, same vocab
        values.update(tie_encoder_decoder=False, decoder_model=str(tiny("bert")))
    if method == "tsdae" and arch == "bert-scratch":
        values["from_scratch"] = True
    return values


@pytest.mark.parametrize(("method_name", "arch"), TABLE9 + TABLE4)
def test_method_trains_and_exports_on_backbone(tiny, tmp_path, method_name, arch):
    from usebench.eval.encoder import HFEncoder
    from usebench.train.loop import train

    method = METHODS.get(method_name)
    model_dir = tiny("bert" if arch == "bert-scratch" else arch)
    cfg = tiny_config(method, model_dir, **_overrides(method_name, arch, tiny))
    with one_thread():
        result = train(method, cfg, toy_corpus(64), tmp_path, seed=0, show_progress=False, device="cpu")
        emb = HFEncoder(str(result.checkpoint), device="cpu", show_progress=False).encode(PROBE)
    losses = [line["loss"] for line in result.history if "loss" in line]
    assert len(losses) == 4 and all(np.isfinite(losses)) and np.isfinite(result.final_loss)
    assert emb.shape == (2, 32) and np.isfinite(emb).all() and not np.allclose(emb[0], emb[1])


@pytest.mark.parametrize("arch", ["bart", "t5"])
def test_seq2seq_export_embeds_with_the_trained_encoder(tiny, tmp_path, arch):
    """The exported BART/T5 checkpoint embeds with its encoder (AutoModel would run BART's decoder), the same
    vectors as the trained module's encoder + CLS; T5 also through sentence-transformers (T5EncoderModel)."""
    from usebench.eval.encoder import HFEncoder
    from usebench.train.loop import train

    method = METHODS.get("tsdae")
    cfg = tiny_config(method, tiny(arch), **_overrides("tsdae", arch, tiny))
    with one_thread():
        result = train(method, cfg, toy_corpus(64), tmp_path, seed=0, show_progress=False, device="cpu")
        ours = HFEncoder(str(result.checkpoint), device="cpu", show_progress=False).encode(PROBE)
        module = result.module.eval()
        for i, text in enumerate(PROBE):
            batch = module.tokenizer([text], return_tensors="pt")
            with torch.no_grad():
                ref = module.encoder(batch["input_ids"], batch["attention_mask"])[0].numpy()
            np.testing.assert_allclose(ours[i], ref, atol=1e-5, rtol=1e-4)
        if arch == "t5":
            from sentence_transformers import SentenceTransformer

            st = SentenceTransformer(str(result.checkpoint), device="cpu").encode(PROBE, convert_to_numpy=True)
            np.testing.assert_allclose(ours, st, atol=2e-5, rtol=1e-4)
    assert module.decoder is None and module.seq2seq is not None


def test_seq2seq_refuses_tying_and_other_methods(tiny):
    from usebench.errors import ConfigError
    from usebench.methods.tsdae import TSDAEModule

    method = METHODS.get("tsdae")
    with pytest.raises(ConfigError, match="own decoder"):
        TSDAEModule(tiny_config(method, tiny("bart")))  # tie_encoder_decoder=True by default
    with pytest.raises(ConfigError, match="encoder-decoder"):
        METHODS.get("ct").build(tiny_config(METHODS.get("ct"), tiny("t5")), torch.device("cpu"))


def test_scratch_reinitialises_the_backbone(tiny):
    from usebench.methods.tsdae import TSDAEModule

    method = METHODS.get("tsdae")
    torch.manual_seed(0)
    pre = TSDAEModule(tiny_config(method, tiny("bert")))
    torch.manual_seed(1)
    scratch = TSDAEModule(tiny_config(method, tiny("bert"), from_scratch=True))
    w0 = pre.encoder.model.embeddings.word_embeddings.weight
    w1 = scratch.encoder.model.embeddings.word_embeddings.weight
    assert w0.shape == w1.shape and not torch.allclose(w0, w1)
    # Tying still holds from scratch: the decoder body is the (random) encoder.
    assert scratch.decoder.bert.embeddings.word_embeddings.weight is w1


@pytest.mark.parametrize("arch", ["bart", "t5"])
def test_seq2seq_collate_gives_the_decoders_own_labels(tiny, arch):
    """TSDAE's collate on BART/T5 hands the step the seq2seq labels (every non-pad target token, no shift left),
    so the step sizes its gather without a device synchronisation; the loss equals the one found in the step."""
    from usebench.methods.tsdae import TSDAEModule

    method = METHODS.get("tsdae")
    cfg = tiny_config(method, tiny(arch), tie_encoder_decoder=False, max_length=16)
    module = TSDAEModule(cfg).eval()
    batch = method.collate(cfg, module.tokenizer, toy_corpus(4), np.random.default_rng(0))
    target = batch["target_ids"]
    assert torch.equal(batch["label_targets"], target[target != module.pad_id])
    found_here = {k: v for k, v in batch.items() if not k.startswith("label_")}
    with torch.no_grad():
        torch.testing.assert_close(module(batch), module(found_here), rtol=0, atol=0)
