"""Checkpoints: the exported encoder (sentence-transformers format + method.json) and the resumable train state.

Export layout (``<run>/checkpoint/``), loadable with ``SentenceTransformer(path)`` and ``bench eval --model path``:

- HF model + tokenizer files at the root (``config.json``, ``model.safetensors``, ``tokenizer.json``...);
- ``modules.json``, ``sentence_bert_config.json`` (``max_seq_length``), ``config_sentence_transformers.json``;
- ``1_Pooling/config.json`` for cls/mean/max; for ``last2avg``/``first_last_avg`` a ``1_WeightedLayerPooling``
  (weights 1 on the averaged layers, 0 elsewhere) followed by ``2_Pooling`` (mean) and
  ``output_hidden_states: true`` in ``config.json``. The legacy ``sentence_transformers.models.*`` class names
  and the flag-style pooling config are used because every sentence-transformers version reads them;
- ``method.json``: method, pooling, max_length, config, config_hash, base_model, versions (+ plugin extras such as
  ``prompt``). :class:`usebench.eval.encoder.HFEncoder` reads pooling, max_length and prompt from it.
- ``README.md``: the model card in sentence-transformers' format (:mod:`usebench.train.model_card`), rewritten with
  the store's results of the checkpoint as they are added.
- the HF ``config.json`` carries the backbone's dropout rates (:func:`restore_dropout`): a method that trains
  with dropout off (CT, ConSERT) must not hand zero rates to the stage that starts from its export.

A plugin whose pooling is not one of these (BERT-flow's ``flow``, DenoSent's ``mask_token``, SimCSE's
``cls_mlp``) hands its own writer to :func:`export_checkpoint` through ``Method.pooling_writer``, so nothing is
registered by importing a plugin; any other pooling is refused before training starts (:func:`builtin_writer`).
The train state (``<run>/train_state/state.pt``) holds the module, optimizer, scheduler, RNG states and the data
position; it is written atomically and only ever replaced, never half-written.
"""
from __future__ import annotations

import json
import os
import pickle
import platform
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from usebench.errors import BenchError, ConfigError
from usebench.store import config_hash, honour_umask, now_iso, write_json_atomic
from usebench.train.model_card import export_card

METHOD_JSON = "method.json"
STATE_FILE = "state.pt"

# writer(out_dir, hf_config) -> the modules.json entries after the Transformer (index 1 onwards), files written.
STWriter = Callable[[Path, Any], list[dict[str, Any]]]


def pooling_entry(out_dir: Path, idx: int, dim: int, mode: str) -> dict[str, Any]:
    """Write ``<idx>_Pooling/config.json`` for token pooling ``mode`` (cls/mean/max); its modules.json entry."""
    folder = f"{idx}_Pooling"
    flags = {"word_embedding_dimension": dim, "pooling_mode_cls_token": mode == "cls",
             "pooling_mode_mean_tokens": mode == "mean", "pooling_mode_max_tokens": mode == "max",
             "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
             "pooling_mode_lasttoken": False, "include_prompt": True}
    write_json_atomic(out_dir / folder / "config.json", flags)
    return {"idx": idx, "name": str(idx), "path": folder, "type": "sentence_transformers.models.Pooling"}


def _token_pooling(mode: str) -> STWriter:
    return lambda out_dir, cfg: [pooling_entry(out_dir, 1, cfg.hidden_size, mode)]


