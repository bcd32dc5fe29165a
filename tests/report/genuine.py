"""Records of genuine published settings for the pairing tests: a stage config resolved from the method's own
preset (as `bench run --preset P` resolves it), the published backbone's fingerprint, and training and evaluation
data whose sha256 is the release's. The package pins the real releases' identities (usebench/data/releases.json);
:func:`pin_releases` pins a small data root's files in their place, so that the machinery can be tested on a few
lines. Each test then changes one thing and expects no pair."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench import tasks  # noqa: F401  (enrols the adapters)
from usebench.eval.models import FINGERPRINT_VERSION
from usebench.registry import METHODS
from usebench.report.pairing import published_backbones
from usebench.plan.corpus import load_corpus
from usebench.train.config import config_to_dict
from usebench.store import make_record, run_id, save_result
from tests.report.synthetic_results import task_version

# bert-base-uncased as the hub publishes it: its config's fingerprint, its safetensors file's LFS sha256 and its
# tokenizer's identity.
BERT = {"model": "bert-base-uncased", "fingerprint_version": FINGERPRINT_VERSION,
        "config_sha256": published_backbones()["bert-base-uncased"]["config_sha256"],
        "weights_sha256": {"model.safetensors": "68d45e234eb4a928074dfd868cead0219ab85354cc53d20e772753c6bb9169d3"},
        "tokenizer": dict(published_backbones()["bert-base-uncased"]["tokenizer"])}
ASKUBUNTU_TRAIN = "useb/data-train/askubuntu/unsupervised/train.txt"
# How `bench eval` scores an untrained backbone as the papers did (DenseScorer.describe): its whole length, fp32,
# cosine, no prompt; a record of a published untrained row's setting carries these.
UNTRAINED_SCORING = {"method": {"max_length": 512}, "config": {"precision": "fp32"},
                     "scorer": {"kind": "dense", "similarity": "cosine", "prompt": None, "precision": "fp32"}}


def data_root(root: Path) -> Path:
    """A data root holding AskUbuntu's unlabeled training sentences and DenoSent's released pairs (tiny)."""
    (root / ASKUBUNTU_TRAIN).parent.mkdir(parents=True, exist_ok=True)
    (root / ASKUBUNTU_TRAIN).write_text("how do i install ubuntu\nwifi does not work\nhow do i install ubuntu\n")
    (root / "denosent").mkdir(parents=True, exist_ok=True)
    (root / "denosent/paraphrases.tsv").write_text("a cat sat .\tthe cat sat .\nit rains .\tit is raining .\n")
    return root


# The dev split selecting SimCSE's, DenoSent's and PaSeR's checkpoints, and the evaluated tasks of the tests, as
# pinned by pin_releases (a record's task.data_sha256 is f"sha-{task}", as add_trained writes it).
EVAL_TASKS = ("askubuntu", "cqadupstack", "twitterpara", "scidocs", "quora", "sts12", "sts13", "sts14", "sts15",
              "sts16", "stsb", "sickr")


def dev_sha(task: str) -> str:
    return f"sha-{task}-dev"


REAL_RELEASES = None  # the package's own load_releases, kept before any test pins others (tests/report/conftest.py)


def _pinned(evaluation: dict, training: dict):
    from usebench.data import releases

    return lambda path=None: releases.Releases(evaluation, training)


def pin_synthetic_evaluation(monkeypatch) -> None:
    """Pin the synthetic records' evaluation data (``task.data_sha256 = f"sha-{task}"``, dev ``sha-{task}-dev``) as
    the releases of :data:`EVAL_TASKS`: the report tests' stores stand for results on the releases."""
    from usebench.data import releases

    real = (REAL_RELEASES or releases.load_releases)()
    evaluation = {t: dict(splits) for t, splits in real.evaluation.items()}
    for task in EVAL_TASKS:
        evaluation[task] = {"test": {"sha256": f"sha-{task}"}, "dev": {"sha256": dev_sha(task)}}
    monkeypatch.setattr(releases, "load_releases", _pinned(evaluation, dict(real.training)))


def pin_releases(monkeypatch, root: Path) -> None:
    """:func:`pin_synthetic_evaluation`, and ``root``'s training sentences (AskUbuntu's, DenoSent's pairs) pinned as
    the training releases, in place of the package's pins: what the machinery is tested on."""
    from usebench.data import releases

    pin_synthetic_evaluation(monkeypatch)
    pinned = releases.load_releases()
    training = {**pinned.training, "askubuntu": {"sha256": corpus_entry(root, "askubuntu")["sha256"]},
                "denosent/denosent-pairs": {"sha256": corpus_entry(root, file=root / "denosent/paraphrases.tsv")[
                    "sha256"]}}
    monkeypatch.setattr(releases, "load_releases", _pinned(pinned.evaluation, training))


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
            "train_corpus": corpus["label"], "backbone": backbone, "dev_data": [dev_data(config)]}
    record = make_record(run=rid, task={"name": task, "split": "test", "group": "g", "version": task_version(task),
                                        "data_sha256": f"sha-{task}", "n_queries": 10},
                         method=meta, seed=seed, scores=scores, main_metric=main or next(iter(scores)), subsets={},
                         scorer={"kind": "dense"}, timings={}, config=unit)
    return save_result(store, record)


def dev_data(config: dict[str, Any]) -> dict[str, list[str]] | None:
    """What `bench run` records of a stage's checkpoint selection: the pinned dev split of each dev task."""
    from usebench.train.config import dev_tasks

    if not config.get("dev_every") or not config.get("dev_task") or config.get("dev_task") == "target":
        return None
    return {t: [dev_sha(t)] for t in dev_tasks(str(config["dev_task"]))}
