"""Every method's ``paper`` preset against the published setting, value by value.

One row per method: backbone, budget (steps or epochs), batch size, lr, optimizer, eps, schedule, pooling in
training and at evaluation, dropout and max length, each with the line it comes from. The values are typed in
from the sources (never read from the code under test). Paper citations are line numbers of the texts in
``../shared/papers/`` (000 = TSDAE, 001 = DenoSent, 002 = PaSeR); code citations use METHODS.md's tags ([ST]
sentence-transformers, [SC] SimCSE, [CTo] Contrastive-Tension, [CS] ConSERT, [PF] pytorch-bertflow, [DS]
DenoSent). Where a source is silent the row says so and holds the suite's documented choice (the preset's note
in `bench methods`), so a change to it is still a visible decision.
"""
from __future__ import annotations

from typing import Any

import pytest

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.registry import METHODS

BERT = "bert-base-uncased"  # TSDAE 000:118 "BERT-base-uncased is used as the base Transformer model"

# field -> (published value, source). "steps"/"epochs": the budget; "train_pooling": what the loss sees; "dev":
# (task, evaluated every N steps, patience) of the checkpoint selection, or "none".
PUBLISHED: dict[str, dict[str, tuple[Any, str]]] = {
    "tsdae": {
        "model": (BERT, "000:118"),
        "steps": (100_000, "000:400 App. B 'the number of training steps is 100K'"),
        "batch_size": (8, "000:400 'the batch size is 8'"),
        "lr": (3e-5, "000:400 'initial learning rates are 3e-5, 1e-5 and 1e-6'"),
        "optimizer": ("adamw", "000:400 'the optimizers are AdamW, RMSProp and AdamW'"),
        "eps": (1e-6, "000:400 Transformers v3.1.0: transformers.AdamW default eps=1e-6"),
        "scheduler": ("constant", "[ST] TSDAE README fit(scheduler='constantlr'); App. B states none"),
        "train_pooling": ("cls", "000:391 App. A 'the CLS pooling is chosen'"),
        "eval_pooling": ("cls", "000:391"),
        "dropout": (True, "[ST] DenoisingAutoEncoderLoss trains in train mode"),
        "max_length": (128, "not stated (App. B); suite choice, see the preset note"),
        "dev": ("none", "000:402-408 no early stopping: a fixed number of training steps"),
    },
    "simcse": {
        "model": (BERT, "000:118"),
        "epochs": (1.0, "000:400 '1 epoch of training'"),
        "batch_size": (512, "000:400 'batch size of 512'"),
        "lr": (5e-5, "000:400 'AdamW optimizer with learning rate 5e-5'"),
        "optimizer": ("adamw", "000:400"),
        "eps": (1e-8, "[SC] HF Trainer default adam_epsilon 1e-8"),
        "scheduler": ("linear", "[SC] HF Trainer default linear decay, no warm-up"),
        "train_pooling": ("cls_mlp", "[SC] simcse/models.py MLPLayer on CLS in training"),
        "eval_pooling": ("cls_mlp", "000:400 'a linear layer on the CLS token embedding as the pooling method'"),
        "dropout": (True, "[SC] the two views differ by dropout"),
        "max_length": (32, "[SC] run_unsup_example.sh --max_seq_length 32"),
        "dev": (("stsb", 125, None), "[SC] run_unsup_example.sh --eval_steps 125 on STSb-dev, best kept"),
    },
    "ct": {
        "model": (BERT, "000:118"),
        "steps": (100_000, "000:400 '100K'"),
        "batch_size": (8, "000:400 'the batch size is 8'"),
        "lr": (1e-5, "000:400 '1e-5'"),
        "optimizer": ("rmsprop", "000:400 'RMSProp'"),
        "eps": (1e-8, "000:400 PyTorch implementation: torch.optim.RMSprop default eps 1e-8"),
        "scheduler": ("piecewise", "000:400 '1e-5 for step 1 to 500; 8e-6 ... 2e-6 for others'"),
        "train_pooling": ("mean", "000:400 'The pooling method for CT and BERT-flow is both mean pooling'"),
        "eval_pooling": ("mean", "000:400"),
        "dropout": (False, "[CTo] Training.py calls the models with training=False"),
        "max_length": (75, "[CTo] max_sent_len 75 (App. B states none)"),
        "dev": ("none", "000:402-408 no early stopping"),
    },
    "ct-ibn": {  # not in the TSDAE paper: the [ST] example on the paper's backbone
        "model": (BERT, "000:118 (the [ST] example uses distilbert)"),
        "epochs": (1.0, "[ST] CT_In-Batch_Negatives example epochs=1"),
        "batch_size": (128, "[ST] example batch_size 128"),
        "lr": (5e-5, "[ST] example optimizer_params={'lr': 5e-5}"),
        "optimizer": ("adamw", "[ST] old fit: transformers.AdamW"),
        "eps": (1e-6, "[ST] old fit: transformers.AdamW default eps 1e-6 (only lr passed)"),
        "scheduler": ("linear", "[ST] old fit WarmupLinear, warmup_steps=1000"),
        "train_pooling": ("mean", "[ST] example models.Pooling default (mean)"),
        "eval_pooling": ("mean", "[ST] example"),
        "dropout": (True, "[ST] fit trains in train mode"),
        "max_length": (75, "[ST] example max_seq_length 75"),
        "dev": ("none", "not in the paper; trained for its budget"),
    },
    "mlm": {
        "model": (BERT, "000:118"),
        "steps": (100_000, "000:150 'the number of training steps (100K)'"),
        "batch_size": (8, "000:150 'the batch size (8)'"),
        "lr": (5e-5, "000:150 'the learning rate (5e-5)'"),
        "optimizer": ("bert_adam", "000:150 'original setup in Devlin et al.': Adam without bias correction"),
        "eps": (1e-6, "BERT optimization.py AdamWeightDecayOptimizer epsilon 1e-6"),
        "scheduler": ("linear", "BERT: 10K warm-up steps then linear decay"),
        "train_pooling": (None, "token-level loss: no sentence pooling in training"),
        "eval_pooling": ("mean", "000:150 'we perform mean-pooling of the output token embeddings'"),
        "dropout": (True, "BERT pre-training keeps dropout 0.1"),
        "max_length": (128, "BERT pre-training sequence length 128 (000:150 states none)"),
        "dev": ("none", "000:402-408 no early stopping"),
    },
    "consert": {
        "model": (BERT, "[CS] scripts/unsup-consert-base.sh --model_name_or_path ./bert-base-uncased/"),
        "epochs": (10.0, "[CS] unsup-consert-base.sh --num_epochs 10"),
        "batch_size": (96, "[CS] --batch_size 96"),
        "lr": (5e-7, "[CS] --learning_rate 0.0000005"),
        "optimizer": ("bert_adam", "[CS] main.py fit optimizer_params={'eps': 1e-6, 'correct_bias': False}"),
        "eps": (1e-6, "[CS] main.py optimizer_params eps 1e-6"),
        "scheduler": ("linear", "[CS] fit default WarmupLinear, 10% warm-up (main.py warmup_steps)"),
        "train_pooling": ("mean", "[CS] main.py models.Pooling(pooling_mode_mean_tokens=True)"),
        "eval_pooling": ("last2avg", "[CS] README note 3 / eval.py --last2avg"),
        "dropout": (False, "[CS] --no_dropout"),
        "max_length": (64, "[CS] --max_seq_length 64"),
        "dev": (("stsb", 200, 10), "[CS] --evaluation_steps 200 --patience 10"),
    },
    "bertflow": {
        "model": (BERT, "000:118"),
        "steps": (100_000, "000:400 '100K'"),
        "batch_size": (8, "000:400 'the batch size is 8'"),
        "lr": (1e-6, "000:400 '1e-6'"),
        "optimizer": ("adamw", "000:400 'AdamW'"),
        "eps": (1e-6, "000:400 Transformers v3.1.0: transformers.AdamW default eps 1e-6"),
        "scheduler": ("constant", "not stated (App. B): no schedule"),
        # CONFLICT (preset note): 000:400 says mean; [PF] README says first_last_avg reproduces the numbers.
        "train_pooling": ("first_last_avg", "[PF] README (000:400 'mean pooling': preset paper-mean)"),
        "eval_pooling": ("flow", "[PF] tflow_utils.py: the embedding is the flow's z"),
        "dropout": (True, "[PF] calls .train() on the whole model while extracting u"),
        "max_length": (128, "not stated (App. B); suite choice"),
        "dev": ("none", "000:402-408 no early stopping"),
    },
    "denosent": {
        "model": (BERT, "001:170 'pre-trained bert-base-uncased as the encoder'"),
        "steps": (5000, "[DS] README --max_steps 5000 (001:170 states none)"),
        "batch_size": (64, "[DS] README --per_device_train_batch_size 64 (001:170 states none)"),
        "lr": (5e-5, "001:170 'a learning rate of 5e-5'"),
        "optimizer": ("adamw", "001:170 'AdamW as the optimizer'"),
        "eps": (1e-8, "[DS] HF Trainer default adam_epsilon 1e-8"),
        "scheduler": ("warmup_constant", "[DS] README constant_with_warmup, 500 warm-up steps"),
        "train_pooling": ("mask_token", "001:170 'the encoder output vector of the [MASK] token'"),
        "eval_pooling": ("mask_token", "001:170 'through all our experiments'"),
        "dropout": (True, "[DS] trains in train mode"),
        "max_length": (32, "001:170 'For the input sequence length, we use a value of 32'"),
        "dev": (("stsb", 50, None), "001:170 best STSb-dev checkpoint; [DS] README --eval_steps 50"),
    },
    "paser": {
        "model": (BERT, "002:157 'We use BERT-base ... as the sentence encoder'"),
        "epochs": (5.0, "002:240 'train all versions for 5 epochs'"),
        "batch_size": (64, "002:157 'selected from [32, 64, 96]' ([PS] script: 64)"),
        "lr": (3e-5, "002:157 'an initial learning rate of 3e-5'"),
        "optimizer": ("adamw", "[PS] HF Trainer default AdamW"),
        "eps": (1e-8, "[PS] HF Trainer default adam_epsilon 1e-8"),
        "scheduler": ("linear", "[PS] HF Trainer default linear decay"),
        "train_pooling": ("cls", "[PS] --pooler_type cls_before_pooler"),
        "eval_pooling": ("cls", "PaSeR Table 9 ([CLS] best)"),
        "dropout": (True, "[PS] trains in train mode"),
        "max_length": (32, "002:157 'restrict the maximum sequence length to 32'"),
        "dev": (("stsb", 125, None), "[PS] script eval every 125 steps on STSb-dev, best kept"),
    },
    # In-domain supervised models: TSDAE 000:410 App. B (sentence-transformers v0.3.8); the rest are that
    # version's fit / models.Transformer / models.Pooling defaults ([ST v0.3.8]).
    **{name: {
        "model": (BERT, "000:118 (the same backbone as every Table 2 row)"),
        "epochs": ((10.0, "capped at", 20_000), "000:410 'the number of training epochs is 10; the maximum number "
                                                 "of training steps is 20K'"),
        "batch_size": (64, "000:410 'the batch size is 64'"),
        "lr": (2e-5, "[ST v0.3.8] fit optimizer_params {'lr': 2e-5}"),
        "optimizer": ("bert_adam", "[ST v0.3.8] fit: transformers.AdamW, correct_bias=False"),
        "eps": (1e-6, "[ST v0.3.8] fit optimizer_params {'eps': 1e-6}"),
        "weight_decay": (0.01, "[ST v0.3.8] fit weight_decay=0.01"),
        "scheduler": ("linear", "[ST v0.3.8] fit scheduler='WarmupLinear'"),
        "train_pooling": ("mean", "[ST v0.3.8] models.Pooling default pooling_mode_mean_tokens"),
        "eval_pooling": ("mean", "[ST v0.3.8] the same Pooling module at test"),
        "max_length": (128, "[ST v0.3.8] models.Transformer max_seq_length=128"),
        "dev": (("target", 1, None), "000:410 'early-stopping is applied by checking the validation performance' "
                                     "(fit's evaluator at every epoch's end, best kept)"),
    } for name in ("sbert-mnrl", "sbert-cosine")},
    # The nli-sts stages follow the SBERT-nli-stsb-v2 example scripts the paper's domain-adaptation rows name.
    "sbert-nli": {
        "model": (BERT, "000:118"),
        "epochs": (1.0, "[ST] examples/training/nli/training_nli_v2.py num_epochs=1"),
        "batch_size": (128, "[ST] training_nli_v2.py train_batch_size=128"),
        "max_length": (75, "[ST] training_nli_v2.py max_seq_length=75"),
        "eps": (1e-6, "[ST v0.3.8] fit default"),
        "dev": (("stsb", 0.1, None), "[ST] training_nli_v2.py evaluation_steps=int(len(loader)*0.1) on STSb dev"),
    },
    "sbert-stsb": {
        "model": (BERT, "000:118"),
        "epochs": (4.0, "[ST] examples/training/sts/training_stsbenchmark_continue_training.py num_epochs=4"),
        "batch_size": (16, "[ST] training_stsbenchmark_continue_training.py train_batch_size=16"),
        "eps": (1e-6, "[ST v0.3.8] fit default"),
        "dev": (("stsb", 1, None), "[ST] evaluation_steps=1000 > an epoch's 359 steps: once per epoch"),
    },
    # R. Wang's thesis (004) is the paper of its autoencoders and multi-task methods: Table 5.3 (lines 644-652),
    # the SimCSE code's Trainer where it is silent (665); tests/methods/test_thesis_presets.py has every field.
    **{name: {
        "model": (BERT, "004:630 Bert-base-uncased"),
        "epochs": (1.0, "004:644 'epochs 1'"),
        "batch_size": (64, "004:645 'batch size 64'"),
        "lr": (3e-5, "004:650 'learning rate 3e-5'"),
        "eps": (1e-8, "004:665 SimCSE code: HF Trainer adam_epsilon"),
        "scheduler": ("linear", "004:665 SimCSE code: HF Trainer linear decay after 910 warm-up steps (646)"),
        "train_pooling": ("mean", "004:651 'pooling avg.'"),
        "eval_pooling": ("mean", "004:651"),
        "max_length": (32, "004:649 'max seq. length 32'"),
        "dev": ((None, 250, None), "004:636 validation loss, every 250 steps"),
    } for name in ("clm-ae", "mlm-ae", "simcse-clm", "simcse-mlm", "consert-clm", "consert-mlm")},
}


