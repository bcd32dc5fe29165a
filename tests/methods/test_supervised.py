"""Supervised SBERT stages: loss parity with sentence-transformers' MultipleNegativesRankingLoss and
CosineSimilarityLoss (same weights, same batch, 1e-4), the optimizer App. B names, labeled subsets, example
checks, the dev period, and one short training through the shared loop on each stage's own data kind."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.errors import BenchError, ConfigError
from usebench.registry import METHODS
from usebench.methods.parts.labeled_examples import without_repeats
from usebench.methods.supervised import PairModule
from tests.methods.helpers import one_thread, tiny_config

ANCHORS = ["the river runs past the house", "a dog and a fish", "mountain night ocean", "kite over the sun"]
POSITIVES = ["a river near a house", "fish and dog", "night on the mountain", "a kite in the sky"]
NEGATIVES = ["the piano is lemon", "queen of the jungle", "banana tree", "island cherry grape"]
LABELS = [0.9, 0.1, 0.5, 0.3]


def _st_model(path):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling, Transformer

    word = Transformer(str(path), max_seq_length=32)
    return SentenceTransformer(modules=[word, Pooling(word.get_embedding_dimension(), "mean")], device="cpu")


def _ours(name, tiny_bert_dir):
    method = METHODS.get(name)
    cfg = tiny_config(method, tiny_bert_dir)
    module = PairModule(cfg, method.loss_name)
    module.eval()
    return method, cfg, module


def _st_loss(st, loss, columns, labels):
    st.eval()
    features = [st.tokenize(col) for col in columns]
    return loss(features, torch.tensor(labels, dtype=torch.float32))


@pytest.mark.parametrize("with_negatives", [False, True])
def test_mnrl_matches_sentence_transformers(tiny_bert_dir, with_negatives):
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    method, cfg, ours = _ours("sbert-mnrl", tiny_bert_dir)
    cols = [ANCHORS, POSITIVES] + ([NEGATIVES] if with_negatives else [])
    examples = list(zip(*cols))
    with one_thread():
        st = _st_model(tiny_bert_dir)
        ref = _st_loss(st, MultipleNegativesRankingLoss(st), cols, [0.0] * len(ANCHORS))
        got = ours(method.collate(cfg, ours.tokenizer, examples, np.random.default_rng(0)))
        ref.backward()
        got.backward()
    assert float(got.detach()) == pytest.approx(float(ref.detach()), abs=1e-4)
    assert float(ref.detach()) > 0.1  # not a trivially zero loss
    g_ref = st[0].auto_model.embeddings.word_embeddings.weight.grad
    g_ours = ours.encoder.model.embeddings.word_embeddings.weight.grad
    torch.testing.assert_close(g_ours, g_ref, atol=1e-5, rtol=1e-4)


def test_cosine_loss_matches_sentence_transformers(tiny_bert_dir):
    from sentence_transformers.losses import CosineSimilarityLoss

    method, cfg, ours = _ours("sbert-cosine", tiny_bert_dir)
    examples = list(zip(ANCHORS, POSITIVES, LABELS))
    with one_thread():
        st = _st_model(tiny_bert_dir)
        ref = _st_loss(st, CosineSimilarityLoss(st), [ANCHORS, POSITIVES], LABELS)
        got = ours(method.collate(cfg, ours.tokenizer, examples, np.random.default_rng(0)))
    assert float(got) == pytest.approx(float(ref), abs=1e-4)
    assert float(ref) > 1e-3


def test_hand_computed_losses():
    """MNRL on vectors at right angles: CE of [s, 0] with target 0 = log(1 + e^-s); cosine MSE of 45°."""
    from usebench.methods.parts.losses import cosine_mse_loss, mnrl_loss

    a = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    want = math.log(1 + math.exp(-2.0))  # -log softmax([2, 0])[0], the same for both rows
    assert float(mnrl_loss(a, a * 3.0, 2.0)) == pytest.approx(want, rel=1e-5)
    u, v = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 1.0]])
    assert float(cosine_mse_loss(u, v, torch.tensor([0.0]))) == pytest.approx(0.5, rel=1e-6)  # cos 45° = 1/√2


def test_bert_adam_is_transformers_adamw_without_bias_correction():
    """App. B's optimizer: transformers<4.3 ``AdamW(correct_bias=False)``, written out from its source: Adam
    moments, no bias correction, then decoupled decay of the updated weights. Ours decays the weights before the
    update, a difference of lr^2 * wd * |update| per step (about 1e-11 at lr 2e-5, wd 0.01)."""
    from usebench.train.optim import BertAdam

    torch.manual_seed(0)
    p0 = torch.randn(5, 3, dtype=torch.float64)  # float64: the comparison is about the algorithm, not rounding
    grads = [torch.randn(5, 3, dtype=torch.float64) for _ in range(5)]
    lr, eps, wd, (b1, b2) = 2e-5, 1e-6, 0.01, (0.9, 0.999)
    p, m, v = p0.clone(), torch.zeros_like(p0), torch.zeros_like(p0)
    for g in grads:
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * m / (v.sqrt() + eps)
        p = p - lr * wd * p
    param = torch.nn.Parameter(p0.clone())
    opt = BertAdam([param], lr=lr, eps=eps, weight_decay=wd)
    for g in grads:
        param.grad = g.clone()
        opt.step()
    torch.testing.assert_close(param.detach(), p, atol=1e-10, rtol=0)
    # torch's AdamW (bias-corrected) takes visibly different steps: the check above can tell them apart.
    other = torch.nn.Parameter(p0.clone())
    ref = torch.optim.AdamW([other], lr=lr, eps=eps, weight_decay=wd)
    for g in grads:
        other.grad = g.clone()
        ref.step()
    assert (other.detach() - p).abs().max() > 1e-6


def test_without_repeats_drops_examples_whose_text_is_already_in_the_batch():
    batch = [("A q", "b"), ("c", "a q "), ("d", "e", "B"), ("f", "g")]
    assert without_repeats(batch) == [("A q", "b"), ("f", "g")]


def test_examples_are_checked(tiny_bert_dir):
    cosine, mnrl = METHODS.get("sbert-cosine"), METHODS.get("sbert-mnrl")
    cfg = tiny_config(cosine, tiny_bert_dir, batch_size=2)
    assert cosine.prepare_examples(cfg, [("a ", "b", 1), ("c", "d", 0.5)], 2) == [("a", "b", 1.0), ("c", "d", 0.5)]
    with pytest.raises(BenchError, match=r"labeled example 1 .*label in \[-1, 1\]"):
        cosine.prepare_examples(cfg, [("a", "b", 1.0), ("c", "d", 4.0)], 1)
    assert cosine.prepare_examples(cfg, [("a", "b", 1.0)], 2) == [("a", "b", 1.0)]  # [ST] a partial batch trains
    nli = METHODS.get("sbert-nli")  # its NoDuplicatesDataLoader yields whole batches only
    with pytest.raises(BenchError, match="fewer than one batch"):
        nli.prepare_examples(tiny_config(nli, tiny_bert_dir, batch_size=2), [("a", "b", "c")], 2)
    mcfg = tiny_config(mnrl, tiny_bert_dir, hard_negatives=False)
    assert mnrl.prepare_examples(mcfg, [("a", "b", "n")], 1) == [("a", "b")]
    with pytest.raises(BenchError, match="non-blank"):
        mnrl.prepare_examples(mcfg, [("a", " ")], 1)
    with pytest.raises(BenchError, match="mix pairs and triplets"):
        mnrl.prepare_examples(tiny_config(mnrl, tiny_bert_dir), [("a", "b"), ("c", "d", "e")], 1)


def _dev_steps(method, cfg, n, upto):
    return [s for s in range(1, upto + 1) if method.dev_due(cfg, s, n)]


def test_dev_schedule_in_epochs_and_steps(tiny_bert_dir):
    m = METHODS.get("sbert-cosine")
    assert _dev_steps(m, m.config("paper"), 6400, 300) == [100, 200, 300]  # batch 64: one epoch = 100 steps
    assert _dev_steps(m, m.config("paper", dev_every=0.1), 6400, 30) == [10, 20, 30]
    # [ST v0.3.8] fit: every evaluation_steps steps of an epoch, and at each epoch's end
    assert _dev_steps(m, m.config("paper", dev_every=250, dev_unit="steps"), 6400, 300) == [100, 200, 300]
    assert _dev_steps(m, m.config("paper", dev_every=40, dev_unit="steps"), 6400, 200) == [40, 80, 100, 140, 180,
                                                                                          200]
    with pytest.raises(ConfigError, match="whole number of steps"):
        m.config("paper", dev_every=0.5, dev_unit="steps")


def test_presets_cite_app_b():
    cfg = METHODS.get("sbert-mnrl").config("paper")
    assert (cfg.model, cfg.epochs, cfg.max_steps, cfg.batch_size, cfg.lr, cfg.eps, cfg.weight_decay) == (
        "bert-base-uncased", 10.0, 20_000, 64, 2e-5, 1e-6, 0.01)
    assert (cfg.optimizer, cfg.scheduler, cfg.pooling, cfg.scale, cfg.dev_task) == (
        "bert_adam", "linear", "mean", 20.0, "target")
    nli = METHODS.get("sbert-nli").config("paper")
    assert (nli.train_data, nli.batch_size, nli.max_length, nli.epochs, nli.hard_negatives) == (
        "allnli", 128, 75, 1.0, True)


@pytest.mark.parametrize("name", ["sbert-mnrl", "sbert-cosine"])
def test_short_training_lowers_the_loss(tiny_bert_dir, tmp_path, name):
    from usebench.train.loop import train
    from tests.methods.helpers import toy_examples

    method = METHODS.get(name)
    cfg = tiny_config(method, tiny_bert_dir, max_steps=16)
    with one_thread():
        result = train(method, cfg, toy_examples(method), tmp_path, seed=0, show_progress=False, device="cpu")
    losses = [line["loss"] for line in result.history if "loss" in line]
    assert np.mean(losses[-2:]) < np.mean(losses[:2]), losses


def test_dev_selection_runs_at_each_epoch_end(tiny_bert_dir, tmp_path):
    """App. B's early stopping: with dev_unit=epochs the loop calls the dev evaluator once per epoch (64 toy
    pairs at batch 16 = 4 steps) and exports the best-scoring checkpoint."""
    from usebench.train.loop import train
    from tests.methods.helpers import toy_examples

    method = METHODS.get("sbert-cosine")
    cfg = tiny_config(method, tiny_bert_dir, batch_size=16, max_steps=None, epochs=3.0, dev_task="stsb",
                      dev_every=1, dev_unit="epochs")
    calls = []
    scores = iter([0.2, 0.9, 0.5])

    def dev_eval(ckpt):
        calls.append(ckpt)
        return next(scores)

    with one_thread():
        result = train(method, cfg, toy_examples(method), tmp_path, seed=0, show_progress=False, dev_eval=dev_eval,
                       device="cpu")
    assert len(calls) == 3 and result.dev_best == {"task": "stsb", "step": 8, "score": 0.9, "pooling": "mean",
                                                   "metric": "main score", "tf32": False}  # scored at full fp32
