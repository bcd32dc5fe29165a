"""ConSERT: augmentations (usebench/methods/parts/augment.py), the two-direction NT-Xent and the plugin (usebench/methods/consert.py)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch

from usebench.errors import ConfigError
from usebench.methods.parts.augment import (
    augmented_forward,
    check_augmentation,
    element_dropout,
    embedding_output_hook,
    feature_cutoff,
    shuffle_position_ids,
    token_cutoff,
)
from usebench.methods.parts.losses import nt_xent

# Right-padded batch: 7, 4 and 1 real tokens out of 8.
MASK = torch.tensor([[1] * 7 + [0], [1] * 4 + [0] * 4, [1] + [0] * 7])
N_REAL = [7, 4, 1]


def test_shuffle_permutes_real_positions_and_keeps_padding():
    rng = random.Random(0)
    changed = False
    for _ in range(20):
        pos = shuffle_position_ids(MASK, rng)
        assert pos.shape == MASK.shape and pos.dtype == torch.long
        for row, n in enumerate(N_REAL):
            assert sorted(pos[row, :n].tolist()) == list(range(n))
            assert pos[row, n:].tolist() == list(range(n, MASK.shape[1]))  # padding untouched
        changed |= pos[0, :7].tolist() != list(range(7))
    assert changed, "20 shuffles of 7 positions never changed the order"


def test_shuffle_with_left_padding_only_touches_real_tokens():
    mask = torch.tensor([[0, 0, 1, 1, 1]])
    pos = shuffle_position_ids(mask, random.Random(3))
    assert pos[0, :2].tolist() == [0, 1] and sorted(pos[0, 2:].tolist()) == [2, 3, 4]


def _emb(hidden: int = 10) -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(3, 8, hidden) + 5.0  # no accidental zeros


def test_feature_cutoff_zeroes_exactly_int_rate_hidden_columns():
    emb = _emb(768)
    out = feature_cutoff(emb, MASK, 0.2, random.Random(0))
    for row in range(3):
        zero_cols = (out[row] == 0).all(dim=0)  # (hidden,)
        assert int(zero_cols.sum()) == 153 == int(0.2 * 768)
        kept = ~zero_cols
        assert torch.equal(out[row][:, kept], emb[row][:, kept])  # survivors not rescaled
    assert not torch.equal((out[0] == 0).all(0), (out[1] == 0).all(0))  # columns drawn per sentence


def test_token_cutoff_zeroes_int_rate_real_rows_only():
    emb = _emb()
    out = token_cutoff(emb, MASK, 0.3, random.Random(1))
    for row, n in enumerate(N_REAL):
        zero_rows = (out[row] == 0).all(dim=1)  # (seq,)
        assert int(zero_rows.sum()) == int(0.3 * n)
        assert not zero_rows[n:].any()  # padding rows are never chosen
        assert torch.equal(out[row][~zero_rows], emb[row][~zero_rows])


def test_element_dropout_zeroes_int_rate_cells_within_real_rows_without_rescaling():
    emb = _emb()
    out = element_dropout(emb, MASK, 0.1, random.Random(2))
    for row, n in enumerate(N_REAL):
        zeros = out[row] == 0
        assert int(zeros.sum()) == int(0.1 * n * 10)
        assert not zeros[n:].any()
        assert torch.equal(out[row][~zeros], emb[row][~zeros])


def test_augmentations_are_pure_and_reproducible():
    emb = _emb()
    before = emb.clone()
    a = element_dropout(emb, MASK, 0.2, random.Random(5))
    b = element_dropout(emb, MASK, 0.2, random.Random(5))
    assert torch.equal(emb, before) and torch.equal(a, b)


def test_bad_augmentation_names_and_rates_are_config_errors():
    with pytest.raises(ConfigError, match="feature_cutof"):
        check_augmentation("feature_cutof", 0.2)
    with pytest.raises(ConfigError, match="rate"):
        check_augmentation("token_cutoff", 1.5)
    check_augmentation("shuffle", 0.0)  # shuffle takes no rate


def _reference_nt_xent(h1: np.ndarray, h2: np.ndarray, tau: float) -> float:
    """SimCLR NT-Xent written out per anchor with explicit sums (independent of the code under test)."""
    h1 = h1 / np.linalg.norm(h1, axis=1, keepdims=True)
    h2 = h2 / np.linalg.norm(h2, axis=1, keepdims=True)
    total = 0.0
    for anchors, others in ((h1, h2), (h2, h1)):
        losses = []
        for i in range(len(anchors)):
            pos = math.exp(anchors[i] @ others[i] / tau)
            denom = sum(math.exp(anchors[i] @ others[j] / tau) for j in range(len(others)))
            denom += sum(math.exp(anchors[i] @ anchors[k] / tau) for k in range(len(anchors)) if k != i)
            losses.append(-math.log(pos / denom))
        total += sum(losses) / len(losses)
    return total


def test_nt_xent_matches_hand_computation():
    rng = np.random.default_rng(0)
    h1, h2 = rng.normal(size=(5, 6)), rng.normal(size=(5, 6))
    got = nt_xent(torch.tensor(h1), torch.tensor(h2), temperature=0.1).item()
    assert got == pytest.approx(_reference_nt_xent(h1, h2, 0.1), rel=1e-5)


def test_nt_xent_uniform_logits_give_ln_2b_minus_1_per_direction():
    # Identical vectors everywhere: every candidate has the same logit, so each direction is ln(2B - 1).
    v = torch.ones(4, 3)
    assert nt_xent(v, v, temperature=0.1).item() == pytest.approx(2 * math.log(7), rel=1e-6)


def test_hook_and_position_ids_reach_the_bert_forward(tiny_bert_dir):
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = AutoModel.from_pretrained(tiny_bert_dir).eval()
    feats = dict(tok(["a short one", "a somewhat longer sentence here"], padding=True, return_tensors="pt"))
    plain = model(**feats, output_hidden_states=True).hidden_states
    seen = {}
    with embedding_output_hook(model, lambda e: seen.setdefault("emb", e * 0)):
        zeroed = model(**feats, output_hidden_states=True).hidden_states
    assert torch.equal(seen["emb"], torch.zeros_like(plain[0])) and torch.equal(zeroed[0], seen["emb"])
    out = augmented_forward(model, feats, "feature_cutoff", 0.25, random.Random(0), output_hidden_states=True)
    assert int((out.hidden_states[0][0] == 0).all(dim=0).sum()) == int(0.25 * 32)
    shuffled = augmented_forward(model, feats, "shuffle", 0.0, random.Random(0)).last_hidden_state
    assert not torch.allclose(shuffled, plain[-1])  # positions changed the output
    again = model(**feats).last_hidden_state
    assert torch.equal(again, plain[-1])  # hook removed afterwards


@pytest.mark.parametrize("name,rate", [("shuffle", 0.0), ("token_cutoff", 0.3), ("feature_cutoff", 0.2),
                                       ("dropout", 0.1), ("none", 0.0)])
def test_augmentations_drawn_in_collate_give_the_same_forward(tiny_bert_dir, name, rate):
    """augmentation_inputs (collate, host) + drawn_forward == augmented_forward with the same seed, bit for bit."""
    from transformers import AutoModel, AutoTokenizer

    from usebench.methods.parts.augment import augmentation_inputs, drawn_forward

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = AutoModel.from_pretrained(tiny_bert_dir).eval()
    feats = dict(tok(["a short one", "a somewhat longer sentence here"], padding=True, return_tensors="pt",
                     return_token_type_ids=False))
    inline = augmented_forward(model, feats, name, rate, random.Random(5)).last_hidden_state
    drawn = augmentation_inputs(name, rate, feats["attention_mask"], 32, random.Random(5))
    assert torch.equal(drawn_forward(model, feats, drawn).last_hidden_state, inline)


# --- the plugin on the tiny BERT ---------------------------------------------------------------------------------

def _plugin_cfg(tiny_bert_dir, **kw):
    from usebench.registry import METHODS

    base = {"model": str(tiny_bert_dir), "max_steps": 3, "batch_size": 4, "max_length": 16}
    return METHODS.get("consert").config("smoke", {**base, **kw})


def test_config_checks_augmentations_and_defaults_follow_the_script(tiny_bert_dir):
    from usebench.registry import METHODS

    paper = METHODS.get("consert").config("paper")
    assert (paper.view1, paper.rate1, paper.view2) == ("feature_cutoff", 0.2, "shuffle")
    assert (paper.temperature, paper.cl_rate, paper.dropout, paper.pooling) == (0.1, 0.15, False, "last2avg")
    assert (paper.batch_size, paper.max_length, paper.lr) == (96, 64, 5e-7)
    with pytest.raises(ConfigError, match="token_cutoff"):
        _plugin_cfg(tiny_bert_dir, view1="token_cuttoff")
    with pytest.raises(ConfigError, match="rate"):
        _plugin_cfg(tiny_bert_dir, view1="dropout", rate1=0.0)


def test_module_has_no_dropout_and_the_loss_is_the_scaled_nt_xent_of_the_two_views(tiny_bert_dir):
    from usebench.eval.pooling import masked_mean
    from usebench.registry import METHODS

    method = METHODS.get("consert")
    cfg = _plugin_cfg(tiny_bert_dir)
    module = method.build(cfg, torch.device("cpu")).train()
    assert all(m.p == 0 for m in module.modules() if isinstance(m, torch.nn.Dropout))
    texts = ["the cat sat on the mat", "a dog", "rain again today in the city", "hello"]
    batch = method.collate(cfg, module.tokenizer, texts, np.random.default_rng(0))
    again = method.collate(cfg, module.tokenizer, texts, np.random.default_rng(0))
    assert batch["aug_seed"] == again["aug_seed"]  # the views' randomness comes from the step RNG
    loss = module(batch)
    # The same two views by hand: feature cutoff then shuffle, drawn in that order from the batch's RNG.
    rng = random.Random(batch["aug_seed"])
    model, mask = module.encoder.model, batch["attention_mask"]
    feats = {"input_ids": batch["input_ids"], "attention_mask": mask}
    with embedding_output_hook(model, lambda e: feature_cutoff(e, mask, 0.2, rng)):
        v1 = masked_mean(model(**feats).last_hidden_state, mask)
    v2 = masked_mean(model(**feats, position_ids=shuffle_position_ids(mask, rng)).last_hidden_state, mask)
    assert loss.item() == pytest.approx(0.15 * _reference_nt_xent(v1.detach().double().numpy(),
                                                                  v2.detach().double().numpy(), 0.1), rel=1e-4)


def test_epoch_length_rounds_up_and_the_last_batch_holds_the_remainder(tiny_bert_dir):
    """main.py: DataLoader(batch_size=96) without drop_last, so an epoch is ceil(n / 96) steps (fit's
    steps_per_epoch = len(dataloader), num_train_steps = steps_per_epoch * epochs)."""
    from usebench.registry import METHODS

    method = METHODS.get("consert")
    paper = method.config("paper")
    assert method.total_steps(paper, 89_192) == 10 * 930  # ceil(89192 / 96) = 930 (floor would give 929)
    cfg = paper.replace(batch_size=8)
    batches = [method.batch_indices(cfg, 20, step, seed=3) for step in range(3)]
    assert [len(b) for b in batches] == [8, 8, 4] and sorted(sum(batches, [])) == list(range(20))
    assert method.batch_indices(cfg, 20, 3, seed=3) != batches[0]  # the next epoch is a new permutation


def test_dev_evaluations_every_200_steps_of_an_epoch_and_at_its_end():
    """The fork's fit counts evaluation_steps per epoch and evaluates again after the epoch's last step."""
    from usebench.registry import METHODS

    method, cfg = METHODS.get("consert"), METHODS.get("consert").config("paper")
    due = [s for s in range(1, 2 * 930 + 1) if method.dev_due(cfg, s, 89_192)]
    assert due == [200, 400, 600, 800, 930, 1130, 1330, 1530, 1730, 1860]


def test_dev_selects_with_mean_pooling_exports_last2avg_and_stops_on_patience(tiny_bert_dir, tmp_path):
    import json

    from usebench.registry import METHODS
    from usebench.train.loop import train
    from tests.methods.helpers import one_thread, tiny_config, toy_corpus

    method = METHODS.get("consert")
    cfg = tiny_config(method, tiny_bert_dir, dev_task="stsb", dev_every=2, dev_patience=2, max_steps=20)
    scores, poolings = iter([0.5, 0.4, 0.3, 0.9]), []

    def dev_eval(ckpt):
        poolings.append(json.loads((ckpt / "method.json").read_text())["pooling"])
        return next(scores)

    with one_thread():
        result = train(method, cfg, toy_corpus(), tmp_path / "run", seed=0, show_progress=False, dev_eval=dev_eval,
                       device="cpu")
    meta = json.loads((result.checkpoint / "method.json").read_text())
    assert poolings == ["mean", "mean", "mean"]  # main.py's dev evaluator: the training model's mean pooling
    assert meta["pooling"] == "last2avg" and meta["dev"]["pooling"] == "mean"
    assert (meta["steps"], meta["steps_trained"], result.steps) == (2, 6, 6)  # two stale evaluations: stop
    assert json.loads((result.checkpoint / "config.json").read_text())["output_hidden_states"] is True


def test_cutoff_masks_drawn_in_collate_are_compact():
    """A cutoff's mask is drawn at the shape that broadcasts to the embeddings (issue 30 item 7): at batch 96 x 64
    x 768 a float32 (bsz, seq, hidden) mask per view was 18.9 MB copied to the GPU every step."""
    from usebench.methods.parts.augment import augmentation_inputs

    mask = torch.ones(96, 64, dtype=torch.long)
    sizes = {name: augmentation_inputs(name, 0.15, mask, 768, random.Random(0))["keep"]
             for name in ("token_cutoff", "feature_cutoff", "dropout")}
    assert sizes["token_cutoff"].shape == (96, 64, 1) and sizes["feature_cutoff"].shape == (96, 1, 768)
    assert sizes["dropout"].dtype == torch.bool  # 1 byte per element, not 4
    assert (sizes["token_cutoff"] == 0).sum() == 96 * int(0.15 * 64)  # int(rate * n_real) rows per sentence