def train_pooling(name: str, cfg: Any) -> str | None:
    """What the training loss sees: SimCSE's MLP on CLS, ConSERT's/BERT-flow's own field, MLM none."""
    if name == "mlm":
        return None
    if name == "simcse":  # [SC] cl_init: the MLP exists with --pooler_type cls only
        return "cls_mlp" if cfg.variant == "official" and cfg.pooling == "cls" else cfg.pooling
    return getattr(cfg, "train_pooling", None) or getattr(cfg, "base_pooling", None) or cfg.pooling


def actual(name: str, field: str) -> Any:
    method = METHODS.get(name)
    cfg = method.config("paper")
    if field == "steps":
        return cfg.max_steps if cfg.epochs is None else ("epochs", cfg.epochs)
    if field == "epochs":
        return cfg.epochs if cfg.max_steps is None else (cfg.epochs, "capped at", cfg.max_steps)
    if field == "train_pooling":
        return train_pooling(name, cfg)
    if field == "eval_pooling":
        return method.eval_pooling(cfg)
    if field == "dev":
        return (cfg.dev_task, cfg.dev_every, cfg.dev_patience) if cfg.dev_every else "none"
    return getattr(cfg, field)


def test_every_method_has_a_row():
    assert sorted(PUBLISHED) == sorted(METHODS.names())


