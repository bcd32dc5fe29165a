"""Whether a result of ours and a published row are the same setting, decided by content (DESIGN.md, "Names are
promises"): a published number stands beside ours only when every key that can change the score is equal.

A **run's setting** is read from its stored record: every stage's fully resolved config (``record["config"]``:
``{method, preset, config, corpus}`` for a single method, ``{method, chain, stages: [{method, preset, config,
data}]}`` for a chain; :func:`usebench.plan.planner.unit_config`), the backbone's fingerprint
(``record["method"]["backbone"]``: :func:`usebench.eval.models.backbone_fingerprint`), each stage's training
data sha256 (the text sha256 of the de-duplicated sentences, :func:`usebench.plan.corpus.text_sha256`, or the
labeled examples' hash) and its precision (``amp``, a config key like any other).

A **published row's setting** is derived, never hand-listed: the resolved preset of its method (or of each stage
of its chain) with the values the row's table varies applied (``settings.config`` in ``paper_reference.json``,
through the method's own config dataclass), the published backbone's fingerprint
(``published_backbones.json``) and the release its data comes from (``settings.train_data``: the release's
identity as the package pins it, :func:`usebench.report.pairing_data.expected_corpus`).

Keys the planner derives per task are normalised on both sides, so that a genuine ``--preset paper`` run on the
right backbone and data pairs: ``model`` (the first stage's backbone is compared by fingerprint; a later stage
starts from the previous one, ``stage:k``), ``dev_task="target"`` (the unit's own task, or none where it has no
dev split), a supervised stage's pooling (inherited from where it starts), and paths (``train_data``,
``dev_corpus``: compared by the sha256 of their content). Keys that cannot change a score are in
:data:`NO_SCORE_KEYS`.

The evaluation side is compared too (issue 38, :mod:`usebench.report.pairing_data`): the split, the evaluation data
(``task.data_sha256`` against the release's identity the package pins or a verified download recorded, never the
data root's files), the dev data that selected a checkpoint, the tokenizer (part of the backbone's fingerprint), and
every scoring key of an untrained row (pooling, max length, precision, similarity, prompt). The seeds are no gap: a
published number is a mean over its seeds, ours over ours, and the report shows "n of N seeds" beside each Δ.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from usebench.errors import BenchError
from usebench.train.config import without_neutral_later_keys
from usebench.report.pairing_data import (DEFAULT_SPLIT, corpus_gaps, dev_gaps, evaluation_gaps, labeled_gaps,
                                          published_untrained, untrained_setting)

# Config keys that cannot change a score: how often the loss is logged and a resumable state is saved.
# (Evaluation-time settings of `bench run` such as --batch-size, --device or --show-progress are not in the
# stage config at all.) Every other key of a method's config is compared.
NO_SCORE_KEYS = frozenset({
    "log_every",  # steps per log.jsonl line
    "save_every",  # steps per resumable train-state checkpoint
})
# Keys whose value is a name or path: compared through the content they name (the stage's data sha256), not
# as text, on both sides.
CONTENT_KEYS = frozenset({"train_data", "dev_corpus"})
TARGET = "target"  # a preset's dev_task meaning "the unit's own task" (usebench.plan.planner.TARGET)


@dataclass(frozen=True)
class PairingContext:
    """What decides a published row's data besides the row itself: the data root, read only for the release
    identities ``bench data`` recorded there after verifying a download against pinned checksums (its files are
    never hashed to decide what the paper used: :mod:`usebench.data.releases`), and the user's own samples of
    unpublished corpora (``bench report --user-sample NAME=SHA256``)."""

    data_root: Path | None = None
    user_samples: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """One record against one published row: ``gaps`` (each "key: ours X, paper Y"; empty = the same setting)
    and ``notes`` (what the pair should say, e.g. "user's sample")."""

    gaps: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def paired(self) -> bool:
        return not self.gaps


# --- backbones -------------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def published_backbones() -> dict[str, dict[str, Any]]:
    """``published_backbones.json``'s backbones, each with its ``config_sha256`` computed here (None: unknown)."""
    from usebench.eval.models import architecture_sha256

    text = resources.files("usebench.report").joinpath("published_backbones.json").read_text(encoding="utf-8")
    out = {}
    for name, entry in json.loads(text)["backbones"].items():
        cfg = entry.get("config")
        out[name] = {**entry, "config_sha256": architecture_sha256(cfg) if cfg else None}
    return out


def _short(sha: str | None) -> str:
    return sha[:12] + "…" if sha else "not recorded"


