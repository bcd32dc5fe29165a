"""An MTEB-conformant model around :class:`~usebench.eval.encoder.HFEncoder` (the `mteb` extra).

``MtebEncoder`` is an ``mteb.models.AbsEncoder`` with a proper ``ModelMeta`` (name, revision = the model's content
hash, cosine similarity as MTEB's ``ScoringFunction``, embedding size, max tokens): the suite hands it to MTEB's
own task classes and evaluators (``usebench/tasks/mteb.py``), and users hand it to plain MTEB::

    import mteb
    from usebench.eval.mteb_model import load_mteb_model
    mteb.evaluate(load_mteb_model("results/<run>/checkpoint"), mteb.get_tasks(tasks=["SciDocsRR"]))

It encodes exactly as ``bench eval`` does (the checkpoint's pooling, max length and prompt; unique texts once,
length-sorted batches), so a number computed through MTEB and one computed by the suite use the same vectors.

Where MTEB files the results: ``results/usebench__<model>/<revision>/`` of its cache, the folder MTEB's own
``ResultCache.load_results()`` reads (``models=["usebench/minilm"]`` selects them). The settings a model was loaded
with are its ``loader_kwargs``; only the settings that differ from what the checkpoint declares (another pooling, max
length or bf16) are MTEB ``experiment_kwargs``, and MTEB files such a run under ``.../experiments/<settings>/``, which
its loader reads when given the model's ``ModelMeta`` (``models=[model.mteb_model_meta]``) or
``load_experiments="match_name"``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from usebench.errors import BenchError
from usebench.eval.encoder import HFEncoder, load_encoder, resolve_settings
from usebench.eval.models import model_fingerprint
from usebench.store.records import model_slug

INSTALL = "pip install -e '.[mteb]'"
try:
    from mteb.models.abs_encoder import AbsEncoder
    from mteb.models.model_meta import ModelMeta, ScoringFunction
except ImportError as e:  # the module is imported only where MTEB is wanted: say what to install
    raise BenchError(f"MTEB tasks and the MTEB model wrapper need the `mteb` extra: {INSTALL} ({e})") from None


def loaded_settings(encoder: HFEncoder) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the settings ``encoder`` encodes with, those of them that differ from what its checkpoint declares).
    Precision is a setting only when it is not fp32, the default, so that an fp32 model's settings read as before."""
    pooling, max_length = resolve_settings(encoder.info, None, None)
    settings: dict[str, Any] = {"pooling": encoder.pooling, "max_length": encoder.max_length}
    if getattr(encoder, "precision", "fp32") != "fp32":
        settings["precision"] = encoder.precision
    declared = {"pooling": pooling, "max_length": max_length}
    return settings, {k: v for k, v in settings.items() if v != declared.get(k)}


def model_meta(encoder: HFEncoder) -> ModelMeta:
    """MTEB's ``ModelMeta`` for ``encoder``: revision = content hash, cosine similarity, embedding size; settings
    other than the checkpoint's own as ``experiment_kwargs`` (the module docstring)."""
    n_parameters = sum(p.numel() for p in encoder.model.parameters())
    settings, changed = loaded_settings(encoder)
    return ModelMeta(
        loader=None, name=f"usebench/{model_slug(encoder.name)}", revision=model_fingerprint(encoder.info),
        release_date=None, languages=None, n_parameters=n_parameters, memory_usage_mb=None,
        max_tokens=encoder.max_length, embed_dim=encoder.dim, license=None, open_weights=True,
        public_training_code=None, public_training_data=None, framework=["PyTorch"],
        reference=None, similarity_fn_name=ScoringFunction.COSINE, use_instructions=False, training_datasets=None,
        loader_kwargs=settings, experiment_kwargs=changed or None,
    )


def _texts(inputs: Any) -> list[str]:
    """The texts of MTEB's DataLoader of ``{"text": [...]}`` batches, in order."""
    texts: list[str] = []
    for batch in inputs:
        if "text" not in batch:
            raise BenchError(f"the usebench MTEB wrapper encodes text only; got a batch with {sorted(batch)}")
        texts.extend(batch["text"])
    return texts


class MtebEncoder(AbsEncoder):
    """An MTEB ``AbsEncoder`` that encodes with a usebench :class:`HFEncoder` (cosine similarity)."""

    def __init__(self, encoder: HFEncoder):
        self.model = encoder
        self.mteb_model_meta = model_meta(encoder)
        # MTEB encodes each side of a pair task (and queries, then documents) in separate calls; texts seen in
        # an earlier call of the same task split are looked up, not encoded again (the model is deterministic).
        self._memo_key: tuple[str, str, str] | None = None
        self._memo: dict[str, np.ndarray] = {}

    def encode(self, inputs: Any, *, task_metadata: Any, hf_split: str, hf_subset: str, prompt_type: Any = None,
               **kwargs: Any) -> np.ndarray:
        """(n, d) float32 embeddings of the inputs' texts; queries and documents alike (no MTEB prompts: the
        suite's encoders are symmetric and instruction-free)."""
        texts = _texts(inputs)
        if not texts:
            return np.zeros((0, self.model.dim), np.float32)
        key = (str(getattr(task_metadata, "name", "")), hf_split, hf_subset)
        if key != self._memo_key:
            self._memo_key, self._memo = key, {}
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if todo:
            self._memo.update(zip(todo, self.model.encode(todo)))
        return np.stack([self._memo[t] for t in texts]).astype(np.float32, copy=False)


def load_mteb_model(model: str, pooling: str | None = None, **kwargs: Any) -> MtebEncoder:
    """The one-liner for plain MTEB: any model ``bench eval`` loads (a usebench checkpoint, a local directory,
    ``minilm``, an HF id) with its own pooling and metadata, as an MTEB model. ``kwargs`` go to :class:`HFEncoder`."""
    return MtebEncoder(load_encoder(model, pooling=pooling, show_progress=False, **kwargs))
