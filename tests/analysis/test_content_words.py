"""The relevant-content-words analysis (TSDAE paper §7.2): the argmax formula on a hand-computable encoder, the
relevant pairs of TwitterPara's fixture, and the averaged distribution. Needs the `pos` extra (textblob)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("textblob")

from usebench.analysis import content_words as cw  # noqa: E402

ASSETS = Path(__file__).resolve().parents[1] / "assets"
VEC = {"apple": [1.0, 0.0, 0.0], "pie": [0.0, 1.0, 0.0], "tart": [0.0, 0.0, 1.0], "red": [0.0, 0.2, 0.2]}


class BagOfWords:
    """Sum of fixed word vectors: cosines a person can work out."""

    def encode(self, texts):
        return np.array([np.sum([VEC[w] for w in t.split()] or [[0.0, 0.0, 0.0]], axis=0) for t in texts])


def test_most_relevant_word_is_the_argmax_of_the_cosine_drop():
    # a = red apple pie = (1, 1.2, 0.2); b = apple tart = (1, 0, 1); cos(a, b) = 1.2 / (sqrt(2.48) sqrt(2)) = 0.5388
    # without apple: a\w = (0, 1.2, .2): cos = .2/(1.2166*1.4142) = .1162; b\w = tart: cos = .2/1.5748 = .1270
    #   -> drop = .5388 - .1162 = .4226 (the largest); without pie: a\w = (1, .2, .2), cos = 1.2/(1.0392*1.4142)
    #   = .8165 > .5388, a negative drop; without red/tart the drops are smaller (tart: b = apple, cos = .6350).
    a, b = "red apple pie", "apple tart"
    out = cw.analyse_task("toy", [(a, b)], BagOfWords())
    (r,) = out.pairs
    assert r.word == "apple" and r.group == "NN" and r.drop == pytest.approx(0.4226, abs=1e-4)
    assert out.shares["NN"] == 100.0 and sum(out.shares.values()) == pytest.approx(100.0)
    # prior over the 5 words of the two sentences (red JJ, apple NN, pie NN, apple NN, tart NN... as tagged)
    assert sum(out.prior.values()) == pytest.approx(100.0)


def test_twitterpara_relevant_pairs_are_its_positive_pairs():
    from usebench.tasks.twitterpara import TwitterPara

    data = TwitterPara().load("test", ASSETS)
    pairs = cw.relevant_pairs("twitterpara", data)
    # Independent count from the raw fixture files: URL lines with (n,6), n > 3; PIT labels "true".
    url = [ln.split("\t") for ln in (ASSETS / "useb/data-eval/twitterpara/Twitter_URL_Corpus_test.txt")
           .read_text(encoding="utf-8").splitlines() if ln.strip()]
    n_url = sum(int(f[2].strip("()").split(",")[0]) > 3 for f in url)
    n_pit = sum(ln.startswith("true") for ln in (ASSETS / "useb/data-eval/twitterpara/test.label")
                .read_text(encoding="utf-8").splitlines())
    assert len(pairs) == n_url + n_pit > 0


def test_average_weighs_each_task_equally_and_unknown_tasks_are_refused():
    from usebench.errors import ConfigError

    d1 = cw.TaskDistribution("x", shares={g: (100.0 if g == "NN" else 0.0) for g in cw.GROUPS})
    d2 = cw.TaskDistribution("y", shares={g: (100.0 if g == "JJ" else 0.0) for g in cw.GROUPS})
    avg = cw.averaged([d1, d2])
    assert avg["NN"] == avg["JJ"] == 50.0
    with pytest.raises(ConfigError, match="no relevant-pair reader"):
        cw.relevant_pairs("sts12", None)


def test_cqadupstack_relevant_pairs_are_each_query_with_its_duplicates_in_the_pool():
    from usebench.tasks.cqadupstack import CQADupStack

    data = CQADupStack().load("test", ASSETS)
    title = {i: t for forum in data for i, t in zip(forum.query_ids + forum.doc_ids, forum.query_texts + forum.doc_texts)}
    # the fixture's test split: android a1->a3, a2->a4,a7; gaming g1->g2,g4, g4->g1, g5 none. A split's pool leaves
    # out its own queries, so g1<->g4 (both queries) pair with nothing there
    want = [("a1", "a3"), ("a2", "a4"), ("a2", "a7"), ("g1", "g2")]
    assert cw.relevant_pairs("cqadupstack", data) == [(title[q], title[d]) for q, d in want]


def test_the_page_shows_figure_4_as_printed_with_the_prior_rows_misprint_said():
    """Figure 4's Prior row sums to 130% as printed (NN 68.8; 38.8 would make it 100): typed in as printed, and
    the page says so under the paper's rows rather than presenting it as a distribution."""
    from usebench.cli.analyze import markdown

    d = cw.TaskDistribution("twitterpara", shares={g: (100.0 if g == "NN" else 0.0) for g in cw.GROUPS})
    page = markdown("m", [d], d.shares, d.shares, cw.GROUPS)
    prior = next(ln for ln in page.splitlines() if ln.startswith("| paper: Prior |"))
    assert round(sum(float(c) for c in prior.strip("|").split("|")[1:]), 1) == 130.0
    assert "paper: Prior: as printed, this row sums to 130.0%" in page and "NN 38.8" in page
