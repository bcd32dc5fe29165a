"""The identity of an in-memory model: what determines its numbers, so that a result is filed (and found again)
under it.

- a ``SentenceTransformer``: its modules (class and config of each, the transformer's own config), its
  ``max_seq_length``, prompts and tokenizer, and a fingerprint of its weights (every tensor's name, dtype, shape
  and bytes). Two objects loaded from one path with another ``max_seq_length`` are two identities; the same
  object after a training step is another one.
- any other model object or function: the ``name`` the caller gives plus an optional ``revision`` (usebench
  cannot see inside a function); an ``nn.Module`` also adds its weights' fingerprint.

The identity goes into the run's config (hence into its run id) and into the embedding cache's key.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

# Keys of a transformers config that name where it came from, not what it computes.
_PROVENANCE_KEYS = frozenset({"_name_or_path", "transformers_version", "_commit_hash", "name_or_path"})


def digest(payload: Any) -> str:
    """sha256 of a JSON-able value (key order does not matter)."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def weights_fingerprint(module: Any) -> str:
    """sha256 over every tensor of ``module.state_dict()``: name, dtype, shape and bytes (on any device)."""
    import torch

    h = hashlib.sha256()
    for key, tensor in sorted(module.state_dict().items()):
        t = tensor.detach()
        h.update(f"{key}|{t.dtype}|{tuple(t.shape)}|".encode())
        if t.numel():  # viewed as bytes: works for every dtype, bf16 included
            h.update(t.cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _module_config(module: Any) -> dict[str, Any]:
    """A sentence-transformers module's class and config, with its transformer's config where it has one."""
    cls = type(module)
    out: dict[str, Any] = {"class": f"{cls.__module__}.{cls.__qualname__}"}
    get = getattr(module, "get_config_dict", None)
    if callable(get):
        out["config"] = get()
    auto = getattr(module, "auto_model", None)
    if auto is not None and hasattr(getattr(auto, "config", None), "to_dict"):
        out["model_config"] = {k: v for k, v in auto.config.to_dict().items() if k not in _PROVENANCE_KEYS}
    for attr in ("max_seq_length", "do_lower_case"):
        if hasattr(module, attr):
            out[attr] = getattr(module, attr)
    return out


def _tokenizer_identity(tokenizer: Any) -> dict[str, Any]:
    """The tokenizer's class, casing and a hash of its vocabulary (what turns a text into ids)."""
    if tokenizer is None:
        return {}
    try:
        vocab = digest(sorted(tokenizer.get_vocab().items()))
    except Exception:  # noqa: BLE001  a tokenizer without a readable vocabulary: its class still counts
        vocab = None
    return {"class": type(tokenizer).__name__, "vocab": vocab,
            "do_lower_case": getattr(tokenizer, "do_lower_case", None)}


def sentence_transformer_identity(model: Any) -> dict[str, Any]:
    """What determines a SentenceTransformer's vectors (see the module docstring); ``hash`` sums it up."""
    parts = {
        "modules": [_module_config(m) for m in getattr(model, "_modules", {}).values()],
        "max_seq_length": getattr(model, "max_seq_length", None),
        "prompts": getattr(model, "prompts", None),
        "default_prompt_name": getattr(model, "default_prompt_name", None),
        "tokenizer": _tokenizer_identity(getattr(model, "tokenizer", None)),
        "weights": weights_fingerprint(model),
    }
    return {"kind": "sentence-transformers", "weights": parts["weights"][:16], "hash": digest(parts)}


def named_identity(model: Any, name: str, revision: str | None) -> dict[str, Any]:
    """A function's or a model object's identity: the caller's name and revision (plus the weights'
    fingerprint of an ``nn.Module``)."""
    import torch

    out: dict[str, Any] = {"kind": "named", "name": name, "revision": revision or ""}
    if isinstance(model, torch.nn.Module):
        out["weights"] = weights_fingerprint(model)[:16]
    out["hash"] = digest(out)
    return out