def _layer_average(first: Callable[[int], int]) -> STWriter:
    """Mean over tokens of the average of hidden_states[first(L)] and hidden_states[L] (L = number of layers)."""

    def write(out_dir: Path, cfg: Any) -> list[dict[str, Any]]:
        from safetensors.torch import save_file

        n_layers = int(cfg.num_hidden_layers)
        start = first(n_layers)
        weights = torch.zeros(n_layers + 1 - start)
        weights[0] = weights[-1] = 1.0  # e.g. last2avg: layers L-1 and L; first_last_avg: 0 (embeddings) and L
        folder = out_dir / "1_WeightedLayerPooling"
        write_json_atomic(folder / "config.json", {"word_embedding_dimension": cfg.hidden_size,
                                                   "layer_start": start, "num_hidden_layers": n_layers})
        save_file({"layer_weights": weights}, str(folder / "model.safetensors"))
        entry = {"idx": 1, "name": "1", "path": folder.name,
                 "type": "sentence_transformers.models.WeightedLayerPooling"}
        pool = pooling_entry(out_dir, 2, cfg.hidden_size, "mean")
        return [entry, pool]

    return write


BUILTIN_WRITERS: dict[str, STWriter] = {
    "cls": _token_pooling("cls"), "mean": _token_pooling("mean"), "max": _token_pooling("max"),
    "last2avg": _layer_average(lambda n: n - 1), "first_last_avg": _layer_average(lambda n: 0),
}


def builtin_writer(pooling: str) -> STWriter:
    """The writer of a stateless pooling; a ConfigError (raised before any training) for any other pooling."""
    if pooling not in BUILTIN_WRITERS:
        raise ConfigError(f"pooling {pooling!r} has no sentence-transformers export (built in: "
                          f"{', '.join(BUILTIN_WRITERS)}; a method with its own pooling supplies "
                          f"Method.pooling_writer)")
    return BUILTIN_WRITERS[pooling]


def declare_all_layers(model_dir: Path, modules: list[dict[str, Any]]) -> None:
    """Set ``output_hidden_states: true`` in the HF config when a module reads more than the last layer:
    sentence-transformers passes all layers on only when the config asks for them."""
    if any(m["type"].endswith("WeightedLayerPooling") for m in modules):
        cfg_path = model_dir / "config.json"
        write_json_atomic(cfg_path, {**json.loads(cfg_path.read_text(encoding="utf-8")), "output_hidden_states": True})


def versions() -> dict[str, str]:
    """Library versions recorded with every checkpoint."""
    from importlib.metadata import PackageNotFoundError, version

    from usebench._version import __version__

    out = {"usebench": __version__, "python": platform.python_version(), "torch": torch.__version__}
    for dist in ("transformers", "sentence-transformers"):
        try:  # metadata, not an import: importing sentence-transformers costs seconds
            out[dist.replace("-", "_")] = version(dist)
        except PackageNotFoundError:
            out[dist.replace("-", "_")] = "absent"
    return out


def export_checkpoint(model: nn.Module, tokenizer: Any, out_dir: str | Path, *, method: str, pooling: str,
                      max_length: int, config: dict[str, Any], base_model: str,
                      extra: dict[str, Any] | None = None,
                      write_extra: Callable[[Path], None] | None = None,
                      pooling_writer: STWriter | None = None, dropout_from: str | None = None) -> Path:
    """Write ``model`` + ``tokenizer`` as a sentence-transformers directory with ``method.json``.

    Written into a temporary sibling and renamed into place, so ``out_dir`` is either the old or the new
    checkpoint, never a mix. ``method.json`` goes last: its presence marks a finished export.
    ``pooling_writer`` writes the pooling modules (default: the built-in one of ``pooling``);
    ``write_extra(dir)`` may add files (a plugin's extra weights) before method.json is written.
    ``dropout_from`` (the model training started from) gives the dropout rates the export's config declares.
    """
    pooling_writer = pooling_writer or builtin_writer(pooling)
    out_dir = Path(out_dir)
    tmp = out_dir.with_name(f".{out_dir.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    if dropout_from is not None:
        restore_dropout(tmp, dropout_from)
        extra = {**(extra or {}), "dropout_restored_from": dropout_from}
    tokenizer.save_pretrained(tmp)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}]
    modules += pooling_writer(tmp, model.config)
    declare_all_layers(tmp, modules)
    write_json_atomic(tmp / "modules.json", modules)
    write_json_atomic(tmp / "sentence_bert_config.json", {"max_seq_length": max_length, "do_lower_case": False})
    write_json_atomic(tmp / "config_sentence_transformers.json",
                      {"__version__": versions(), "prompts": {}, "default_prompt_name": None,
                       "similarity_fn_name": "cosine"})
    if write_extra is not None:
        write_extra(tmp)
    meta = {"method": method, "pooling": pooling, "max_length": max_length, "base_model": base_model,
            "config": config, "config_hash": config_hash(config), "versions": versions(), "created_at": now_iso(),
            **(extra or {})}
    export_card(tmp, meta)  # README.md: sentence-transformers' model card (usebench/train/model_card.py)
    write_json_atomic(tmp / METHOD_JSON, meta)
    honour_umask(tmp)  # safetensors writes the weights 0600; a shared results store must let the group read them
    _swap_into_place(tmp, out_dir)
    return out_dir


