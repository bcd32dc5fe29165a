"""R. Wang 2022 (RWTH master's thesis), Table 5.3 "Basic Experiments Hyperparameters Setup": the shared training
setup of the thesis' SimCSE, ConSERT, autoencoder and multi-task runs (its ``thesis`` presets).

Table 5.3 (thesis text lines 644-652): 1 epoch, batch 64, 910 warm-up steps, temperature 0.05 (contrastive methods
only), weight decay 0, max length 32, lr 3e-5, average pooling, 2 decoder layers (autoencoders only). Sec. 5.2.2:
seeds 1, 7, 42; the best checkpoint by the loss on a held-out corpus of the training domain, evaluated every 250
steps. Built on the SimCSE code (Sec. 5.2.3), whose HF Trainer decides what the table leaves open: AdamW (eps
1e-8), linear decay after the warm-up, gradient clipping at 1.0.
"""
from __future__ import annotations

from typing import Any

THESIS_SEEDS = (1, 7, 42)  # Sec. 5.2.2 "three different random seeds (1, 7, 42)"
TABLE_5_3: dict[str, Any] = {
    "model": "bert-base-uncased", "epochs": 1.0, "max_steps": None, "batch_size": 64, "warmup_steps": 910,
    "weight_decay": 0.0, "max_length": 32, "lr": 3e-5, "pooling": "mean", "scheduler": "linear",
    "optimizer": "adamw", "eps": 1e-8, "grad_clip": 1.0,
    "dev_task": None, "dev_every": 250, "dev_metric": "loss", "dev_patience": None,
    # the thesis states no training precision: fp32 (said in THESIS_NOTE; its rows record none)
    "amp": "off",
    # Tables 5.11-5.13 print floor(n / batch) steps an epoch (100k sentences at batch 64: 1562, x3 epochs: 4686)
    "drop_last": True}
THESIS_NOTE = ("R. Wang 2022 Table 5.3 (1 epoch, batch 64, 910 warm-up steps, lr 3e-5, wd 0, length 32, mean pooling); "
               "the SimCSE code's Trainer where it is silent (AdamW eps 1e-8, linear decay, clip 1); validation loss "
               "every 250 steps on --set dev_corpus=FILE (a held-out sample of the training domain; the thesis' "
               "samples were never published); run with --seeds 1,7,42; fp32, as the thesis states no precision")
