"""The thesis' losses (R. Wang 2022) against hand-written references on a fixed batch of a tiny BERT: values and
gradients. References are written from the equations (loops over anchors / tokens in float64) or taken from
transformers' own loss computation, never from the code under test."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.registry import METHODS
from usebench.train.backbone import SentenceEncoder, load_backbone
from usebench.train.tokenization import tokenize
from usebench.methods.consert import ConsertModule
from usebench.methods.parts.losses import nt_xent
from usebench.methods.parts.autoencoders import Autoencoder, autoencoder_batch
from usebench.methods.parts.losses import bce_contrastive, nt_xent_symmetric
from tests.methods.helpers import one_thread, tiny_config, toy_corpus

TAU = 0.05


def _views(tiny_bert_dir, n: int = 6):
    """Two views (n, 32) of n sentences from the tiny BERT (dropout off; view 2 = the sentences reversed, so the
    views differ), with the encoder whose parameters get the gradients."""
    model, tok, _ = load_backbone(str(tiny_bert_dir), dropout=False)
    enc = SentenceEncoder(model, "mean")
    texts = toy_corpus(n, seed=3)
    a = tokenize(tok, texts, 32)
    b = tokenize(tok, [" ".join(reversed(t.split())) for t in texts], 32)
    return enc, enc(a["input_ids"], a["attention_mask"]), enc(b["input_ids"], b["attention_mask"])


def _cos(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return (u @ v) / (u.norm() * v.norm())


def _ref_nt_xent(z1: torch.Tensor, z2: torch.Tensor, tau: float) -> torch.Tensor:
    """Eq. 2.7-2.9 literally: l(i, i+) and l(i+, i) with X_i- = {x_j, x_j+ : j != i}, summed, over 2N."""
    z1, z2 = z1.double(), z2.double()
    n = z1.shape[0]
    total = torch.zeros((), dtype=torch.float64)
    for i in range(n):
        for anchor, positive, same_view, other_view in ((z1[i], z2[i], z1, z2), (z2[i], z1[i], z2, z1)):
            num = torch.exp(_cos(anchor, positive) / tau)
            den = num.clone()
            for j in range(n):
                if j != i:
                    den = den + torch.exp(_cos(anchor, same_view[j]) / tau) + torch.exp(_cos(anchor, other_view[j]) / tau)
            total = total - torch.log(num / den)
    return total / (2 * n)


def _ref_bce(z1: torch.Tensor, z2: torch.Tensor, tau: float) -> torch.Tensor:
    """Eq. 2.10 literally, g(x) = sigmoid(x / tau), negatives X_i- = {x_j, x_j+ : j != i}."""
    z1, z2 = z1.double(), z2.double()
    n = z1.shape[0]
    total = torch.zeros((), dtype=torch.float64)
    for i in range(n):
        term = torch.log(torch.sigmoid(_cos(z1[i], z2[i]) / tau))
        for j in range(n):
            if j != i:
                term = term + torch.log(1 - torch.sigmoid(_cos(z1[i], z1[j]) / tau))
                term = term + torch.log(1 - torch.sigmoid(_cos(z1[i], z2[j]) / tau))
        total = total + term
    return -total / n


def _grads(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.detach().clone() for n, p in module.named_parameters() if p.grad is not None}


def _value_and_grads(build, loss_fn):
    """(loss value, parameter gradients) of ``loss_fn(*views)`` on a freshly built (same seed) tiny model."""
    torch.manual_seed(0)
    module, *views = build()
    loss = loss_fn(*views)
    loss.backward()
    return float(loss.detach()), _grads(module)


@pytest.mark.parametrize("ours, reference", [(nt_xent_symmetric, _ref_nt_xent), (bce_contrastive, _ref_bce)],
                         ids=["nt_xent", "bce"])
def test_contrastive_loss_value_and_gradients_match_the_equation(tiny_bert_dir, ours, reference):
    with one_thread():
        v_ours, g_ours = _value_and_grads(lambda: _views(tiny_bert_dir), lambda a, b: ours(a, b, TAU))
        v_ref, g_ref = _value_and_grads(lambda: _views(tiny_bert_dir), lambda a, b: reference(a, b, TAU))
    assert v_ours == pytest.approx(v_ref, rel=1e-5)
    assert g_ours.keys() == g_ref.keys() and g_ours
    for name in g_ref:
        torch.testing.assert_close(g_ours[name], g_ref[name].float(), atol=1e-5, rtol=1e-4, msg=name)


def test_symmetric_nt_xent_is_consert_loss_with_cl_rate_one_half(tiny_bert_dir):
    torch.manual_seed(1)
    z1, z2 = torch.randn(8, 32), torch.randn(8, 32)
    torch.testing.assert_close(nt_xent_symmetric(z1, z2, 0.1), 0.5 * nt_xent(z1, z2, 0.1), atol=1e-6, rtol=0)
    # the module: ConSERT with cl_rate=0.5 trains exactly eq. 2.9 on its two augmented views
    cfg = tiny_config(METHODS.get("consert"), tiny_bert_dir, cl_rate=0.5, temperature=TAU)
    with one_thread():
        module = ConsertModule(cfg)
        batch = METHODS.get("consert").collate(cfg, module.tokenizer, toy_corpus(8), np.random.default_rng(0))
        _, v1, v2 = module.two_views(batch)
        torch.testing.assert_close(module.contrastive_loss(v1, v2), nt_xent_symmetric(v1, v2, TAU), atol=1e-5, rtol=0)


def test_uniform_similarities_give_the_closed_forms():
    v = torch.ones(4, 8)  # every cosine is 1
    assert nt_xent_symmetric(v, v, 0.1).item() == pytest.approx(math.log(7), rel=1e-6)  # 1 positive among 2N-1 = 7
    # BCE: -[log s(10) + 6 log(1 - s(10))] with s(10) = sigmoid(1 / 0.1)
    s = 1 / (1 + math.exp(-10))
    assert bce_contrastive(v, v, 0.1).item() == pytest.approx(-(math.log(s) + 6 * math.log(1 - s)), rel=1e-6)


# --- autoencoders ---------------------------------------------------------------------------------------------

def _ae_setup(tiny_bert_dir, kind: str, reduction: str):
    cfg = tiny_config(METHODS.get(f"{kind}-ae"), tiny_bert_dir, ae_reduction=reduction, dropout=False)
    torch.manual_seed(0)
    model, tok, _ = load_backbone(str(tiny_bert_dir), dropout=False)
    enc = SentenceEncoder(model, "mean")
    ae = Autoencoder(kind, str(tiny_bert_dir), enc.dim, cfg, int(tok.pad_token_id))
    batch = autoencoder_batch(kind, tok, toy_corpus(6, seed=5), 32, cfg.mask_ratio, np.random.default_rng(2))
    return enc, ae, batch, tok


def _ref_clm(ae: Autoencoder, s: torch.Tensor, batch, pad_id: int, reduction: str) -> torch.Tensor:
    """Eq. 3.4 from the decoder's full logits: -sum_t log P([x]_t | [x]_<t, f(x)), per sentence, then mean; the
    ``token`` reduction is transformers' own causal-LM loss (labels shifted inside ``BertLMHeadModel``)."""
    target = batch["target_ids"]
    labels = target.masked_fill(target == pad_id, -100)
    out = ae.decoder(input_ids=target, encoder_hidden_states=s[:, None],
                     encoder_attention_mask=torch.ones(s.shape[0], 1, dtype=torch.long), labels=labels, use_cache=False)
    if reduction == "token":
        return out.loss
    logp = torch.log_softmax(out.logits.double(), -1)  # (bsz, T, vocab)
    total = torch.zeros((), dtype=torch.float64)
    for i in range(target.shape[0]):
        for t in range(1, target.shape[1]):
            if target[i, t] != pad_id:
                total = total - logp[i, t - 1, target[i, t]]
    return total / target.shape[0]