_DROPOUT_SUFFIXES = ("dropout", "dropout_prob")  # as usebench.train.backbone.zero_dropout_fields


def dropout_rates(config: dict[str, Any]) -> dict[str, float]:
    """The dropout rates of an HF config dict (keys ending in dropout / dropout_prob holding a number)."""
    return {k: v for k, v in config.items()
            if k.endswith(_DROPOUT_SUFFIXES) and isinstance(v, (int, float)) and not isinstance(v, bool)}


def restore_dropout(model_dir: str | Path, base: str) -> None:
    """Write ``base``'s dropout rates into ``model_dir/config.json`` (the keys both configs have): training
    switches (dropout off) stay out of the export, so fine-tuning it later trains with the backbone's dropout."""
    from transformers import AutoConfig

    from usebench.eval.models import resolve_model

    info = resolve_model(base)
    rates = dropout_rates(AutoConfig.from_pretrained(info.path, local_files_only=info.local).to_dict())
    path = Path(model_dir) / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    changed = {k: v for k, v in rates.items() if k in config and config[k] != v}
    if changed:
        write_json_atomic(path, {**config, **changed})


def _swap_into_place(tmp: Path, out_dir: Path) -> None:
    old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
    if out_dir.exists():
        os.replace(out_dir, old)
    os.replace(tmp, out_dir)
    shutil.rmtree(old, ignore_errors=True)


def read_method_json(checkpoint_dir: str | Path) -> dict[str, Any] | None:
    """method.json of a finished export, or None when there is none."""
    path = Path(checkpoint_dir) / METHOD_JSON
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BenchError(f"{path}:{e.lineno}: invalid JSON ({e.msg}); delete the checkpoint and re-run") from None


def finished_checkpoint(checkpoint_dir: str | Path, method: str, cfg_hash: str) -> bool:
    """Whether ``checkpoint_dir`` holds a finished export of ``method`` with this config hash.

    A finished export of *another* method or config is an error naming both, never silently overwritten.
    """
    meta = read_method_json(checkpoint_dir)
    if meta is None:
        return False
    if meta.get("method") != method or meta.get("config_hash") != cfg_hash:
        raise ConfigError(f"{Path(checkpoint_dir) / METHOD_JSON}: holds method {meta.get('method')!r} with config "
                          f"{str(meta.get('config_hash'))[:8]}, not {method!r} with {cfg_hash[:8]}; "
                          f"use another output directory or --force")
    return True


# --- resumable train state --------------------------------------------------------------------------------

