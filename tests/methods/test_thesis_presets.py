"""Every ``thesis`` preset against R. Wang 2022 (``../shared/papers/004_*``), field by field, with its line.

Values are typed in from the thesis text (line numbers of 004_812ab4b1d0bc624d.txt), or from the SimCSE code it
says it is built on (Sec. 5.2.3, line 665) where the thesis is silent; never read from the code under test.
"""
from __future__ import annotations

from typing import Any

import pytest

from usebench import methods  # noqa: F401
from usebench.registry import METHODS

# Table 5.3 (lines 644-652) and Sec. 5.2.2 (lines 633-638), shared by every thesis run.
TABLE_5_3: dict[str, tuple[Any, str]] = {
    "epochs": (1.0, "644 'epochs 1'"),
    "batch_size": (64, "645 'batch size 64'"),
    "warmup_steps": (910, "646 'warmup steps 910'"),
    "weight_decay": (0.0, "648 'weight decay 0.0'"),
    "max_length": (32, "649 'max seq. length 32'"),
    "lr": (3e-5, "650 'learning rate 3e-5'"),
    "pooling": ("mean", "651 'pooling avg.'"),
    "model": ("bert-base-uncased", "630 'Bert-based-uncased' (Sec. 5.2.2; eBert is internal)"),
    "dev_every": (250, "636 'We evaluate the model checkpoint every 250 steps'"),
    "dev_metric": ("loss", "636 'validation loss i.e. loss on validation dataset as default'"),
    "optimizer": ("adamw", "665 built on the SimCSE code: HF Trainer AdamW"),
    "eps": (1e-8, "665 SimCSE code: HF Trainer adam_epsilon 1e-8"),
    "scheduler": ("linear", "665 SimCSE code: HF Trainer linear decay after the warm-up"),
    "grad_clip": (1.0, "665 SimCSE code: HF Trainer max_grad_norm 1.0"),
}
CONTRASTIVE = {"temperature": (0.05, "647 'temperature 0.05'")}
DECODER = {"decoder_layers": (2, "652 'decoder layers 2'; 364 'always set 2 layers for decoder'"),
           "mask_ratio": (0.8, "391 'randomly mask some tokens (usually 80% in this thesis)'"),
           "ae_reduction": ("token", "658 built on the SimCSE code (inferred): simcse/models.py's auxiliary loss is "
                                     "mlm_weight * nn.CrossEntropyLoss(), a token mean; 383/395 print per-sentence sums")}
MULTITASK = {"ae_weight": (0.001, "919 Table 5.16 'especially when the weight w = 0.001'")}
CONSERT = {
    "dropout": (False, "326 'Use BERT model T as encoder, remove its default dropout'"),
    "view2": ("shuffle", "687 ConSERT1 and ConSERT2 both use Token Shuffling"),
    "rate1": (0.2, "687 'Feature Cutoff with probability 0.2 and Embedding Dropout with probability 0.2'"),
    "cl_rate": (0.5, "346 eq. 3.2 = eq. 2.9 (l(i,i+) + l(i+,i)) / 2N: the mean of both directions"),
    "train_pooling": ("mean", "651 'pooling avg.'"),
}
EXPECTED: dict[tuple[str, str], dict[str, tuple[Any, str]]] = {
    ("simcse", "thesis"): {**TABLE_5_3, **CONTRASTIVE,
                           "loss": ("infonce", "316 eq. 3.1 SimCSE's non-symmetric NT-Xent (Tables 5.16/5.17 L_simcse)"),
                           "dropout": (True, "687 'default dropout of the model with probability 0.1'")},
    ("consert", "thesis"): {**TABLE_5_3, **CONTRASTIVE, **CONSERT,
                            "view1": ("feature_cutoff", "683 'ConSERT1 uses Token Shuffling + Feature Cutoff'")},
    ("consert", "thesis2"): {**TABLE_5_3, **CONTRASTIVE, **CONSERT,
                             "view1": ("dropout", "683 'ConSERT2 uses Token Shuffling + Embedding Dropout'")},
    ("clm-ae", "thesis"): {**TABLE_5_3, **DECODER},  # 383 eq. 3.4 is the whole loss: no ae_weight (below)
    ("mlm-ae", "thesis"): {**TABLE_5_3, **DECODER},  # 395 eq. 3.5 is the whole loss
    ("simcse-clm", "thesis"): {**TABLE_5_3, **CONTRASTIVE, **DECODER, **MULTITASK,
                               "loss": ("infonce", "Table 5.17 'L_simcse + w * L_CLM_autoencoder'")},
    ("simcse-mlm", "thesis"): {**TABLE_5_3, **CONTRASTIVE, **DECODER, **MULTITASK,
                               "loss": ("infonce", "Table 5.17 'L_simcse + w * L_MLM_autoencoder'")},
    **{(f"consert-{kind}", "thesis"): {**TABLE_5_3, **CONTRASTIVE, **CONSERT, **DECODER, **MULTITASK,
                                      "view1": ("feature_cutoff", "683 ConSERT1's augmentations")}
       for kind in ("clm", "mlm")},
}


@pytest.mark.parametrize("method, preset", list(EXPECTED), ids=lambda x: str(x))
def test_thesis_preset_is_table_5_3(method, preset):
    cfg = METHODS.get(method).config(preset)
    wrong = {f: (getattr(cfg, f), want, line) for f, (want, line) in EXPECTED[(method, preset)].items()
             if getattr(cfg, f) != want}
    assert not wrong, "\n".join(f"{f}: preset {got!r}, thesis {want!r} (line {line})" for f, (got, want, line)
                                in wrong.items())


@pytest.mark.parametrize("method", ["clm-ae", "mlm-ae"])
def test_standalone_autoencoders_have_no_eq_3_6_weight(method):
    # 383 / 395: eq. 3.4 / 3.5 alone are the loss; eq. 3.6's w (414) weighs the AE against a contrastive loss.
    assert not hasattr(METHODS.get(method).config("thesis"), "ae_weight")


@pytest.mark.parametrize("method", ["simcse", "consert", "clm-ae", "mlm-ae", "simcse-clm", "simcse-mlm"])
def test_thesis_presets_export_mean_pooling_without_simcse_mlp(method, tiny_bert_dir):
    m = METHODS.get(method)
    cfg = m.config("thesis")
    assert m.eval_pooling(cfg) == "mean"  # 651 'pooling avg.' at test as in training


# Tables 5.11-5.13 print their step counts: one epoch is len(corpus) // batch whole batches (the last partial batch
# dropped), e.g. 100k at batch 64 = 1562 steps, 3 epochs of 20k = 936.
@pytest.mark.parametrize("n, batch, epochs, steps", [
    (100_000, 32, 1, 3125), (100_000, 64, 1, 1562), (100_000, 96, 1, 1041), (100_000, 128, 1, 781),
    (100_000, 256, 1, 390), (100_000, 512, 1, 195),  # Table 5.11 (line 801)
    (1_000_000, 64, 1, 15625), (50_000, 64, 1, 781), (20_000, 64, 1, 312), (10_000, 64, 1, 156),  # Table 5.12 (line 815)
    (1_000_000, 64, 3, 46875), (100_000, 64, 3, 4686), (50_000, 64, 3, 2343), (20_000, 64, 3, 936),
    (10_000, 64, 3, 468),  # Table 5.13 (line 834)
])
@pytest.mark.parametrize("method", ["simcse", "consert"])
def test_thesis_step_counts_match_the_printed_tables(method, n, batch, epochs, steps):
    m = METHODS.get(method)
    assert m.total_steps(m.config("thesis", batch_size=batch, epochs=float(epochs)), n) == steps