def backbone_gaps(ours: Mapping[str, Any] | None, published: str) -> tuple[list[str], list[str]]:
    """(gaps, notes) of a run's recorded backbone fingerprint (config, weights, tokenizer) against a published
    backbone's."""
    from usebench.eval.models import FINGERPRINT_VERSION
    from usebench.eval.tokenizer_identity import identity_gaps

    ref = published_backbones().get(published)
    if ref is None or not ref.get("config_sha256"):
        mine = f"config {_short(ours.get('config_sha256'))}" if ours and ours.get("config_sha256") else "not recorded"
        return [f"backbone: ours {(ours or {}).get('model', '?')} ({mine}) is not shown to be {published}: this "
                f"suite records no fingerprint of {published} (usebench/report/published_backbones.json), so no run "
                "pairs with this row"], []
    if not ours or not ours.get("config_sha256"):
        return [f"backbone: ours has no fingerprint recorded (a result written before fingerprints, or a model not "
                f"on this machine), paper {published} config {_short(ref['config_sha256'])}"], []
    if ours.get("fingerprint_version") != FINGERPRINT_VERSION:
        return [f"backbone: ours was fingerprinted by an older usebench (no tokenizer; configs without their "
                f"defaults), paper {published}: evaluate or train again to record it"], []
    if ours["config_sha256"] != ref["config_sha256"]:
        return [f"backbone config: ours {_short(ours['config_sha256'])}, paper {published} "
                f"{_short(ref['config_sha256'])}"], []
    gaps = identity_gaps(ours.get("tokenizer"), ref["tokenizer"], published) if ref.get("tokenizer") else [
        f"tokenizer: no identity of {published}'s tokenizer is recorded here"]
    weights = dict(ours.get("weights_sha256") or {})
    if not weights:
        return gaps + [f"backbone weights: ours not recorded, paper {published}"], []
    if ref.get("weights_sha256") is None:  # the config matches; the published weights are not known here
        return gaps, [f"{published} weights unverified (no published checksum recorded here)"]
    if not set(weights.values()) <= set(ref["weights_sha256"].values()):
        shown = ", ".join(f"{f} {_short(s)}" for f, s in sorted(weights.items()))
        want = ", ".join(f"{f} {_short(s)}" for f, s in sorted(ref["weights_sha256"].items()))
        return gaps + [f"backbone weights: ours {shown}, paper {published} {want}"], []
    return gaps, []


def published_positions(published: str) -> int | None:
    """The published backbone's position limit (the longest input its scoring keeps), None when not recorded."""
    config = (published_backbones().get(published) or {}).get("config") or {}
    value = config.get("max_position_embeddings")
    return value if isinstance(value, int) else None


# --- a run's stages ----------------------------------------------------------------------------------------------

