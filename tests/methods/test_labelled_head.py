"""The vocabulary head on labelled positions only (issue 20): every masked-token loss equals the loss it had with
the head over every position (cross-entropy with the other positions ignored), and so do all gradients."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from usebench import methods  # noqa: F401
from usebench.registry import METHODS
from usebench.methods.parts.heads import label_positions, labelled_ce
from tests.methods.helpers import one_thread, tiny_config, toy_corpus


def full_head_ce(head, hidden, positions, targets):
    """The computation before: the head at every position, CE with the unlabelled ones ignored (-100), 0 with a
    graph when nothing is labelled (PaSeR's masked_ce)."""
    labels = torch.full(hidden.shape[:-1], -100, dtype=torch.long).reshape(-1)
    labels[positions] = targets
    logits = head(hidden).float().reshape(labels.shape[0], -1)
    if not bool((labels != -100).any()):
        return logits.sum() * 0.0
    return F.cross_entropy(logits, labels, ignore_index=-100)


def test_label_positions_are_row_major_flat_indices():
    labels = torch.tensor([[-100, 5, -100], [7, -100, 9]])
    pos, tgt = label_positions(labels)
    assert pos.tolist() == [1, 3, 5] and tgt.tolist() == [5, 7, 9]


@pytest.mark.parametrize("labelled", [0.15, 1.0, 0.0])
def test_labelled_ce_equals_the_full_head_loss_and_gradients(labelled):
    torch.manual_seed(0)
    head = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.LayerNorm(8), torch.nn.Linear(8, 50))
    hidden = torch.randn(4, 6, 8, requires_grad=True)
    labels = torch.randint(0, 50, (4, 6)).masked_fill(torch.rand(4, 6) >= labelled, -100)
    pos, tgt = label_positions(labels)
    grads = []
    for fn in (labelled_ce, full_head_ce):
        hidden.grad = None
        head.zero_grad(set_to_none=True)
        loss = fn(head, hidden, pos, tgt)
        loss.backward()
        grads.append((loss.detach(), hidden.grad.clone(), [p.grad.clone() for p in head.parameters()]))
    (l1, h1, p1), (l2, h2, p2) = grads
    torch.testing.assert_close(l1, l2, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(h1, h2, rtol=1e-5, atol=1e-7)
    for a, b in zip(p1, p2):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
    if labelled == 0.0:
        assert l1.item() == 0.0  # no NaN from a mean over nothing


@pytest.mark.parametrize("name", ["mlm", "tsdae", "denosent", "paser"])
def test_method_loss_and_gradients_equal_the_full_head(name, tiny_bert_dir, monkeypatch):
    """One step of each method that projects onto the vocabulary, with its head on the labelled positions
    (now) and with the head on every position (before, patched in): same loss, same gradient everywhere."""
    import importlib

    method = METHODS.get(name)
    cfg = tiny_config(method, tiny_bert_dir)
    torch.manual_seed(0)
    with one_thread():
        module = method.build(cfg, torch.device("cpu")).eval()  # no dropout: both passes see the same network
        batch = method.collate(cfg, module.tokenizer, toy_corpus(8) + ["x"], np.random.default_rng(5))
        vocab = len(module.tokenizer)
        rows_seen: list[int] = []
        for m in module.modules():  # every projection onto the vocabulary
            if isinstance(m, torch.nn.Linear) and m.out_features == vocab:
                m.register_forward_hook(lambda mod, args, out: rows_seen.append(args[0].reshape(-1, args[0].shape[-1]).shape[0]))
        results = []
        for fn in (labelled_ce, full_head_ce):
            monkeypatch.setattr(importlib.import_module(f"usebench.methods.{name}"), "labelled_ce", fn)
            module.zero_grad(set_to_none=True)
            out = module(batch)
            loss = out["loss"] if isinstance(out, dict) else out
            loss.backward()
            results.append((loss.detach(), {n: p.grad.clone() for n, p in module.named_parameters()
                                            if p.grad is not None}))
            if fn is labelled_ce:  # the vocabulary projection ran on the labelled positions, nothing else
                labelled = sum(len(v[0]) if isinstance(v, tuple) else len(v) for k, v in batch.items()
                               if k in ("label_positions", "decoder_targets", "mlm_targets"))
                assert sum(rows_seen) == labelled > 0
                rows_seen.clear()
    (l1, g1), (l2, g2) = results
    torch.testing.assert_close(l1, l2, rtol=1e-5, atol=1e-6)
    assert g1.keys() == g2.keys() and g1
    for k in g1:
        torch.testing.assert_close(g1[k], g2[k], rtol=1e-4, atol=1e-6, msg=k)
