"""The App. A search: its steps in the paper's order, the paper's or the stored winners, and the allnli corpus."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from usebench.errors import BenchError
from usebench.reproduce import config_search as cs

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def test_paper_order_and_winners():
    trained = []
    cs.search(["noise", "ratio", "pooling", "tying"], "paper", lambda step, settings: trained.append(settings),
              Path("/nonexistent"), {})
    noise, ratio, pooling, tying = trained
    assert [s["noise"] for s in noise] == ["delete", "swap", "mask", "replace", "add"]
    assert {(s["noise_ratio"], s["pooling"], s["tie_encoder_decoder"]) for s in noise} == {(0.3, "cls", False)}
    assert [s["noise_ratio"] for s in ratio] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert {(s["noise"], s["pooling"]) for s in ratio} == {("delete", "cls")}
    assert [(s["pooling"], s["noise_ratio"]) for s in pooling] == [("cls", 0.6), ("mean", 0.6), ("max", 0.6)]
    assert [(s["tie_encoder_decoder"], s["pooling"]) for s in tying] == [(False, "cls"), (True, "cls")]
    assert cs.overrides(tying[1])[-1] == "tsdae.tie_encoder_decoder=true"


def _store(root: Path, noise: str, score: float) -> None:
    cfg = {"model": "m", "max_steps": 10, "dev_task": "stsb", "dev_every": 5, "noise": noise, "noise_ratio": 0.3,
           "pooling": "cls", "tie_encoder_decoder": False}
    record = {"schema_version": 1, "seed": 0, "method": {"name": "tsdae"}, "main_score": score,
              "task": {"name": "stsb", "split": "dev"}, "scores": {"spearman": score},
              "config": {"method": "tsdae", "config": cfg, "corpus": {"label": "allnli"}}}
    out = root / f"tsdae__{noise}" / "stsb" / "dev.json"
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps(record))


def test_greedy_takes_the_best_stored_noise_for_the_next_step(tmp_path):
    _store(tmp_path, "delete", 0.70)
    _store(tmp_path, "swap", 0.75)
    trained = []
    run = {"model": "m", "max_steps": 10, "corpus": "allnli"}
    cs.search(["noise", "ratio"], "greedy", lambda step, s: trained.append(s), tmp_path, run)
    assert {s["noise"] for s in trained[1]} == {"swap"}  # the ratio step searches the stored winner's ratio
    with pytest.raises(BenchError, match="no stored App. A results"):
        cs.search(["noise", "ratio"], "greedy", lambda step, s: None, tmp_path, {**run, "max_steps": 99})


def test_allnli_corpus_is_the_nli_sentences_without_labels():
    from usebench.data.labeled import read_allnli
    from usebench.plan.corpus import load_corpus

    root = ASSETS / "labeled_root"
    corpus = load_corpus("stsb", ["allnli"], None, root)
    rows = read_allnli(root / "nli" / "AllNLI.tsv")
    assert corpus.label == "allnli" and corpus.files == (str(root / "nli" / "AllNLI.tsv"),)
    assert set(corpus.examples) == {s for r in rows for s in r[:2]}
    assert len(corpus.examples) == len(set(corpus.examples))
