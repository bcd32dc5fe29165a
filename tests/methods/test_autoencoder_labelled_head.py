"""The thesis autoencoders' vocabulary head on the positions found in collate (issue 20): it projects exactly those
rows, and a batch without them (made by hand) gets the same loss. Loss values and gradients against the
full-logits reference: ``tests/methods/test_thesis_losses.py``."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.registry import METHODS
from usebench.train.backbone import SentenceEncoder, load_backbone
from usebench.methods.parts.autoencoders import Autoencoder, autoencoder_batch
from tests.methods.helpers import one_thread, tiny_config, toy_corpus


@pytest.mark.parametrize("kind", ["clm", "mlm"])
def test_the_head_projects_the_collated_positions_only(tiny_bert_dir, kind):
    cfg = tiny_config(METHODS.get(f"{kind}-ae"), tiny_bert_dir, dropout=False)
    torch.manual_seed(0)
    with one_thread():
        model, tok, _ = load_backbone(str(tiny_bert_dir), dropout=False)
        enc = SentenceEncoder(model, "mean")
        ae = Autoencoder(kind, str(tiny_bert_dir), enc.dim, cfg, int(tok.pad_token_id))
        batch = autoencoder_batch(kind, tok, toy_corpus(6, seed=5) + ["x"], 32, cfg.mask_ratio,
                                  np.random.default_rng(2))
        labels = ae.labels(batch)
        assert batch["label_positions"].tolist() == (labels.reshape(-1) != -100).nonzero().squeeze(1).tolist()
        rows: list[int] = []
        vocab = ae.decoder.get_output_embeddings()
        vocab.register_forward_hook(lambda m, args, out: rows.append(args[0].shape[0]))
        s = enc(batch["target_ids"], batch["attention_mask"]).detach()
        collated = ae(s, batch)
        by_hand = ae(s, {k: v for k, v in batch.items() if not k.startswith("label_")})
    assert rows == [int((labels != -100).sum())] * 2 and 0 < rows[0] < labels.numel()
    torch.testing.assert_close(collated, by_hand, rtol=0, atol=0)
