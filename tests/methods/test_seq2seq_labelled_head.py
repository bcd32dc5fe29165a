"""TSDAE's BART/T5 reconstruction loss with the LM head on the labelled positions only (issue 20): the same loss
value and the same gradients as the model's own ``labels=`` loss (transformers' cross-entropy over the head at every
position, padding ignored), on tiny random BART and T5 models, and no ``labels=`` computation beside it."""
from __future__ import annotations

import pytest
import torch

from usebench.errors import ConfigError
from usebench.methods.parts.seq2seq_denoiser import (
    Seq2SeqLMHead,
    decoder_output_scale,
    reconstruction_loss,
    seq2seq_label_positions,
)
from tests.methods.helpers import one_thread

VOCAB, D, PAD = 60, 32, 1


def tiny_seq2seq(arch: str) -> torch.nn.Module:
    """A 2+2-layer, 32-wide random model; BART's final_logits_bias made non-zero so that a head without it fails."""
    import transformers as T

    torch.manual_seed(0)
    if arch == "bart":
        model = T.BartForConditionalGeneration(T.BartConfig(
            vocab_size=VOCAB, d_model=D, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
            pad_token_id=PAD, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2))
        model.final_logits_bias.normal_()
        return model
    t5 = {"vocab_size": VOCAB, "d_model": D, "d_kv": 16, "d_ff": 64, "num_layers": 2, "num_heads": 2,
          "pad_token_id": PAD, "eos_token_id": 2, "decoder_start_token_id": PAD}
    if arch == "mt5":  # transformers 5 never rescales MT5's decoder output, whatever its tying
        return T.MT5ForConditionalGeneration(T.MT5Config(**t5))
    return T.T5ForConditionalGeneration(T.T5Config(**t5, tie_word_embeddings=arch == "t5-tied"))


def targets() -> torch.Tensor:
    """(4, 9) ids, right-padded to rows of 9, 6, 3 and 1 tokens."""
    ids = torch.randint(3, VOCAB, (4, 9), generator=torch.Generator().manual_seed(1))
    for row, length in enumerate((9, 6, 3, 1)):
        ids[row, length:] = PAD
    return ids


def hf_loss(model, s: torch.Tensor, target_ids: torch.Tensor) -> torch.Tensor:
    """The computation before: the model's own loss from ``labels=`` (its head at every position)."""
    from transformers.modeling_outputs import BaseModelOutput

    labels = target_ids.masked_fill(target_ids == PAD, -100)
    ones = torch.ones(s.shape[0], 1, dtype=torch.long)
    return model(encoder_outputs=BaseModelOutput(last_hidden_state=s[:, None]), attention_mask=ones, labels=labels,
                 use_cache=False, return_dict=True).loss


@pytest.mark.parametrize("arch", ["bart", "t5-tied", "t5-untied", "mt5"])
@pytest.mark.parametrize("from_collate", [True, False])
def test_loss_and_gradients_equal_the_models_own_labels_loss(arch, from_collate):
    model = tiny_seq2seq(arch).eval()  # no dropout: every pass sees the same network
    target_ids = targets()
    labelled = seq2seq_label_positions(target_ids, PAD) if from_collate else None
    s0 = torch.randn(4, D, generator=torch.Generator().manual_seed(2))
    results = []
    with one_thread():
        for fn in (lambda s: reconstruction_loss(model, s, target_ids, PAD, labelled),
                   lambda s: hf_loss(model, s, target_ids)):
            model.zero_grad(set_to_none=True)
            s = s0.clone().requires_grad_(True)
            loss = fn(s)
            loss.backward()
            results.append((loss.detach(), s.grad, {n: p.grad.clone() for n, p in model.named_parameters()
                                                     if p.grad is not None}))
    (l1, s1, g1), (l2, s2, g2) = results
    torch.testing.assert_close(l1, l2, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(s1, s2, rtol=1e-5, atol=1e-7)
    assert g1.keys() == g2.keys() and any("decoder" in k for k in g1)
    for k in g1:
        torch.testing.assert_close(g1[k], g2[k], rtol=1e-5, atol=1e-7, msg=k)


@pytest.mark.parametrize("arch, scaled", [("bart", False), ("t5-tied", True), ("t5-untied", False),
                                          ("mt5", False)])
def test_the_head_runs_on_the_labelled_rows_only(arch, scaled):
    model = tiny_seq2seq(arch).eval()
    assert (decoder_output_scale(model) is not None) == scaled  # T5's d_model**-0.5 on a tied head only
    rows: list[int] = []
    model.get_output_embeddings().register_forward_hook(lambda m, args, out: rows.append(args[0].shape[0]))
    target_ids = targets()
    with one_thread():
        reconstruction_loss(model, torch.randn(4, D), target_ids, PAD, seq2seq_label_positions(target_ids, PAD))
    assert rows == [int((target_ids != PAD).sum())]  # one projection, of 19 rows, not 4 x 9: no labels= pass


def test_the_probe_leaves_the_global_rng_alone():
    model = tiny_seq2seq("t5-tied").train()  # dropout on: the probe's forward draws from an RNG
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    decoder_output_scale(model)
    torch.testing.assert_close(torch.rand(3), expected, rtol=0, atol=0)


def test_a_head_it_cannot_reproduce_is_refused(monkeypatch):
    model = tiny_seq2seq("bart").eval()
    monkeypatch.setattr(Seq2SeqLMHead, "forward", lambda self, h: self.proj(h) * 2.0)
    with pytest.raises(ConfigError, match="does not reproduce"):
        decoder_output_scale(model)