@pytest.mark.parametrize("name, field", [(n, f) for n, row in PUBLISHED.items() for f in row])
def test_paper_preset_holds_the_published_value(name, field):
    value, source = PUBLISHED[name][field]
    assert actual(name, field) == value, f"{name}.{field}: paper preset differs from {value!r} ({source})"


def test_ct_piecewise_schedule_is_app_b():
    """000:400: 1e-5 for steps 1-500, 8e-6 for 501-1000, 6e-6 for 1001-1500, 4e-6 for 1501-2000, 2e-6 after."""
    from usebench.train.optim import lr_multiplier

    cfg = METHODS.get("ct").config("paper")
    f = lr_multiplier(cfg, cfg.max_steps)
    lrs = [round(cfg.lr * f(step - 1), 12) for step in (1, 500, 501, 1000, 1001, 1500, 1501, 2000, 2001, 100_000)]
    assert lrs == [1e-5, 1e-5, 8e-6, 8e-6, 6e-6, 6e-6, 4e-6, 4e-6, 2e-6, 2e-6]


def test_paper_departures_are_written_down():
    """Every paper preset that fills a gap or departs from its source says so in `bench methods`."""
    from usebench.train.catalog_text import describe_method

    for name in PUBLISHED:
        lines = describe_method(METHODS.get(name))
        paper = next(i for i, line in enumerate(lines) if line.strip().startswith("preset paper "))
        assert lines[paper + 1].strip().startswith("note:"), f"{name}: the paper preset has no note"
