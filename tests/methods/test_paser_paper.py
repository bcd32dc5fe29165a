"""PaSeR's `paper` preset is the run behind Table 1: the released code decides where the paper is silent, and
where both are, the nearest published ablation row (top_k).

Sources: [PS] chengzhipanpan/PaSeR@877ac00 (paser/models.py, train.py, scripts/run_unsup_example.sh, README);
paper = ../shared/papers/002_* (Tables 4, 5, 8, 9); EDA = jasonwei20/eda_nlp@04ab29c code/eda.py.
"""
from __future__ import annotations

import random
import shutil

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.registry import METHODS
from usebench.methods.paser import PaSeRModule
from usebench.methods.parts.phrase_masking import make_example
from usebench.methods.parts.rake import NLTK_ENGLISH_STOPWORDS
from usebench.methods.parts.synonyms import EDA_STOPWORDS, eda_words

CODE_SETTING = {  # field -> (value, source)
    "signal": ("code", "[PS] models.py cl_forward: [t*(z1*z2), k*(z1-z2), z1, z2] after z2 = projection(z2)"),
    "signal_t": (1.0, "[PS] train.py --t_weight default 1 (the script passes none)"),
    "signal_k": (1.0, "[PS] train.py --k_weight default 1"),
    "mlm_head": ("pretrained", "[PS] train.py: model.lm_head.load_state_dict(cls.predictions.state_dict())"),
    "tie_head": (False, "[PS] lm_head is a separate BertLMPredictionHead: a copy, not tied"),
    "decoder_embeddings": ("bert", "[PS] models.py cl_init(cls, config, self.bert.embeddings)"),
    "top_k": (5, "no source states Table 1's k ([PS] has no phrase extraction): Table 1 (002:182, "
              "77.72/79.19/65.31) is nearest Table 5's RAKE top5 row (002:278, 77.7/79.3/65.4), far from its top1 "
              "row (002:274, 73.5/73.9/62.4): the nearest published ablation row is the best evidence (issue 38)"),
    "synonym_ratio": (0.5, "[PS] README: synonym replacement with a ratio of 0.5"),
    "augment": ("static", "[PS] README: data/augmented.csv, preprocessed once with EDA's code"),
    "eda_clean": (True, "EDA get_only_chars runs before synonym replacement"),
    "synonym_stop_words": ("eda", "EDA stop_words"),
    "amp": ("off", "[PS] run_unsup_example.sh passes no --fp16: fp32"),
}


@pytest.mark.parametrize("field", list(CODE_SETTING))
def test_paper_preset_is_the_released_codes_setting(field):
    value, source = CODE_SETTING[field]
    for preset in ("paper", "official"):
        assert getattr(METHODS.get("paser").config(preset), field) == value, f"{preset}.{field}: {source}"


def test_eq2_is_the_ablations_default_row_and_differs_only_in_signal_and_phrases():
    method = METHODS.get("paser")
    paper, eq2 = method.config("paper"), method.config("paper-eq2")
    assert eq2.signal == "eq2" and (eq2.signal_m, eq2.signal_n) == (10.0, 10.0)  # Table 8's best m = n = 10
    # 002:278 Table 5 "RAKE (top5)" = 002:254 Table 4 "+ SR" = 002:376 Table 8 "m = 10, n = 10" = 002:399 Table 9
    # "[CLS]": 77.7/79.3/65.4, the ablations' shared default row
    assert eq2.top_k == 5
    assert eq2.replace(signal="code", top_k=paper.top_k) == paper


def _rounded(v: float) -> float:
    return float(f"{v:.1f}")


def test_table_1_sits_at_table_5s_top5_row_so_the_paper_preset_masks_five_phrases():
    """Why top_k is 5: no source states Table 1's k, and Table 1's PaSeR row (002:182) is nearest Table 5's RAKE
    top-5 row (002:278) of all its rows (002:274-278); the top-1 row (§3.1.2's single phrase p0) is far from it."""
    table1 = ((70.21 + 83.88 + 73.06 + 83.87 + 77.60) / 5, 79.19, 65.31)  # STS12-16 mean, STSb, SICK-R
    table5 = {1: (73.5, 73.9, 62.4), 2: (76.8, 77.6, 63.6), 3: (77.8, 79.4, 64.4), 4: (77.6, 79.3, 64.6),
              5: (77.7, 79.3, 65.4)}
    distance = {k: sum(abs(a - b) for a, b in zip(table1, row)) for k, row in table5.items()}
    assert min(distance, key=distance.get) == 5 and distance[5] < 0.25 and distance[1] > 10
    assert METHODS.get("paser").config("paper").top_k == 5


