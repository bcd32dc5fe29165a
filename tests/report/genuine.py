"""Records of genuine published settings for the pairing tests: a stage config resolved from the method's own
preset (as `bench run --preset P` resolves it), the published backbone's fingerprint, and training data whose
sha256 is the one the release in a small data root has. Each test then changes one thing and expects no pair."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.registry import METHODS
from usebench.report.pairing import published_backbones
from usebench.run.corpus import load_corpus
from usebench.train.config import config_to_dict
from usebench.store import make_record, run_id, save_result

# bert-base-uncased as the hub publishes it: its config's fingerprint and its safetensors file's LFS sha256.
BERT = {"model": "bert-base-uncased", "config_sha256": published_backbones()["bert-base-uncased"]["config_sha256"],
        "weights_sha256": {"model.safetensors": "68d45e234eb4a928074dfd868cead0219ab85354cc53d20e772753c6bb9169d3"}}
ASKUBUNTU_TRAIN = "useb/data-train/askubuntu/unsupervised/train.txt"


def data_root(root: Path) -> Path:
    """A data root holding AskUbuntu's unlabeled training sentences and DenoSent's released pairs (tiny)."""
    (root / ASKUBUNTU_TRAIN).parent.mkdir(parents=True, exist_ok=True)
    (root / ASKUBUNTU_TRAIN).write_text("how do i install ubuntu\nwifi does not work\nhow do i install ubuntu\n")
    (root / "denosent").mkdir(parents=True, exist_ok=True)
    (root / "denosent/paraphrases.tsv").write_text("a cat sat .\tthe cat sat .\nit rains .\tit is raining .\n")
    return root


def corpus_entry(root: Path, task: str | None = None, file: Path | None = None, size: int | None = None) -> dict:
    """The corpus entry `bench run` records for this corpus (label, text sha256, sentences)."""
    c = load_corpus(task, [str(file)] if file else [], size, root)
    return {"label": c.label, "sha256": c.sha256, "sentences": len(c.examples),
            "duplicates_dropped": c.duplicates_dropped}


def stage_config(method: str, preset: str = "paper", **values: Any) -> dict[str, Any]:
    """A stage's config as the planner records it: the method's preset with ``values`` applied."""
    return config_to_dict(METHODS.get(method).config(preset, values))


def add_trained(store: Path, method: str, seed: int, task: str, scores: dict, *, config: dict[str, Any],
                corpus: dict[str, Any], preset: str = "paper", backbone: dict | None = BERT, pooling: str = "cls",
                main: str | None = None) -> Path:
    """One result of a single-method unit with this resolved config, corpus and backbone (the record schema
    `bench run` writes: usebench/run/unit.py)."""
    unit = {"method": method, "preset": preset, "config": config, "corpus": corpus}
    rid = run_id(method, "bert-base-uncased", unit, seed)
    meta = {"name": method, "base_model": config["model"], "pooling": pooling, "max_length": 128, "preset": preset,
            "train_corpus": corpus["label"], "backbone": backbone}
    record = make_record(run=rid, task={"name": task, "split": "test", "group": "g", "version": 1,
                                        "data_sha256": f"sha-{task}", "n_queries": 10},
                         method=meta, seed=seed, scores=scores, main_metric=main or next(iter(scores)), subsets={},
                         scorer={"kind": "dense"}, timings={}, config=unit)
    return save_result(store, record)
