"""The data and evaluation side of a setting (issue 38): which data a result was evaluated on, in which split, with
which checkpoint-selection data and training data, and how an untrained model was scored, each against the
published row's, by content.

The published side's data are the releases' identities as the *package* records them
(:mod:`usebench.data.releases`: pinned in ``usebench/data/releases.json``, or recorded by a ``bench data`` download
verified against checksums the package pins), never hashed from whatever a data root holds when a report is built:
a fixture root, a CI subset, a trimmed or corrupted copy would otherwise be "the release". A result records what it
read (``task.data_sha256``, its corpus' text sha256, its dev data's sha256), and pairs only when that equals the
release's identity.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from usebench.data.releases import Identity, evaluation_identity, training_identity

DEFAULT_SPLIT = "test"  # a published table's split unless it says otherwise (paper_reference.json "split")


def short(sha: str | None) -> str:
    return sha[:12] + "…" if sha else "not recorded"


# --- what a result was evaluated on -------------------------------------------------------------------------

def read_what(task: Mapping[str, Any]) -> str:
    """What a result's evaluation read, in words: the release's counts or the data root's own declared ones."""
    release = task.get("release") or {}
    basis = str(release.get("basis") or "published")
    n = task.get("n_queries")
    items = f"{n:,} items" if isinstance(n, int) else "items not recorded"
    if task.get("partial"):
        return f"--allow-partial, {items}"
    return items if basis == "published" else f"{_basis_name(basis)}, {items}"


def _basis_name(basis: str) -> str:
    """A declared basis, "usebench-counts.json (<release>: <what it is>)", by its release's own name."""
    return basis.replace("usebench-counts.json ", "").strip("()").split(":")[0] or basis


def not_a_release(record: Mapping[str, Any], data_root: Path | None) -> str | None:
    """Why a result's evaluation data is not its task's release (None: it is, or nothing here says otherwise):
    ``--allow-partial``, a data root that declares its own counts (the test fixtures, a subset), or data whose
    sha256 is not the release's pinned or verified identity."""
    task = record["task"]
    basis = str((task.get("release") or {}).get("basis") or "published")
    if task.get("partial"):
        return "evaluated with --allow-partial"
    if basis != "published":  # a data root that declares its own counts: the fixtures, a subset
        return _basis_name(basis)
    ident = evaluation_identity(str(task["name"]), str(task.get("split", DEFAULT_SPLIT)), data_root)
    if ident.sha256 is not None and not ident.accepts(task.get("data_sha256")):
        return f"not the release's data (sha256 {short(task.get('data_sha256'))})"
    return None


@lru_cache(maxsize=1)
def task_version_pins() -> dict[str, str]:
    """paper_reference.json's ``task_versions`` (read here, not through usebench.report.reference, which imports this
    module)."""
    text = resources.files("usebench.report").joinpath("paper_reference.json").read_text(encoding="utf-8")
    return dict(json.loads(text).get("task_versions", {}))


def version_gaps(task: str, version: str) -> list[str]:
    """A result of another task version than the one the published numbers were pinned with (paper_reference.json's
    ``task_versions``) never stands beside them."""
    pinned = task_version_pins().get(task)
    if pinned is None or pinned == version:
        return []
    return [f"task version: ours {version}, the published numbers' pin {pinned} (score it again under version "
            f"{pinned}'s protocol, or check the papers' numbers against version {version} and move the pin)"]


def evaluation_gaps(record: Mapping[str, Any], split: str, data_root: Path | None) -> tuple[list[str], list[str]]:
    """(gaps, notes) of a result's split and evaluation data against the published table's split and release."""
    task = record["task"]
    name, ours_split = str(task["name"]), str(task.get("split", DEFAULT_SPLIT))
    gaps = [] if ours_split == split else [f"split: ours {ours_split}, paper {split}"]
    gaps += version_gaps(name, str(task.get("version", "1")))
    gaps += limit_gaps(task)
    if task.get("partial"):
        return gaps + ["evaluation data: ours --allow-partial (not the release), paper the release"], []
    ident = evaluation_identity(name, ours_split, data_root)
    ours, what = task.get("data_sha256"), read_what(task)
    if ident.sha256 is None:
        return gaps + [f"evaluation data: ours {short(ours)} ({what}), paper {name} ({ours_split}) as released, "
                       f"whose identity is not known here: {ident.why}"], []
    if not ident.accepts(ours):
        return gaps + [f"evaluation data: ours {short(ours)} ({what}), paper {name} ({ours_split}) as released "
                       f"{short(ident.sha256)} ({ident.how})"], []
    notes = [f"{name} ({ours_split}) evaluated on {ident.also[ours]}"] if ours in ident.also else []
    return gaps, notes


def limit_gaps(task: Mapping[str, Any]) -> list[str]:
    """A quick evaluation's result (`--limit`) is scored on a subsample of the test items: never the published
    number's test set, whatever else it shares with it."""
    from usebench.store.validity import limit_text

    limit = task.get("limit")
    if not limit:
        return []
    n, of = (f"{v:,}" if isinstance(v, int) else "?" for v in (limit.get("items"), limit.get("of")))
    return [f"evaluation items: ours {limit_text(limit)}, {n} of {of} items, paper every test item (a quick "
            "evaluation is never compared with a published number)"]


# --- what a stage trained on ------------------------------------------------------------------------------------