def test_top_k_masks_rakes_best_phrases_in_order():
    """k = 1 masks the words of RAKE's best phrase only; the paper preset's k = 5 masks every phrase of a sentence
    that has fewer."""
    cfg = METHODS.get("paser").config("paper")
    text = "deep learning models need large labeled datasets, but cheap unlabeled text is everywhere"
    top1 = make_example(text, 1, "[MASK]", NLTK_ENGLISH_STOPWORDS, 0.0, None, None)
    ex = make_example(text, cfg.top_k, "[MASK]", NLTK_ENGLISH_STOPWORDS, 0.0, None, None)
    # RAKE by hand (NLTK stop words; ',' and stop words split phrases): "deep learning models need large labeled
    # datasets" (7 words, each deg 7 / freq 1 = 7, score 49) beats "cheap unlabeled text" (3 x 3 = 9) and
    # "everywhere" (1)
    assert top1.target == "deep learning models need large labeled datasets"
    assert top1.view1 == " ".join(["[MASK]"] * 7) + ", but cheap unlabeled text is everywhere"
    assert ex.target.split()[-1] == "everywhere"  # top-5 also masks the weaker phrases


def test_static_augmentation_gives_every_step_the_same_views():
    """The released file holds one augmented copy per sentence: the views never change between steps or seeds."""
    syn = lambda w: (w + "x",)  # every word has one synonym; no WordNet needed
    text = "The quick brown fox jumps over the lazy dog"
    a = make_example(text, 2, "[MASK]", NLTK_ENGLISH_STOPWORDS, 0.5, None, syn, eda_clean=True)
    b = make_example(text, 2, "[MASK]", NLTK_ENGLISH_STOPWORDS, 0.5, None, syn, eda_clean=True)
    assert a == b
    moving = {make_example(text, 2, "[MASK]", NLTK_ENGLISH_STOPWORDS, 0.5, random.Random(s), syn, eda_clean=True)
              for s in range(8)}
    assert len(moving) > 1  # per_step redraws the replacement


def test_eda_cleaning_and_eda_stop_words():
    """Views are EDA's cleaned text (lower-case letters, single spaces; the mask token kept), EDA's stop words are
    never replaced, and the budget is max(1, int(0.5 * words)) of the cleaned words."""
    syn = lambda w: ("zz",)
    text = "Don't-stop: at least 89 dead in China's quakes!"
    assert eda_words(text) == ["dont", "stop", "at", "least", "dead", "in", "chinas", "quakes"]
    ex = make_example(text, 1, "[MASK]", NLTK_ENGLISH_STOPWORDS, 0.5, None, syn, eda_clean=True)
    for view in (ex.view0, ex.view1):
        assert set(view.replace("[MASK]", "")) <= set("abcdefghijklmnopqrstuvwxyz ") and "  " not in view
    words0 = ex.view0.split()
    assert words0.count("zz") == 4  # int(0.5 * 8 cleaned words)
    for keep in ("at", "in"):  # EDA stop words stay
        assert keep in words0
    assert "[MASK]" in ex.view1 and "[MASK]" not in ex.view0 and ex.target
    assert {"at", "in", "the", "don"} <= EDA_STOPWORDS and "don't" not in EDA_STOPWORDS and len(EDA_STOPWORDS) == 127


@pytest.fixture()
def bert_with_mlm_head(tmp_path, tiny_bert_dir):
    """A tiny BertForMaskedLM checkpoint whose MLM transform holds a value no random init gives."""
    torch.manual_seed(1)
    saved = BertForMaskedLM(BertConfig.from_pretrained(tiny_bert_dir))
    with torch.no_grad():
        saved.cls.predictions.transform.dense.weight.fill_(0.125)
        saved.cls.predictions.bias.fill_(0.5)
    saved.save_pretrained(tmp_path / "mlm")
    for f in tiny_bert_dir.iterdir():
        if "token" in f.name or f.name == "vocab.txt":
            shutil.copy(f, tmp_path / "mlm" / f.name)
    return tmp_path / "mlm"


def test_paper_head_is_berts_pretrained_mlm_head_as_an_untied_copy(bert_with_mlm_head):
    cfg = METHODS.get("paser").config("paper", {"model": str(bert_with_mlm_head), "synonym_ratio": 0.0})
    module = PaSeRModule(cfg)
    head = module.head.predictions
    assert module.head_pretrained and torch.all(head.transform.dense.weight == 0.125)
    assert torch.all(head.bias == 0.5)
    words = module.encoder.model.get_input_embeddings().weight
    assert head.decoder.weight is not words and torch.equal(head.decoder.weight, words)
    # the projection on z2 starts as BERT's init (normal, std = initializer_range; zero bias), as init_weights()
    assert torch.all(module.projection.bias == 0) and float(module.projection.weight.detach().std()) == pytest.approx(0.02, rel=0.3)
    # decoder input: BERT's embedding module (word + position + type embeddings, LayerNorm)
    assert module.decoder.embed_tokens.embeddings is module.encoder.model.embeddings


def test_paper_collate_runs_a_step_with_the_code_signal(bert_with_mlm_head):
    method = METHODS.get("paser")
    cfg = method.config("paper", {"model": str(bert_with_mlm_head), "synonym_ratio": 0.0, "batch_size": 4})
    tok = AutoTokenizer.from_pretrained(bert_with_mlm_head)
    texts = ["the quick brown fox jumps over the lazy dog", "at least 89 dead in china earthquakes",
             "there are two options for you", "work with a tool"]
    batch = method.collate(cfg, tok, texts, np.random.default_rng(0))
    out = PaSeRModule(cfg)(batch)
    assert torch.isfinite(out["loss"]) and out["generative"] > 0 and out["mlm"] >= 0