def rng_state(device: torch.device | str | None = None) -> dict[str, Any]:
    """Global RNG states: python, numpy, torch's CPU generator, and the generator of the training ``device``
    when it is a GPU (only that one: another launcher or box may resume the run on another GPU index, or with
    fewer GPUs visible)."""
    import random

    import numpy as np

    kind, keys, pos, has_gauss, cached = np.random.get_state()
    # plain ints and tensors only: the state loads with torch.load(weights_only=True), which unpickles no
    # numpy array (nor anything else that could run code)
    state = {"python": random.getstate(), "numpy": [str(kind), [int(k) for k in keys], int(pos), int(has_gauss),
                                                    float(cached)], "torch": torch.get_rng_state()}
    device = torch.device(device) if device is not None else None
    if device is not None and device.type == "cuda":
        state["cuda_device"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict[str, Any], device: torch.device | str | None = None) -> None:
    """Restore what :func:`rng_state` saved, the GPU generator onto the training ``device`` (whatever its index
    now). A state from before (``cuda``: every visible GPU's, by index) gives the device its own index's entry
    when there is one; a state saved on the CPU leaves the GPU generator as seeded."""
    import random

    import numpy as np

    python = state["python"]  # (version, 625 ints, gauss) as saved; a list where a format turned tuples to lists
    random.setstate((python[0], tuple(python[1]), python[2]))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    device = torch.device(device) if device is not None else None
    if device is None or device.type != "cuda":
        return
    if "cuda_device" in state:
        torch.cuda.set_rng_state(state["cuda_device"], device)
    elif isinstance(state.get("cuda"), (list, tuple)) and state["cuda"]:
        old = state["cuda"]
        index = torch.cuda.current_device() if device.index is None else device.index
        torch.cuda.set_rng_state(old[index] if index < len(old) else old[0], device)


def save_train_state(state_dir: str | Path, payload: dict[str, Any]) -> Path:
    """``torch.save`` to a temp file, then rename over ``state.pt``."""
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / STATE_FILE
    tmp = state_dir / f".{STATE_FILE}.tmp-{os.getpid()}"
    torch.save(payload, tmp)
    os.replace(tmp, path)
    return path


def _unpickler_reason(error: Exception) -> str:
    """The line of torch's weights-only error that says what it refused (its message is a page long)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith("WeightsUnpickler error"):
            rest = line.split(":", 1)[1].strip() or (lines[i + 1] if i + 1 < len(lines) else "")
            return rest[:240]
    return (lines[0] if lines else type(error).__name__)[:240]


def load_train_state(state_dir: str | Path, method: str, cfg_hash: str) -> dict[str, Any] | None:
    """The saved train state, None if there is none; a state of another method/config is a ConfigError.

    Loaded with ``weights_only=True``: a results store is shared (a team's cluster filesystem), and a pickle
    placed there must not run code when a unit resumes. The state holds only tensors, numbers, strings and
    containers of them (:func:`rng_state` keeps numpy's state as plain ints), so nothing needs allow-listing;
    anything else (a class, a callable, a numpy array) is refused before it is constructed."""
    path = Path(state_dir) / STATE_FILE
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        why = _unpickler_reason(e)
        if "global" not in why.lower():  # not a pickle the restricted unpickler refused: a disk or a copy failed
            raise BenchError(f"{path}: unreadable train state ({why}); delete it to restart training") from None
        # the restricted unpickler met a global (a class, a function) it will not import or call
        raise BenchError(f"{path}: refused to load this train state: it holds objects other than tensors and plain "
                         f"data, which could run code when loaded ({why}); a state written by "
                         f"this version never does, so the file was written by something else (or an older version "
                         f"of the suite): delete it to restart the stage's training") from None
    except (OSError, RuntimeError, EOFError, ValueError) as e:  # disks fail
        raise BenchError(f"{path}: unreadable train state ({e}); delete it to restart training") from None
    if not isinstance(state, dict):
        raise BenchError(f"{path}: not a train state (a {type(state).__name__}, expected a dict); delete it to "
                         f"restart training")
    if state.get("method") != method or state.get("config_hash") != cfg_hash:
        raise ConfigError(f"{path}: train state of method {state.get('method')!r} (config "
                          f"{str(state.get('config_hash'))[:8]}), not {method!r} ({cfg_hash[:8]}); "
                          f"delete it or use another output directory")
    return state