def data_spec_text(spec: Any) -> str:
    """A published row's training data, as words."""
    if isinstance(spec, Mapping):
        if "source" in spec:
            return f"the release {spec['source']} (usebench/data/sources.json)"
        if "unpublished" in spec:
            name = spec["unpublished"]
            return f"{spec.get('what', name)} (never published: --user-sample {name}=SHA256)"
    return {"in-domain": "the evaluated task's own training data (its release)", "none": "none (no training)"}.get(
        str(spec), str(spec))


def expected_corpus(spec: Any, task: str, data_root: Path | None,
                    user_samples: Mapping[str, str]) -> tuple[str | None, str]:
    """(the text sha256 a sentence stage's corpus must have, how it is known, or why it is not) for a published
    row's ``train_data``: ``in-domain`` = the task's own release, ``{"source": "dataset/component"}`` = that
    sources.json release, both as :mod:`usebench.data.releases` knows them; ``{"unpublished": NAME}`` = the user's
    sample named on the command line."""
    if spec == "in-domain" or (isinstance(spec, Mapping) and "source" in spec):
        ident: Identity = training_identity(task if spec == "in-domain" else str(spec["source"]), data_root)
        return (ident.sha256, ident.how) if ident.sha256 else (None, ident.why)
    if isinstance(spec, Mapping) and "unpublished" in spec:
        name = spec["unpublished"]
        sha = user_samples.get(name)
        return (sha, "user's sample") if sha else (None, f"pass --user-sample {name}=SHA256 if yours is a sample of it")
    return None, "not reproducible here"


def corpus_gaps(stage_data: Mapping[str, Any], spec: Any, task: str, data_root: Path | None,
                user_samples: Mapping[str, str], prefix: str) -> tuple[list[str], list[str]]:
    """(gaps, notes) of a sentence stage's corpus against the published row's data."""
    ours = stage_data.get("sha256")
    label = f"{stage_data.get('label', '?')}, {stage_data.get('sentences', '?')} sentences"
    want, how = expected_corpus(spec, task, data_root, user_samples)
    if want is None:
        return [f"{prefix}training data: ours {short(ours)} ({label}), paper {data_spec_text(spec)}, whose sha256 is "
                f"not known here ({how})"], []
    if ours != want:
        what = "" if how == "user's sample" else f"{data_spec_text(spec)}, "
        return [f"{prefix}training data: ours {short(ours)} ({label}), paper {short(want)} ({what}{how})"], []
    return [], (["training data: the user's sample"] if how == "user's sample" else [])


def labeled_gaps(stage_data: Mapping[str, Any], method: str, task: str, prefix: str) -> list[str]:
    """A labeled stage's data: usebench/data/releases.json pins no identity of labeled release data (AllNLI, STSb
    train and USEB's supervised pairs were not at hand, and which examples a stage draws depends on its config and
    seed), and a data root's files are never taken for the release, so such a stage pairs with nothing yet."""
    return [f"{prefix}training data: ours {short(stage_data.get('sha256'))} ({stage_data.get('label', '?')}), paper "
            f"{method}'s labeled release data for {task}, whose identity usebench/data/releases.json does not pin "
            "(labeled data is never taken from a data root's files)"]


# --- what selected the checkpoint ----------------------------------------------------------------------------------

def dev_gaps(recorded: Mapping[str, Any] | None, dev_task: str, prefix: str,
             data_root: Path | None) -> list[str]:
    """A stage whose checkpoint was picked on ``dev_task``'s dev split (``"stsb,sickr"``: each): the dev data it
    read (``method.dev_data`` of the result, each task's sha256s seen while training) against the release's."""
    from usebench.train.config import dev_tasks

    gaps = []
    for name in dev_tasks(dev_task):
        ident = evaluation_identity(name, "dev", data_root)
        seen = list((recorded or {}).get(name) or [])
        if ident.sha256 is None:
            gaps.append(f"{prefix}checkpoint selection: ours {name} dev {_seen(seen)}, paper {name} dev as released, "
                        f"whose identity is not known here: {ident.why}")
        elif len(seen) != 1 or not ident.accepts(seen[0]):
            gaps.append(f"{prefix}checkpoint selection: ours {name} dev {_seen(seen)}, paper {name} dev as released "
                        f"{short(ident.sha256)} ({ident.how})")
    return gaps


def _seen(seen: list[str]) -> str:
    if not seen:
        return "not recorded (a result written before the dev data was recorded)"
    return " then ".join(short(s) for s in seen)


# --- how an untrained model was scored ------------------------------------------------------------------------------

def untrained_setting(record: Mapping[str, Any]) -> dict[str, Any]:
    """An untrained result's scoring keys: pooling, max length, precision, similarity (the normalisation before the
    dot product) and prompt, as its record holds them."""
    scorer = record.get("scorer") or {}
    config = record.get("config") or {}
    method = record.get("method") or {}
    return {"pooling": method.get("pooling") or scorer.get("pooling"),
            "max_length": method.get("max_length") or scorer.get("max_length"),
            "precision": config.get("precision") or scorer.get("precision") or "not recorded",
            "similarity": scorer.get("similarity") or "not recorded", "prompt": scorer.get("prompt")}


def published_untrained(settings: Mapping[str, Any], positions: int | None) -> dict[str, Any]:
    """A published untrained row's scoring keys: its pooling (``settings.pooling``, from the row's match), the
    backbone's whole length (``positions``: the papers' code truncates at the model's limit), fp32, cosine, no
    prompt; ``settings.config`` overrides any of them."""
    want: dict[str, Any] = {"precision": settings.get("precision") or "fp32", "similarity": "cosine", "prompt": None}
    if positions:
        want["max_length"] = positions
    if settings.get("pooling"):
        want["pooling"] = settings["pooling"]
    return {**want, **(settings.get("config") or {})}
