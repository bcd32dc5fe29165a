"""The supervised stages' ``training_data``: every source on the fixture data root, the labeled-size subsets
and the errors that name what to change."""
from __future__ import annotations

from pathlib import Path

import pytest

from usebench import methods  # noqa: F401
from usebench.errors import ConfigError, MissingDataError
from usebench.registry import METHODS
from usebench.methods.parts.labeled_data import load_labeled

ROOT = Path(__file__).resolve().parents[1] / "assets" / "labeled_root"


def _data(name, task="twitterpara", seed=0, root=ROOT, **cfg):
    method = METHODS.get(name)
    return method.training_data(method.config("smoke", **cfg), task, root, seed)


def test_target_sources_per_task_and_kind():
    ask = _data("sbert-mnrl", "askubuntu")
    assert ask.label == "askubuntu:supervised" and len(ask.examples) == 6
    assert ask.examples[0] == ("how do i install java on ubuntu 12.04", "installing oracle java on 12.04")
    assert ask.files[0].endswith("useb/data-train/askubuntu/supervised/train.org")
    tw = _data("sbert-cosine", "twitterpara")
    assert tw.label == "twitterpara:supervised" and len(tw.examples) == 5 and tw.examples[1][2] == 0.0
    assert len(_data("sbert-mnrl", "twitterpara").examples) == 4  # train.org / train.para
    sts = _data("sbert-cosine", "stsb")
    assert sts.label == "stsb:train" and sts.examples[0][2] == 1.0


def test_named_sources():
    url = _data("sbert-cosine", train_data="twitter-url")
    assert url.label == "twitter-url" and [e[2] for e in url.examples] == [1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
    positives = _data("sbert-mnrl", train_data="twitter-url")
    assert len(positives.examples) == 3 and all(len(e) == 2 for e in positives.examples)
    nli = _data("sbert-nli", task=None)
    assert nli.label == "allnli" and len(nli.examples) == 4 and all(len(e) == 3 for e in nli.examples)
    pairs = _data("sbert-nli", task=None, hard_negatives=False)
    assert len(pairs.examples) == 3 and pairs.sha256 != nli.sha256
    assert _data("sbert-stsb", task=None).label == "stsb:train"
    folder = ROOT / "useb" / "data-train" / "twitter" / "supervised"
    assert _data("sbert-cosine", task=None, train_data=str(folder)).examples == _data("sbert-cosine").examples


def test_labeled_size_subsets_share_the_source_hash_across_seeds():
    full = _data("sbert-cosine", train_data="twitter-url")
    a, b = (_data("sbert-cosine", train_data="twitter-url", labeled_size=n, seed=1) for n in (2, 4))
    assert set(a.examples) <= set(b.examples) < set(full.examples)
    assert a.label == "twitter-url[2]"
    other_seed = _data("sbert-cosine", train_data="twitter-url", labeled_size=2, seed=2)
    assert other_seed.sha256 == a.sha256 != b.sha256  # the seed picks the subset; the config hash keeps it out
    with pytest.raises(ConfigError, match=r"--labeled-sizes 7: the twitter-url training set has only 6 labeled"):
        _data("sbert-cosine", train_data="twitter-url", labeled_size=7)


def test_errors_name_what_to_change(tmp_path):
    with pytest.raises(ConfigError, match="needs a target task"):
        _data("sbert-cosine", task=None)
    with pytest.raises(ConfigError, match="use sbert-mnrl|train it with sbert-mnrl"):
        _data("sbert-cosine", "askubuntu")
    with pytest.raises(ConfigError, match="train it with sbert-cosine"):
        _data("sbert-mnrl", "stsb")
    with pytest.raises(ConfigError, match="no labeled training set"):
        _data("sbert-mnrl", "sts12")
    with pytest.raises(MissingDataError, match="bench data download nli"):
        load_labeled("allnli", None, tmp_path, "pairs")
    with pytest.raises(MissingDataError, match="bench data download useb"):
        _data("sbert-mnrl", "cqadupstack")
    with pytest.raises(ConfigError, match="neither a source"):
        _data("sbert-cosine", train_data="twiter-url")


@pytest.mark.slow
def test_real_twitter_url_subset(real_data):
    data = _data("sbert-cosine", train_data="twitter-url", labeled_size=500, root=real_data)
    assert len(data.examples) == 500 and data.label == "twitter-url[500]"
    assert len(_data("sbert-cosine", "stsb", root=real_data).examples) == 5749
