"""DenoSent: prompt + truncation + [MASK] pooling (train and eval), no causal mask and no label shift in the
denoising decoder, the sentence vector is used after brief training, the projector never reaches the export."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from usebench.errors import BenchError, DataFormatError
from usebench.registry import METHODS
from usebench.data.paraphrases import split_paraphrases
from usebench.methods.denosent import DenoSentModule
from usebench.methods.parts.denoising_decoder import DenoisingDecoder, decoder_ffn_width, denoising_loss
from usebench.methods.parts.mask_token import mask_positions, prompt_length, prompted_batch
from tests.methods.helpers import one_thread

LONG = " ".join(f"w{i}" for i in range(60))  # far more than 32 tokens


@pytest.fixture(scope="module")
def tokenizer(tiny_bert_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_bert_dir)


def _cfg(tiny_bert_dir, **kw):
    base = {"model": str(tiny_bert_dir), "decoder_layers": 2, "warmup_steps": 0}
    return METHODS.get("denosent").config("smoke", **{**base, **kw})


def test_prompt_length_and_truncation(tokenizer):
    # '"[X]" means [MASK].' = " [ x ] " means [MASK] . -> 8 tokens (counted by hand).
    assert prompt_length(tokenizer, '"[X]" means [MASK].') == 8
    batch = prompted_batch(tokenizer, ["a b", LONG], '"[X]" means [MASK].', 32)
    tokens = tokenizer.convert_ids_to_tokens(batch["input_ids"][0][: int(batch["attention_mask"][0].sum())])
    assert tokens == ["[CLS]", '"', "a", "b", '"', "means", "[MASK]", ".", "[SEP]"]
    # The long sentence keeps its first 30 word pieces (32 with [CLS]/[SEP]), then the prompt's 7 tokens.
    long_ids = tokenizer(LONG)["input_ids"][1:31]
    assert batch["input_ids"][1, 2:32].tolist() == long_ids
    assert int(batch["attention_mask"][1].sum()) == 1 + 1 + 30 + 4 + 1  # [CLS] " text " means [MASK] . [SEP]


def test_mask_positions(tokenizer):
    m = tokenizer.mask_token_id
    ids = torch.tensor([[101, 5, m, 102, 0], [101, m, 7, m, 102]])
    assert mask_positions(ids, m).tolist() == [2, 3]  # the prompt's [MASK] is the last one
    with pytest.raises(BenchError, match="no \\[MASK\\]"):
        mask_positions(torch.tensor([[101, 5, 102]]), m)


def test_decoder_has_no_causal_mask():
    torch.manual_seed(0)
    head = torch.nn.Linear(16, 50)
    decoder = DenoisingDecoder(16, layers=2, heads=1, ffn=32, dropout=0.1, noise_dropout=0.825, head=head).eval()
    x, memory = torch.randn(1, 6, 16), torch.randn(1, 1, 16)
    padding = torch.zeros(1, 6, dtype=torch.bool)
    x2 = x.clone()
    x2[0, 5] += 1.0  # change only the LAST position
    out, out2 = decoder(x, padding, memory), decoder(x2, padding, memory)
    # With a causal mask position 0 could not see position 5; here every position changes.
    assert all(not torch.allclose(out[0, i], out2[0, i]) for i in range(6))
    # The decoder input is detached: no gradient flows back into the embedding-layer output.
    emb = torch.randn(1, 6, 16, requires_grad=True)
    decoder.train()(emb, padding, memory.requires_grad_()).sum().backward()
    assert emb.grad is None and memory.grad is not None


def test_denoising_loss_is_position_aligned():
    ids = torch.tensor([[101, 7, 8, 9, 102, 0]])
    mask = (ids != 0).long()
    logits = torch.nn.functional.one_hot(ids, 110).float() * 50  # position i predicts token i exactly
    assert denoising_loss(logits, ids, mask).item() < 1e-6
    # A shifted objective (position i -> token i+1) would be scored ~50 nats per token by the same logits.
    shifted = torch.nn.functional.cross_entropy(logits[0, :4], ids[0, 1:5])
    assert shifted.item() > 40


def test_module_feeds_target_embeddings_aligned_with_labels(tiny_bert_dir, tokenizer, monkeypatch):
    import usebench.methods.denosent as ds

    method = METHODS.get("denosent")
    cfg = _cfg(tiny_bert_dir, paraphrases=True)
    module = DenoSentModule(cfg).eval()
    batch = method.collate(cfg, tokenizer, ["a cat sat\tthe cat was sitting", "dogs run\tthe dogs are running"],
                           np.random.default_rng(0))
    seen = {}
    monkeypatch.setattr(module.decoder, "states", lambda emb, pad, mem: seen.update(emb=emb, mem=mem) or
                        torch.zeros(*emb.shape[:2], 32))
    monkeypatch.setattr(ds, "labelled_ce", lambda head, states, pos, targets: seen.update(pos=pos, targets=targets)
                        or states.sum())
    module(batch)
    # The decoder reads the embedding of token i of the *paraphrase* rows at position i, and is scored on token i
    # (its non-pad tokens, flat positions into the (rows, seq) states).
    para, para_mask = batch["input_ids"][2:], batch["attention_mask"][2:]
    assert torch.equal(seen["targets"], para[para_mask.bool()])
    assert torch.equal(seen["pos"], para_mask.reshape(-1).nonzero().squeeze(1))
    assert torch.allclose(seen["emb"], module.encoder.model.embeddings(input_ids=para))
    assert seen["mem"].shape == (2, 1, 32)


def test_paraphrase_column(tiny_bert_dir, tokenizer):
    method = METHODS.get("denosent")
    assert split_paraphrases(["a\tb", "c\td"]) == (["a", "c"], ["b", "d"])
    with pytest.raises(DataFormatError, match="sentence<TAB>paraphrase"):
        split_paraphrases(["no tab here"])
    plain = method.collate(_cfg(tiny_bert_dir), tokenizer, ["x y", "z"], np.random.default_rng(0))
    assert plain["n"] == 2 and plain["input_ids"].shape[0] == 4  # positive = the same sentence, 2nd dropout view
    assert plain["target_start"] == 0  # without paraphrases the decoder reconstructs the originals (reference)
    paired = method.collate(_cfg(tiny_bert_dir, paraphrases=True), tokenizer, ["x y\tz", "u\tv w"],
                            np.random.default_rng(0))
    assert paired["target_start"] == 2  # with them, the paraphrase rows
    gen_only = method.collate(_cfg(tiny_bert_dir, contrastive_weight=0.0), tokenizer, ["x y", "z"],
                              np.random.default_rng(0))
    assert gen_only["input_ids"].shape[0] == 2


def test_ffn_width_scaling():
    assert decoder_ffn_width(768, None) == 2048 and decoder_ffn_width(384, None) == 1024
    assert decoder_ffn_width(32, 64) == 64


def test_shuffled_sentence_vector_raises_denoising_loss(tiny_bert_dir, tokenizer):
    method = METHODS.get("denosent")
    cfg = _cfg(tiny_bert_dir, lr=5e-3)  # both losses, noise 0.825; a 2-layer decoder keeps this fast
    torch.manual_seed(0)
    module = DenoSentModule(cfg)
    texts = [f"{a} {b} {c}" for a, b, c in zip(["red", "blue", "green", "black", "white", "pink", "gray", "gold"],
                                                ["cats", "dogs", "cars", "boats", "birds", "trees", "ships", "kites"],
                                                ["run", "sleep", "shine", "float", "sing", "grow", "sail", "fly"])]
    batch = method.collate(cfg, tokenizer, texts, np.random.default_rng(0))
    opt = torch.optim.Adam([p for p in module.parameters() if p.requires_grad], lr=cfg.lr)
    module.train()
    with one_thread():
        for _ in range(100):
            opt.zero_grad()
            module(batch)["loss"].backward()
            opt.step()
    n = len(texts)
    ids, mask = batch["input_ids"][:n], batch["attention_mask"][:n]

    def loss_with(memory_order: torch.Tensor) -> float:
        torch.manual_seed(123)  # the same dropout masks (noise included) for both memories
        with torch.no_grad():
            out = module.encoder.model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
            z = module.projector(module.sentence_vectors(out.hidden_states, ids))
            logits = module.decoder(out.hidden_states[0], mask == 0, z[memory_order].unsqueeze(1))
        return denoising_loss(logits, ids, mask).item()

    true, shuffled = loss_with(torch.arange(n)), loss_with(torch.roll(torch.arange(n), 1))
    assert shuffled > true + 0.1, (true, shuffled)


def test_export_has_no_projector_and_reloads_with_prompt(tiny_bert_dir, tmp_path):
    from safetensors import safe_open
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    from usebench.eval.encoder import HFEncoder
    from usebench.train.loop import train

    cfg = _cfg(tiny_bert_dir, max_steps=2, batch_size=4, lr=1e-3)
    corpus = [f"sentence number {i} about topic {i % 3}" for i in range(8)]
    with one_thread():
        ckpt = train(METHODS.get("denosent"), cfg, corpus, tmp_path / "run", show_progress=False,
                     device="cpu").checkpoint
    with safe_open(str(ckpt / "model.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert not [k for k in keys if "projector" in k or "decoder" in k or "predictions" in k]
    meta = json.loads((ckpt / "method.json").read_text())
    assert (meta["pooling"], meta["prompt"], meta["prompt_text_max_length"]) == (
        "mask_token", '"{text}" means [MASK].', 32)
    texts = ["a short one", LONG]
    enc = HFEncoder(str(ckpt), show_progress=False, device="cpu").encode(texts)
    # Independent computation: truncate by hand (30 word pieces), fill the prompt, take the [MASK] state.
    tok = AutoTokenizer.from_pretrained(ckpt)
    model = AutoModel.from_pretrained(ckpt).eval()
    cut = tok.decode(tok(LONG)["input_ids"][1:31])
    for text, row in zip(["a short one", cut], enc):
        ids = tok(f'"{text}" means [MASK].', return_tensors="pt")
        with torch.no_grad():
            hidden = model(**ids).last_hidden_state[0]
        pos = ids["input_ids"][0].tolist().index(tok.mask_token_id)
        assert np.allclose(row, hidden[pos].numpy(), atol=1e-5)
    st = SentenceTransformer(str(ckpt), trust_remote_code=True, device="cpu").encode(texts)
    assert np.allclose(st, enc, atol=1e-5)