def record_stages(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The trained stages of a result: ``[{method, preset, config, data}]`` (one for a single method)."""
    config = record.get("config") or {}
    if isinstance(config.get("stages"), list):
        return [dict(s) for s in config["stages"] if isinstance(s, dict)]
    if isinstance(config.get("config"), dict):
        data = {"kind": "corpus", **(config.get("corpus") or {})}
        return [{"method": config.get("method"), "preset": config.get("preset"), "config": config["config"],
                 "data": data}]
    return []


def _normalised(cfg: Mapping[str, Any], k: int) -> dict[str, Any]:
    """A stage config with the keys that cannot change a score dropped and the per-task keys normalised."""
    out = {key: v for key, v in cfg.items() if key not in NO_SCORE_KEYS and key not in CONTENT_KEYS}
    out.pop("model", None) if k == 0 else out.update(model=f"stage:{k}")
    if isinstance(out.get("adam_betas"), tuple):
        out["adam_betas"] = list(out["adam_betas"])
    for key, value in list(out.items()):
        if isinstance(value, tuple):
            out[key] = list(value)
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b and type(a) is type(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def config_gaps(ours: Mapping[str, Any], paper: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Every key whose value differs, as "key: ours X, paper Y" (a key one side lacks: "not recorded"). A key configs
    gained later is no gap where one side lacks it and the other holds its neutral value (usebench.train.config.
    LATER_KEYS: a run stored before it existed)."""
    ours, paper = without_neutral_later_keys(ours), without_neutral_later_keys(paper)
    gaps = []
    for key in sorted(set(ours) | set(paper)):
        a, b = ours.get(key, "not recorded"), paper.get(key, "not recorded")
        if not _same(a, b):
            gaps.append(f"{prefix}{key}: ours {_value(a)}, paper {_value(b)}")
    return gaps


def _value(v: Any) -> str:
    return json.dumps(v) if isinstance(v, (list, dict, bool)) or v is None else str(v)


# --- a published row's stages ---------------------------------------------------------------------------------

def chains_of(entry_settings: Mapping[str, Any], method: str) -> list[list[str]]:
    """The stage sequences that are the row's run: ``settings.chains`` where the row is a chain (domain
    adaptation, the upper bound's supervised losses), else the row's method alone."""
    chains = entry_settings.get("chains")
    return [list(c) for c in chains] if chains else [[method]]


def expected_stages(chain: list[str], preset: str, row_method: str, overrides: Mapping[str, Any], task: str,
                    ) -> list[tuple[str, Any]]:
    """(method, resolved config) of each stage of a published row's run on ``task``, derived as the planner
    derives it (usebench/plan/planner.py ``build_stage``): the preset, the row's own values on its method's stage, a
    supervised stage's pooling inherited from where it starts, ``dev_task="target"`` resolved for the task."""
    from usebench.registry import METHODS, TASKS
    from usebench.methods.parts.chain_pooling import supervised_pooling

    out: list[tuple[str, Any]] = []
    previous_pooling: str | None = None  # a published backbone is a plain HF model: it declares no pooling
    for name in chain:
        method = METHODS.get(name)
        values = dict(overrides) if name == row_method else {}
        cfg = method.config(preset, values)
        if method.data_kind == "labeled" and "pooling" not in values:
            pooling = supervised_pooling(name, previous_pooling, cfg.pooling, [])
            if pooling != cfg.pooling:
                values["pooling"] = pooling
                cfg = method.config(preset, values)
        if cfg.dev_task == TARGET:
            has_dev = task in TASKS.names() and "dev" in TASKS.get(task).splits
            values.update({"dev_task": task} if has_dev else {"dev_task": None, "dev_every": 0})
            cfg = method.config(preset, values)
        previous_pooling = method.eval_pooling(cfg)
        out.append((name, cfg))
    return out


# --- the verdict --------------------------------------------------------------------------------------------------

def run_target(record: Mapping[str, Any]) -> str:
    """The task a published row's in-domain data and ``dev_task="target"`` are resolved for: the evaluated task (a
    result on another task than the unit's target is then, rightly, not in-domain)."""
    return str(record["task"]["name"])


def compare_record(record: Mapping[str, Any], entry_settings: Mapping[str, Any], row_method: str,
                   ctx: PairingContext) -> Verdict:
    """A stored result against a published row's settings: every gap, or none (the same setting). The evaluation
    side (split, data) is checked first and for every row, trained or not."""
    from usebench import methods  # noqa: F401  (enrols the plugins: a published row's preset is resolved through its method)
    from usebench import tasks  # noqa: F401  (enrols the adapters: dev_task="target" is resolved with the task's splits)

    split = str(entry_settings.get("split") or DEFAULT_SPLIT)
    eval_gaps, eval_notes = evaluation_gaps(record, split, ctx.data_root)
    verdict = _setting(record, entry_settings, row_method, ctx)
    return Verdict(tuple(eval_gaps) + verdict.gaps, tuple(dict.fromkeys(eval_notes + list(verdict.notes))))


def _setting(record: Mapping[str, Any], entry_settings: Mapping[str, Any], row_method: str,
             ctx: PairingContext) -> Verdict:
    """The model side of :func:`compare_record`: an untrained row's scoring, or each trained stage's."""
    if not entry_settings.get("preset"):
        return _untrained(record, entry_settings)
    stages = record_stages(record)
    if not stages:  # a result written before stage configs were recorded: say all that cannot be checked
        backbone, _ = backbone_gaps(record["method"].get("backbone"), str(entry_settings.get("model")))
        return Verdict(tuple(backbone) + (f"config: ours records no trained stage ({record['method']['name']}), "
                                          f"paper a {row_method} run",))
    ours_chain = [str(s.get("method")) for s in stages]
    chains = chains_of(entry_settings, row_method)
    if ours_chain not in chains:
        return Verdict((f"stages: ours {'>'.join(ours_chain)}, paper {' or '.join('>'.join(c) for c in chains)}",))
    presets = entry_settings["preset"]
    best: Verdict | None = None
    for preset in [presets] if isinstance(presets, str) else list(presets):
        verdict = _against_preset(record, stages, preset, entry_settings, row_method, ctx)
        if verdict.paired:
            return verdict
        best = best if best is not None and len(best.gaps) <= len(verdict.gaps) else verdict
    if best is None:
        raise BenchError(f"paper_reference.json: a row of {row_method} names no preset (expected one or a list)")
    return best


def _against_preset(record: Mapping[str, Any], stages: list[dict[str, Any]], preset: str,
                    entry_settings: Mapping[str, Any], row_method: str, ctx: PairingContext) -> Verdict:
    from usebench.train.config import config_to_dict

    task = run_target(record)
    gaps, notes = backbone_gaps(record["method"].get("backbone"), str(entry_settings.get("model")))
    expected = expected_stages([str(s["method"]) for s in stages], preset, row_method,
                               entry_settings.get("config") or {}, task)
    dev_data = list(record["method"].get("dev_data") or [])
    many = len(stages) > 1
    for k, (stage, (name, cfg)) in enumerate(zip(stages, expected)):
        prefix = f"stage {k + 1} ({name}) " if many else ""
        gaps += config_gaps(_normalised(stage.get("config") or {}, k), _normalised(config_to_dict(cfg), k), prefix)
        g, n = _stage_data_gaps(stage.get("data") or {}, name, cfg, entry_settings, task, ctx, prefix)
        gaps, notes = gaps + g, notes + n
        if getattr(cfg, "dev_every", 0) and getattr(cfg, "dev_task", None):  # a dev task picks the checkpoint
            gaps += dev_gaps(dev_data[k] if k < len(dev_data) else None, str(cfg.dev_task), prefix, ctx.data_root)
    return Verdict(tuple(gaps), tuple(dict.fromkeys(notes)))


def _stage_data_gaps(data: Mapping[str, Any], name: str, cfg: Any, entry_settings: Mapping[str, Any], task: str,
                     ctx: PairingContext, prefix: str) -> tuple[list[str], list[str]]:
    """One stage's training data (and validation sentences) against the published row's, by content."""
    from usebench.registry import METHODS

    if METHODS.get(name).data_kind != "sentences":
        return labeled_gaps(data, name, task, prefix), []
    gaps, notes = corpus_gaps(data, entry_settings.get("train_data"), task, ctx.data_root, ctx.user_samples, prefix)
    if getattr(cfg, "dev_metric", None) == "loss":  # the validation sentences select the checkpoint
        g, n = corpus_gaps({"sha256": data.get("dev_corpus_sha256"), "label": "validation sentences"},
                           entry_settings.get("dev_data", "not stated by the row"), task, ctx.data_root,
                           ctx.user_samples, prefix + "validation ")
        gaps, notes = gaps + g, notes + n
    return gaps, notes


def _untrained(record: Mapping[str, Any], entry_settings: Mapping[str, Any]) -> Verdict:
    """An untrained row (a backbone scored as it is, BM25, word vectors): the model by content, no training, and
    every key of how it was scored (pooling, max length, precision, similarity, prompt)."""
    if record_stages(record):
        return Verdict(("training: ours trained, paper none",))
    model = entry_settings.get("model")
    config = record.get("config") or {}
    if str(record["method"]["name"]) == "bm25" or str(model or "").startswith("bm25"):
        return Verdict(tuple(config_gaps({k: config.get(k, "not recorded") for k in want}, want))) \
            if (want := bm25_setting(str(model or "bm25-elasticsearch"))) else Verdict(("BM25: unknown variant",))
    gaps, notes = backbone_gaps(record["method"].get("backbone"), str(model))
    want = published_untrained(entry_settings, published_positions(str(model)))
    ours = untrained_setting(record)
    gaps += config_gaps({k: ours.get(k, "not recorded") for k in want}, want)
    return Verdict(tuple(gaps), tuple(notes))


def bm25_setting(model: str) -> dict[str, Any] | None:
    """The scoring parameters of a published BM25 row (``bench eval --model <model>``): Elasticsearch's defaults for
    the TSDAE paper's row, Pyserini's for the thesis'; a BM25 row has no backbone."""
    from dataclasses import asdict

    from usebench.eval.bm25 import LUCENE_PRESET, MODEL_NAMES, BM25Scorer

    if model not in MODEL_NAMES:
        return None
    if MODEL_NAMES[model] == LUCENE_PRESET:  # Pyserini's Lucene BM25 defaults (k1 0.9, b 0.4; the thesis' note)
        return {"implementation": "pyserini", "k1": 0.9, "b": 0.4}
    params = asdict(BM25Scorer(MODEL_NAMES[model]).config)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in params.items() if k != "stopwords"}