def _ref_mlm(ae: Autoencoder, s: torch.Tensor, batch, reduction: str) -> torch.Tensor:
    """Eq. 3.5 from the masked LM's full logits over every position, [CLS]'s word embedding replaced by f(x);
    the ``token`` reduction is transformers' own masked-LM loss."""
    words = ae.decoder.get_input_embeddings()(batch["masked_ids"]).clone()
    words[:, 0] = s
    out = ae.decoder(inputs_embeds=words, attention_mask=batch["attention_mask"], labels=batch["labels"])
    if reduction == "token":
        return out.loss
    logp = torch.log_softmax(out.logits.double(), -1)
    total = torch.zeros((), dtype=torch.float64)
    for i, t in zip(*torch.nonzero(batch["labels"] != -100, as_tuple=True)):
        total = total - logp[i, t, batch["labels"][i, t]]
    return total / batch["labels"].shape[0]


@pytest.mark.parametrize("kind", ["clm", "mlm"])
@pytest.mark.parametrize("reduction", ["sentence", "token"])
def test_autoencoder_loss_value_and_gradients_match_the_reference(tiny_bert_dir, kind, reduction):
    results = []
    with one_thread():
        for use_reference in (False, True):
            enc, ae, batch, tok = _ae_setup(tiny_bert_dir, kind, reduction)
            s = enc(batch["target_ids"], batch["attention_mask"])
            if not use_reference:
                loss = ae(s, batch)
            elif kind == "clm":
                loss = _ref_clm(ae, s, batch, int(tok.pad_token_id), reduction)
            else:
                loss = _ref_mlm(ae, s, batch, reduction)
            loss.backward()
            results.append((float(loss.detach()), {**_grads(enc), **{f"ae.{k}": v for k, v in _grads(ae).items()}}))
    (v_ours, g_ours), (v_ref, g_ref) = results
    assert v_ours == pytest.approx(v_ref, rel=1e-5)
    assert any(k.startswith("model.") for k in g_ref)  # the encoder learns through f(x)
    assert set(g_ours) == set(g_ref)
    for name, g in g_ref.items():
        torch.testing.assert_close(g_ours[name], g.float(), atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("kind", ["clm", "mlm"])
def test_the_sentence_reduction_counts_real_labels_on_bucket_padded_batches(tiny_bert_dir, kind):
    """Issue 50, defect 1: the fast path pads the labelled positions up to a count bucket (ignored targets) and the
    widths up to a length bucket; ``ae_reduction=sentence`` must still be eq. 3.4/3.5 on the real tokens (it was
    scaled by the padded count: clm-ae logged 441 instead of 266). The reference sums the NLLs of the unpadded
    batch's full logits."""
    from usebench.train.static_shapes import static_shapes

    with one_thread():
        enc, ae, batch, tok = _ae_setup(tiny_bert_dir, kind, "sentence")
        with static_shapes():
            padded = autoencoder_batch(kind, tok, toy_corpus(6, seed=5), 32, 0.8, np.random.default_rng(2))
        assert padded["label_positions"].numel() > batch["label_positions"].numel()  # the count bucket is bigger
        s = enc(batch["target_ids"], batch["attention_mask"])
        reference = _ref_clm(ae, s, batch, int(tok.pad_token_id), "sentence") if kind == "clm" \
            else _ref_mlm(ae, s, batch, "sentence")
        ours = ae(enc(padded["target_ids"], padded["attention_mask"]), padded)
    assert float(ours) == pytest.approx(float(reference), rel=1e-5)


def test_clm_decoder_is_causal_and_sees_only_the_sentence_embedding(tiny_bert_dir):
    with one_thread():
        enc, ae, batch, _ = _ae_setup(tiny_bert_dir, "clm", "sentence")
        ids = batch["target_ids"][:1, :6].clone()
        s = torch.randn(1, enc.dim)
        ones = torch.ones(1, 1, dtype=torch.long)
        h1 = ae.body(input_ids=ids, encoder_hidden_states=s[:, None], encoder_attention_mask=ones).last_hidden_state
        changed = ids.clone()
        changed[0, 5] = 1037
        h2 = ae.body(input_ids=changed, encoder_hidden_states=s[:, None],
                     encoder_attention_mask=ones).last_hidden_state
        torch.testing.assert_close(h1[:, :5], h2[:, :5])  # earlier positions never see later tokens
        h3 = ae.body(input_ids=ids, encoder_hidden_states=(s + 1)[:, None],
                     encoder_attention_mask=ones).last_hidden_state
        assert not torch.allclose(h1, h3)  # the memory [s] reaches every position
    assert len(ae.body.encoder.layer) == 2 and ae.body.config.add_cross_attention  # Table 5.3: 2 decoder layers


def test_mlm_copy_masks_eighty_percent_with_mask_tokens_only(tiny_bert_dir):
    _, _, batch, tok = _ae_setup(tiny_bert_dir, "mlm", "sentence")
    labels, masked, target = batch["labels"], batch["masked_ids"], batch["target_ids"]
    selected = labels != -100
    eligible = (batch["attention_mask"] == 1) & ~torch.isin(target, torch.tensor(tok.all_special_ids))
    assert not (selected & ~eligible).any()  # [CLS], [SEP], padding never masked
    assert (masked[selected] == tok.mask_token_id).all() and (masked[~selected] == target[~selected]).all()
    assert (labels[selected] == target[selected]).all()
    assert 0.6 < selected.sum().item() / eligible.sum().item() < 0.95  # ~80% of 6 sentences' words


def test_multitask_loss_is_contrastive_plus_weighted_autoencoder_on_the_shared_embedding(tiny_bert_dir):
    method = METHODS.get("simcse-clm")
    cfg = tiny_config(method, tiny_bert_dir, dropout=False, ae_weight=0.01, loss="nt_xent")
    with one_thread():
        torch.manual_seed(0)
        module = method.build(cfg, torch.device("cpu"))
        batch = method.collate(cfg, module.tokenizer, toy_corpus(8), np.random.default_rng(0))
        out = module(batch)
        f, z1, z2 = module.contrastive.two_views(batch)
        expected = nt_xent_symmetric(z1, z2, cfg.temperature) + 0.01 * module.autoencoder(f, batch["ae"])
        torch.testing.assert_close(out["loss"], expected, atol=1e-5, rtol=0)
        # f(x) is what the autoencoder reads: the encoder's pooled clean sentence (dropout off: = view 1)
        plain = module.encoder(batch["ae"]["target_ids"], batch["ae"]["attention_mask"])
        torch.testing.assert_close(f, plain, atol=1e-5, rtol=0)
