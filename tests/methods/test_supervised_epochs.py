"""The supervised stages' epochs as sentence-transformers v0.3.8's ``fit`` runs them (the version the TSDAE paper
trained its supervised models with, App. B): its DataLoader keeps an epoch's last partial batch, so 140 labeled
pairs at batch 64 are 3 steps an epoch and fewer pairs than a batch still train; it evaluates on the dev split at
each epoch's end, and we also at the last step, so a run cut at 20K steps has its last stretch among the
candidates. The NLI stage's NoDuplicatesDataLoader yields whole batches only."""
from __future__ import annotations

import math

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.registry import METHODS
from usebench.report.pretraining import search
from usebench.train.loop import check_trainable


def test_an_epoch_keeps_its_last_partial_batch():
    mnrl = METHODS.get("sbert-mnrl")
    cfg = mnrl.config("paper")  # batch 64, 10 epochs, 20K steps at most
    assert mnrl.total_steps(cfg, 140) == 30  # len(DataLoader(140 pairs, batch 64)) = 3, not 2
    epoch = [mnrl.batch_indices(cfg, 140, step, seed=1) for step in range(3)]
    assert [len(b) for b in epoch] == [64, 64, 12] and sorted(i for b in epoch for i in b) == list(range(140))
    assert mnrl.batch_indices(cfg, 140, 3, seed=1) != epoch[0]  # the next epoch is a new shuffle
    assert mnrl.total_steps(cfg, 380_000) == 20_000 and mnrl.steps_per_epoch(cfg, 380_000) == math.ceil(380_000 / 64)
    nli = METHODS.get("sbert-nli")
    ncfg = nli.config("paper")
    assert nli.total_steps(ncfg, 1000) == 1000 // 128 and len(nli.batch_indices(ncfg, 1000, 7, seed=1)) == 128


def test_fewer_labeled_pairs_than_a_batch_train():
    mnrl = METHODS.get("sbert-mnrl")
    cfg = mnrl.config("paper", dev_task=None, dev_every=0)
    pairs = [(f"question {i}", f"duplicate {i}") for i in range(20)]
    assert check_trainable(mnrl, cfg, pairs) == 10  # one step of 20 pairs per epoch, 10 epochs
    assert sorted(mnrl.batch_indices(cfg, 20, 4, seed=0)) == list(range(20))


def test_dev_at_each_epoch_end_and_at_the_last_step():
    mnrl = METHODS.get("sbert-mnrl")
    cfg = mnrl.config("paper", dev_task="scidocs")  # App. B: dev at every epoch's end
    n = 380_000  # SciDocs' supervised pairs (Table 1): 5,938 steps an epoch, cut at 20,000
    due = [s for s in range(1, 20_001) if mnrl.dev_due(cfg, s, n)]
    assert due == [5_938, 11_876, 17_814, 20_000]
    nli = METHODS.get("sbert-nli")  # training_nli_v2.py: evaluation_steps = int(len(loader) * 0.1)
    ncfg = nli.config("paper")
    due = [s for s in range(1, 1001) if nli.dev_due(ncfg, s, 1000 * 128)]
    assert due == [100 * k for k in range(1, 11)]


def test_the_break_even_search_never_proposes_a_size_a_run_refuses():
    """Sizes above the labeled set are refused by `bench run --labeled-sizes`; a size already measured is no
    step of the search."""
    assert search([(8000, 70.0), (16000, 72.0)], 75.0, 0.5, max_size=23_000) == (None, 16000, None, 23000)
    assert search([(8000, 70.0), (23000, 72.0)], 75.0, 0.5, max_size=23_000) == (None, 23000, None, None)
    assert search([(140, 70.0), (141, 80.0)], 75.0, 0.5) == (None, 140, 141, None)
    assert search([(1, 80.0)], 75.0, 0.5) == (None, None, 1, None)


def test_simcse_keeps_its_last_partial_batch_as_hf_trainer_does():
    """[SC] the official SimCSE trains with HF's Trainer, whose DataLoader keeps the last partial batch
    (dataloader_drop_last=False): 1 epoch of 1,000 sentences at batch 512 is 2 steps, the second of 488."""
    simcse = METHODS.get("simcse")
    cfg = simcse.config("paper")
    assert (cfg.epochs, cfg.batch_size) == (1.0, 512) and simcse.total_steps(cfg, 1000) == 2
    batches = [simcse.batch_indices(cfg, 1000, s, seed=0) for s in range(2)]
    assert [len(b) for b in batches] == [512, 488] and sorted(sum(batches, [])) == list(range(1000))
